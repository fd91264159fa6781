import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SAMPLE_MP4 } from '../../simulator/assets';

/** A character clip (a real MP4) served after `delayMs`: a create that makes a character then takes that long at least. */
export async function slowClipServer(delayMs: number): Promise<{ base: string; close: () => void }> {
  const server = http.createServer((_req, res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'video/mp4' });
      res.end(SAMPLE_MP4);
    }, delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}
