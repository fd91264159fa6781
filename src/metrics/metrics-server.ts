import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { registry } from './metrics';

/**
 * METRICS_ADDRESS: /metrics on a listener of its own, without a token, for a scraper on a
 * private network (bind it to an address only that network reaches). A standalone worker has no
 * API, so this is how its metrics are read.
 */
export async function startMetricsServer(address: string, logger: Logger): Promise<{ url: string; close(): Promise<void> }> {
  const { host, port } = parseAddress(address);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(text),
      (err: unknown) => {
        logger.warn({ err: (err as Error).message }, 'metrics could not be collected');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics could not be collected\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${bound.port}/metrics`;
  logger.info({ url }, 'metrics listening');
  return {
    url,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** `host:port` (or `[v6]:port`), as METRICS_ADDRESS is validated. */
export function parseAddress(address: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(address);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (host === undefined || port > 65535) throw new Error(`not a host:port address: ${address}`);
  return { host, port };
}
