/**
 * Replays saved histories of every workflow shape against the shipped bundle: a change to
 * workflow code that would break tasks in flight (a command added, removed or reordered
 * without `patched()`) fails here. The fixtures are histories of real runs recorded by the
 * workflow tests (`RECORD_HISTORIES=1 npm run test:workflow`); they are kept, never
 * re-recorded to make a change pass: a new shape adds files, an old one stays as long as
 * runs of it may be in flight anywhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { workflowBundlePath } from '../../src/config/paths';
import { HISTORIES_DIR, quietRuntime } from './harness';

/** Every shape a task or character run can take; each must have a saved history. */
const SHAPES = [
  'video-completed',
  'video-remix',
  'video-failed',
  'video-rejected',
  'video-charge-refunded',
  'video-deadline',
  'video-continue-as-new',
  'video-continue-as-new.run2',
  'watched-completed',
  'watched-remix',
  'watched-failed',
  'watched-rejected',
  'watched-charge-refunded',
  'watched-deadline',
  'watched-40-polls',
  'watched-cancelled',
  'watched-cancelled-submit',
  'watched-cancelled-unclaimed',
  'character-completed',
  'character-failed',
];

const files = fs.existsSync(HISTORIES_DIR)
  ? fs
      .readdirSync(HISTORIES_DIR)
      .filter((f) => f.endsWith('.json'))
      .sort()
  : [];

test('a saved history exists for every workflow shape', () => {
  expect(files.map((f) => f.replace(/\.json$/, ''))).toEqual(expect.arrayContaining(SHAPES));
});

test('every saved history replays against the shipped workflow bundle without nondeterminism', async () => {
  quietRuntime();
  const histories = files.map((file) => ({
    workflowId: file.replace(/\.json$/, ''),
    history: JSON.parse(fs.readFileSync(path.join(HISTORIES_DIR, file), 'utf8')) as unknown,
  }));
  const replayed: string[] = [];
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: workflowBundlePath() } }, histories)) {
    replayed.push(result.workflowId);
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  expect(failures).toEqual([]);
  // Both sorted as ids: files sort by name, where `a-b.json` comes before `a.json`.
  expect(replayed.sort()).toEqual(histories.map((h) => h.workflowId).sort());
}, 60_000);
