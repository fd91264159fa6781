import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { readHead } from './read-head';
import { untilClosed } from './until-closed';

/**
 * Gateway storage for finished videos and uploaded inputs: a local directory by default
 * (shared by API and worker through a volume when they run apart). Writes go to a
 * temporary name and are renamed into place, so a reader never sees half a file and a
 * retried download simply replaces it. The file is fsynced before the rename and its
 * directory after it, so a file once published (and the task completed on it) survives a
 * power loss: without the first, a crash could publish a name with no data behind it;
 * without the second, the name itself could vanish.
 */
export class BlobStore {
  constructor(readonly root: string) {
    fs.mkdirSync(root, { recursive: true });
  }

  private resolve(key: string): string {
    if (!/^[A-Za-z0-9._%-]+(\/[A-Za-z0-9._%-]+)*$/.test(key) || key.split('/').some((p) => p === '..' || p === '.')) {
      throw new Error(`invalid storage key`);
    }
    return path.join(this.root, key);
  }

  async write(key: string, source: Readable | Buffer, opts: { maxBytes?: number; onProgress?: (bytes: number) => void } = {}): Promise<number> {
    const maxBytes = opts.maxBytes ?? Number.POSITIVE_INFINITY;
    const onProgress = opts.onProgress;
    const file = this.resolve(key);
    const dir = path.resolve(path.dirname(file));
    const firstCreated = await fs.promises.mkdir(dir, { recursive: true });
    const tmp = `${file}.part-${randomBytes(6).toString('hex')}`;
    let bytes = 0;
    const input = Buffer.isBuffer(source) ? Readable.from([source]) : source;
    const out = fs.createWriteStream(tmp, { flags: 'wx' });
    try {
      await pipeline(
        input,
        async function* count(chunks: AsyncIterable<Buffer>) {
          for await (const chunk of chunks) {
            bytes += chunk.length;
            if (bytes > maxBytes) throw new Error(`content exceeds ${maxBytes} bytes`);
            onProgress?.(bytes);
            yield chunk;
          }
        },
        out,
      );
      // fsync(2) flushes the file, whichever descriptor wrote it.
      await syncPath(tmp);
      await fs.promises.rename(tmp, file);
    } catch (err) {
      await untilClosed(out);
      await fs.promises.rm(tmp, { force: true });
      throw err;
    }
    // The new name, and any directory made for it, in the directories that hold them.
    await syncPath(dir);
    if (firstCreated !== undefined) {
      const top = path.dirname(path.resolve(firstCreated));
      for (let d = dir; d !== top && path.dirname(d) !== d; d = path.dirname(d)) await syncPath(path.dirname(d));
    }
    return bytes;
  }

  async remove(key: string): Promise<void> {
    await fs.promises.rm(this.resolve(key), { force: true });
  }

  /** Removes every file under `prefix` (a folder of keys), and the folder; nothing there is fine. */
  async removeAll(prefix: string): Promise<void> {
    await fs.promises.rm(this.resolve(prefix), { recursive: true, force: true });
  }

  async read(key: string): Promise<Buffer> {
    return fs.promises.readFile(this.resolve(key));
  }

  async size(key: string): Promise<number | null> {
    try {
      return (await fs.promises.stat(this.resolve(key))).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  /** Reads [start, end] inclusive. */
  stream(key: string, start?: number, end?: number): fs.ReadStream {
    return fs.createReadStream(this.resolve(key), { start, end });
  }

  head(key: string, length: number): Promise<Buffer> {
    return readHead(this.resolve(key), length);
  }
}

/** fsync(2) of a file or a directory. */
async function syncPath(p: string): Promise<void> {
  const handle = await fs.promises.open(p, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** `vidgen3:123-abc` -> `vidgen3/123-abc`: readable, and safe in file names and URLs. */
function taskPath(taskId: string): string {
  return taskId.replace(':', '/');
}

export const storageKeys = {
  video: (taskId: string) => `videos/${taskPath(taskId)}.mp4`,
  input: (taskId: string, index: number, ext: string) => `${storageKeys.inputs(taskId)}/${index}.${ext}`,
  /** The folder of every input stored for the task. */
  inputs: (taskId: string) => `inputs/${taskPath(taskId)}`,
};
