/**
 * The local journal of text settlements (src/billing/settlement-journal.ts): what an answer
 * waits for instead of the store. Its files hold each entry until the store has it, and
 * another process finds the entries of owners that are gone, never its own or a live one's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { SettlementJournal } from '../../src/billing/settlement-journal';
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
  fs.writeFileSync(path.join(folder.dir, 'gw_dead-2.jsonl'), '{"a":3}\n{"a":');
  fs.writeFileSync(path.join(folder.dir, 'gw_dead-1.jsonl'), '{"a":1}\n{"a":2}\n');
  fs.writeFileSync(path.join(folder.dir, 'gw_live-1.jsonl'), '{"live":1}\n');
  const me = new SettlementJournal(folder.dir, 'gw_me');
  await me.append('{"mine":1}');
  const orphans = await me.orphans(async () => new Set(['gw_live']));
  expect(orphans.lines).toEqual(['{"a":1}', '{"a":2}', '{"a":3}'].map((line) => ({ owner: 'gw_dead', line })));
  orphans.remove();
  expect(fs.readdirSync(folder.dir).sort()).toEqual(['gw_live-1.jsonl', 'gw_me-1.jsonl']);
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
