/**
 * The blob store publishes a file atomically and durably: the bytes are fsynced under a
 * temporary name, renamed into place, and the directories that gained an entry are fsynced;
 * a failed write publishes nothing and leaves no temporary file behind.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { BlobStore } from '../../src/files/blob-store';

let root: string;
let store: BlobStore;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-blobs-'));
  store = new BlobStore(root);
});
afterEach(() => {
  jest.restoreAllMocks();
  fs.rmSync(root, { recursive: true, force: true });
});

/** Every file under root, relative to it. */
function files(): string[] {
  return (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(root, f)).isFile()).sort();
}

/** A stream that yields `chunks`, then fails. */
function failingAfter(chunks: Buffer[]): Readable {
  return Readable.from(
    (async function* () {
      for (const c of chunks) yield c;
      throw new Error('the upstream connection dropped');
    })(),
  );
}

test('a write publishes the complete file under its key, and nothing else', async () => {
  const body = Buffer.alloc(3 * 1024 * 1024 + 7, 0x5a);
  const seen: number[] = [];
  const n = await store.write('videos/vidgen3/1-a.mp4', Readable.from([body.subarray(0, 1000), body.subarray(1000)]), { onProgress: (b) => seen.push(b) });
  expect(n).toBe(body.length);
  expect(seen.at(-1)).toBe(body.length);
  expect((await store.read('videos/vidgen3/1-a.mp4')).equals(body)).toBe(true);
  expect(files()).toEqual([path.join('videos', 'vidgen3', '1-a.mp4')]);
});

test('a write that fails midway publishes nothing, keeps the earlier file and leaves no partial file', async () => {
  await store.write('inputs/t/0.png', Buffer.from('first version'));
  await expect(store.write('inputs/t/0.png', failingAfter([Buffer.alloc(64 * 1024, 1), Buffer.alloc(64 * 1024, 2)]))).rejects.toThrow(/dropped/);
  expect((await store.read('inputs/t/0.png')).toString()).toBe('first version');
  await expect(store.write('inputs/t/1.png', failingAfter([Buffer.alloc(10, 1)]))).rejects.toThrow(/dropped/);
  await expect(store.write('inputs/t/2.png', Buffer.alloc(101), { maxBytes: 100 })).rejects.toThrow(/exceeds 100 bytes/);
  expect(await store.size('inputs/t/1.png')).toBeNull();
  expect(files()).toEqual([path.join('inputs', 't', '0.png')]);
});

test('the bytes are fsynced before the rename that publishes them, the directories after it', async () => {
  const events: string[] = [];
  const probe = await fs.promises.open(root, 'r');
  const fileHandle = Object.getPrototypeOf(probe) as { sync(this: fs.promises.FileHandle): Promise<void> };
  await probe.close();
  const realSync = fileHandle.sync;
  jest.spyOn(fileHandle, 'sync').mockImplementation(async function (this: fs.promises.FileHandle) {
    events.push(`sync ${path.relative(root, fs.readlinkSync(`/proc/self/fd/${this.fd}`)) || '.'}`);
    return realSync.call(this);
  });
  const realRename = fs.promises.rename;
  jest.spyOn(fs.promises, 'rename').mockImplementation(async (from, to) => {
    events.push(`rename ${path.relative(root, String(to))}`);
    return realRename(from, to);
  });

  await store.write('videos/motion-2/9-b.mp4', Buffer.from('video bytes'));
  expect(events).toEqual([
    expect.stringMatching(/^sync videos\/motion-2\/9-b\.mp4\.part-[0-9a-f]{12}$/),
    'rename videos/motion-2/9-b.mp4',
    // the file's directory, then each directory made for it in its parent
    'sync videos/motion-2',
    'sync videos',
    'sync .',
  ]);
  events.length = 0;
  await store.write('videos/motion-2/9-c.mp4', Buffer.from('more'));
  expect(events).toEqual([expect.stringMatching(/^sync videos\/motion-2\/9-c\.mp4\.part-/), 'rename videos/motion-2/9-c.mp4', 'sync videos/motion-2']);
});

test("removeAll removes a task's folder of inputs and nothing beside it; an absent folder is fine", async () => {
  await store.write('inputs/vidgen3/1-a/0.png', Buffer.from('a'));
  await store.write('inputs/vidgen3/1-a/1.png', Buffer.from('b'));
  await store.write('inputs/vidgen3/1-ab/0.png', Buffer.from('c'));
  await store.removeAll('inputs/vidgen3/1-a');
  expect(files()).toEqual([path.join('inputs', 'vidgen3', '1-ab', '0.png')]);
  await store.removeAll('inputs/vidgen3/1-a');
  await expect(store.removeAll('inputs/../..')).rejects.toThrow('invalid storage key');
});
