import fs from 'node:fs';

/** The first `length` bytes of a file (fewer when it is shorter), for sniffing its type before reading it whole. */
export async function readHead(file: string, length: number): Promise<Buffer> {
  const handle = await fs.promises.open(file, 'r');
  try {
    const buf = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buf, 0, length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
