/**
 * The local journal of text settlements (src/billing/settlement-journal.ts): what an answer
 * waits for instead of the store. Its files hold each entry until the store has it, and
 * another process finds the entries of owners that are gone, never its own or a live one's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { completeLines, SettlementJournal } from '../../src/billing/settlement-journal';
import { journalFolder } from '../support/journal-folder';

const folder = journalFolder('journal-');

test('an entry is on disk when its append resolves, and appends made together share the file in order', async () => {
  const journal = new SettlementJournal(folder.dir, 'gw_me');
  await Promise.all(Array.from({ length: 50 }, (_, i) => journal.append(`{"n":${i}}`)));
  expect(folder.lines()).toEqual(Array.from({ length: 50 }, (_, i) => `{"n":${i}}`));
  await journal.close();
});

test('a closed file whose entries are all committed is deleted; one with an entry outstanding stays', async () => {
  const journal = new SettlementJournal(folder.dir, 'gw_me');
  const first = await journal.append('{"a":1}');
  const second = await journal.append('{"a":2}');
  journal.committed([first]);
  await journal.close();
  // One outstanding: the file (and its lines) stay for the next start.
  expect(folder.lines()).toEqual(['{"a":1}', '{"a":2}']);
  journal.committed([second]);
  expect(folder.lines()).toEqual([]);
});

test('the entries of owners that are gone are found, oldest file first and without a torn last line, and removed once written', async () => {
  // A file made ahead: its last line torn, then the zeros it was made with; and one never written to.
  fs.writeFileSync(path.join(folder.dir, 'gw_dead-2.jsonl'), Buffer.concat([Buffer.from('{"a":3}\n{"a":'), Buffer.alloc(4096)]));
  fs.writeFileSync(path.join(folder.dir, 'gw_dead-3.jsonl'), Buffer.alloc(4096));
  fs.writeFileSync(path.join(folder.dir, 'gw_dead-1.jsonl'), '{"a":1}\n{"a":2}\n');
  fs.writeFileSync(path.join(folder.dir, 'gw_live-1.jsonl'), '{"live":1}\n');
  const me = new SettlementJournal(folder.dir, 'gw_me');
  await me.append('{"mine":1}');
  const orphans = await me.orphans(async () => new Set(['gw_live']));
  expect(orphans.lines).toEqual(['{"a":1}', '{"a":2}', '{"a":3}'].map((line) => ({ owner: 'gw_dead', line })));
  orphans.remove();
  // The dead owner's files are gone; the live one's and this process's stay (its spare among them).
  expect(
    fs
      .readdirSync(folder.dir)
      .filter((f) => !f.startsWith('gw_me-'))
      .sort(),
  ).toEqual(['gw_live-1.jsonl']);
  expect(folder.lines()).toEqual(['{"live":1}', '{"mine":1}']);
  await me.close();
});

test('with no other owner in the folder, nobody is asked which processes are alive', async () => {
  const me = new SettlementJournal(folder.dir, 'gw_me');
  await me.append('{"mine":1}');
  let asked = 0;
  const live = async () => {
    asked++;
    return new Set<string>();
  };
  expect((await me.orphans(live)).lines).toEqual([]);
  expect(asked).toBe(0);
  await me.close();
});

test("a recorded line is in its file at once; a line committed after another stays until the other's file is gone", async () => {
  const journal = new SettlementJournal(folder.dir, 'gw_me');
  const hold = journal.record('{"hold":1}');
  const other = journal.record('{"hold":2}');
  // A synchronous write: in the file before any sync.
  expect(folder.lines()).toEqual(['{"hold":1}', '{"hold":2}']);
  await journal.close();
  const settlement = await journal.append('{"settled":1}');
  journal.committedAfter(settlement, hold);
  journal.committed([hold]);
  await journal.close();
  // The hold's file stays for its other line, and so does the settlement's, committed as it is.
  expect(folder.lines()).toEqual(['{"hold":1}', '{"hold":2}', '{"settled":1}']);
  journal.committed([other]);
  expect(folder.lines()).toEqual([]);
});

test('a file is made ahead, zero-filled: lines written to it overwrite its zeros and leave its length as it was', async () => {
  const journal = new SettlementJournal(folder.dir, 'gw_me');
  // The first file is made when it is needed; the next one is made meanwhile, ahead of need.
  await journal.append('{"n":1}');
  const spare = path.join(folder.dir, 'gw_me-2.jsonl');
  await waitUntil(() => fs.existsSync(spare) && fs.statSync(spare).size === 64 * 1024);
  expect(folder.lines()).toEqual(['{"n":1}']);
  // A file is used for a second at most: the next append goes to the spare.
  await new Promise((r) => setTimeout(r, 1100));
  await journal.append('{"n":2}');
  journal.record('{"n":3}');
  await journal.append('{"n":4}');
  expect(fs.statSync(spare).size).toBe(64 * 1024);
  expect(completeLines(fs.readFileSync(spare, 'utf8'))).toEqual(['{"n":2}', '{"n":3}', '{"n":4}']);
  expect(folder.lines()).toEqual(['{"n":1}', '{"n":2}', '{"n":3}', '{"n":4}']);
  await journal.close();
  // The spare made after it is removed on close; the written files stay until committed.
  expect(fs.readdirSync(folder.dir).sort()).toEqual(['gw_me-1.jsonl', 'gw_me-2.jsonl']);
});

test('files that fill within their second are followed by longer ones', async () => {
  const journal = new SettlementJournal(folder.dir, 'gw_me');
  const line = (i: number) => JSON.stringify({ n: i, pad: 'x'.repeat(1000) });
  // About 1 MiB in well under a second, in groups as a busy process appends them.
  for (let i = 0; i < 1000; i += 20) await Promise.all(Array.from({ length: 20 }, (_, j) => journal.append(line(i + j))));
  expect(folder.lines()).toEqual(Array.from({ length: 1000 }, (_, i) => line(i)));
  // A later file was made ahead with more than the first spare's 64 KiB of zeros (some left unwritten).
  const madeLonger = fs.readdirSync(folder.dir).filter((f) => {
    const bytes = fs.readFileSync(path.join(folder.dir, f));
    return bytes.length >= 128 * 1024 && bytes[bytes.length - 1] === 0;
  });
  expect(madeLonger.length).toBeGreaterThan(0);
  await journal.close();
});

test("a file's lines end at its first NUL byte and at its last newline", () => {
  expect(completeLines('{"a":1}\n{"a":2}\n')).toEqual(['{"a":1}', '{"a":2}']);
  expect(completeLines('{"a":1}\n{"a":')).toEqual(['{"a":1}']);
  expect(completeLines('{"a":1}\n{"a":2}\n\0\0\0')).toEqual(['{"a":1}', '{"a":2}']);
  // Torn by a power loss: what follows a hole of zeros was never synced, and is not read.
  expect(completeLines('{"a":1}\n{"a"\0\0\0:2}\n{"a":3}\n')).toEqual(['{"a":1}']);
  expect(completeLines('\0\0\0\0')).toEqual([]);
  expect(completeLines('')).toEqual([]);
});

describe('an append waits for its sync at most syncWaitMs', () => {
  /** Every fdatasync takes `ms` and then ends with `err` (the disk now and then stalls; or fails). */
  function slowDisk(ms: number, err: NodeJS.ErrnoException | null = null): void {
    const real = fs.fdatasync;
    const slow = (fd: number, done: (e: NodeJS.ErrnoException | null) => void): void => {
      setTimeout(() => (err ? done(err) : real(fd, done)), ms);
    };
    jest.spyOn(fs, 'fdatasync').mockImplementation(slow as unknown as typeof fs.fdatasync);
  }
  afterEach(() => jest.restoreAllMocks());

  test('a sync slower than the wait ends the append when the wait is over, with its line written', async () => {
    const journal = new SettlementJournal(folder.dir, 'gw_me', { syncWaitMs: 30 });
    await journal.append('{"n":1}');
    slowDisk(400);
    const started = Date.now();
    await Promise.all([journal.append('{"n":2}'), journal.append('{"n":3}')]);
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(25);
    expect(waited).toBeLessThan(400);
    expect(folder.lines()).toEqual(['{"n":1}', '{"n":2}', '{"n":3}']);
    await journal.close();
  });

  test('appends made while a sync runs are written together when it ends, and share the next sync', async () => {
    const journal = new SettlementJournal(folder.dir, 'gw_me', { syncWaitMs: 5000 });
    await journal.append('{"n":0}');
    // The next file is made ahead in the background, with a sync of its own: made before the count.
    const spare = path.join(folder.dir, 'gw_me-2.jsonl');
    await waitUntil(() => fs.existsSync(spare) && fs.statSync(spare).size === 64 * 1024);
    await new Promise((r) => setTimeout(r, 20));
    slowDisk(100);
    const synced = fs.fdatasync as unknown as { mock: { calls: unknown[] } };
    const first = journal.append('{"n":1}');
    await new Promise((r) => setTimeout(r, 20));
    const syncsBefore = synced.mock.calls.length;
    const written = jest.spyOn(fs, 'writeSync');
    // The sync of n:1 runs: these wait for it, unwritten, then go out in one write and one sync.
    await Promise.all([first, ...Array.from({ length: 20 }, (_, i) => journal.append(`{"n":${i + 2}}`))]);
    expect(written).toHaveBeenCalledTimes(1);
    expect(synced.mock.calls.length - syncsBefore).toBe(1);
    expect(folder.lines()).toEqual(Array.from({ length: 22 }, (_, i) => `{"n":${i}}`));
    jest.restoreAllMocks();
    await journal.close();
  });

  test('an append whose wait ends while the sync before it runs is written before it is let go', async () => {
    const journal = new SettlementJournal(folder.dir, 'gw_me', { syncWaitMs: 30 });
    await journal.append('{"n":0}');
    slowDisk(400);
    void journal.append('{"n":1}');
    const started = Date.now();
    await journal.append('{"n":2}');
    expect(Date.now() - started).toBeLessThan(300);
    // Let go at its deadline, with its line in the file (the page cache), not yet synced.
    expect(folder.lines()).toEqual(['{"n":0}', '{"n":1}', '{"n":2}']);
    jest.restoreAllMocks();
    await journal.close();
  });

  test('without a limit, the append ends with its sync', async () => {
    const journal = new SettlementJournal(folder.dir, 'gw_me');
    await journal.append('{"n":1}');
    slowDisk(300);
    const started = Date.now();
    await journal.append('{"n":2}');
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    await journal.close();
  });

  test('a sync that fails within the wait fails the append; after it, the append has ended already', async () => {
    const fails = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
    const journal = new SettlementJournal(folder.dir, 'gw_me', { syncWaitMs: 200 });
    await journal.append('{"n":1}');
    slowDisk(10, fails);
    await expect(journal.append('{"n":2}')).rejects.toThrow('EIO');
    jest.restoreAllMocks();
    const late = new SettlementJournal(folder.dir, 'gw_late', { syncWaitMs: 20 });
    await late.append('{"n":1}');
    slowDisk(300, fails);
    await expect(late.append('{"n":2}')).resolves.toBeDefined();
    jest.restoreAllMocks();
    await journal.close();
    await late.close();
  });

  test('with no wait, an append ends at once and its line reaches the disk within 50 ms', async () => {
    const journal = new SettlementJournal(folder.dir, 'gw_me', { syncWaitMs: 0 });
    await journal.append('{"n":1}');
    const synced = jest.spyOn(fs, 'fdatasync');
    await journal.append('{"n":2}');
    expect(synced).not.toHaveBeenCalled();
    await new Promise((r) => setTimeout(r, 120));
    expect(synced).toHaveBeenCalled();
    await journal.close();
  });
});

async function waitUntil(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(ok()).toBe(true);
}
