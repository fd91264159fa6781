/**
 * The Temporal Web UI tour (`npm run screenshot:temporal-ui`, bench/temporal-ui/) on `npm
 * start`'s process, in headless chromium: what the rendered pages show, and the PNGs it writes.
 * Needs chromium (`node scripts/setup.mjs --browser`, which `npm test` runs, installs Debian's
 * package when it can); without it the tour fails at once, saying how to install it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { SHOTS, VIEWPORT, type Shot } from '../../bench/temporal-ui/capture';
import { findChromium } from '../../bench/temporal-ui/chromium';
import { startEmbeddedGateway, type EmbeddedGateway } from '../../bench/temporal-ui/embedded-gateway';
import { runTemporalUiTour, type TourResult } from '../../bench/temporal-ui/tour';
import { escapeRegExp } from '../../src/system/regexp';
import { TEST_DATA } from '../support/processes';

const outDir = path.join(TEST_DATA, 'temporal-ui-shots');
let gateway: EmbeddedGateway | undefined;
let tour: TourResult;

beforeAll(async () => {
  findChromium(); // no browser: fail here with the install hint, before starting anything
  fs.rmSync(outDir, { recursive: true, force: true });
  gateway = await startEmbeddedGateway(path.join(TEST_DATA, 'temporal-ui'));
  tour = await runTemporalUiTour({ apiUrl: gateway.apiUrl, adminToken: gateway.adminToken, uiUrl: gateway.uiUrl, namespace: 'default', outDir });
}, 300_000);

afterAll(async () => {
  await gateway?.stop();
}, 60_000);

/** `GatewayOwner = "key_…"` as the filter chip shows a query (spaces around the operator). */
const filterChip = (attribute: string, value: string) => new RegExp(`${attribute}\\s*=\\s*"${escapeRegExp(value)}"`);

test("the list filtered by owner shows the filter and that owner's tasks, and not another key's task", () => {
  const { scenario, shots } = tour;
  const page = shots.ownerFilter;
  expect(decodeURIComponent(page.url)).toContain(`query=GatewayOwner="${scenario.owner.id}"`);
  expect(page.text).toMatch(filterChip('GatewayOwner', scenario.owner.id));
  expect(page.text).toMatch(/\b4\s+Workflows\b/);
  const owners = [scenario.completed, scenario.failed, scenario.running, scenario.retrying];
  expect(page.rows).toHaveLength(4);
  for (const id of owners) expect(page.rows.filter((row) => row.includes(id))).toHaveLength(1);
  for (const row of page.rows) expect(row).toContain(scenario.owner.id);
  expect(page.text).not.toContain(scenario.otherOwnersTask);
  expect(page.text).not.toContain(scenario.otherOwner.id);
  // The search attributes as columns: each task's gateway status and model.
  expect(page.text).toMatch(/GatewayStatus[\s\S]*GatewayModel/);
  expect(page.rows.find((row) => row.includes(scenario.failed))).toMatch(/\bfailed\s+motion-2\b/);
  expect(page.rows.find((row) => row.includes(scenario.completed))).toMatch(/\bcompleted\s+vidgen3\b/);
});

test('a task found by its id: one row, that task', () => {
  const { scenario, shots } = tour;
  const page = shots.taskById;
  expect(page.text).toMatch(filterChip('WorkflowId', scenario.completed));
  expect(page.text).toMatch(/\b1\s+Workflow\b/);
  expect(page.rows).toHaveLength(1);
  expect(page.rows[0]).toContain(scenario.completed);
  for (const other of [scenario.failed, scenario.running, scenario.retrying, scenario.otherOwnersTask]) expect(page.text).not.toContain(other);
});

test("the failed task's page shows why it failed, and its history the steps with the retried submit", () => {
  const { scenario, shots } = tour;
  expect(shots.failedTask.text).toContain(scenario.failed);
  expect(shots.failedTask.text).toContain('"upstream_failed"');
  expect(shots.failedTask.text).toMatch(/Video generation failed/);
  const history = shots.failedTaskHistory.text;
  expect(history).toMatch(/claimCharge[\s\S]*planChannel[\s\S]*submitVideo\s+Attempt\s+3[\s\S]*watchVideoJob[\s\S]*settleTask/);
});

test("the running task's pending activity shows its progress from the heartbeat", () => {
  const { scenario, shots } = tour;
  const page = shots.runningTask;
  expect(page.text).toContain(scenario.running);
  expect(page.text).toContain('watchVideoJob');
  expect(page.text).toMatch(/Heartbeat Details[\s\S]*"status":\s*"processing"[\s\S]*"progress":\s*[1-9]\d*/);
});

test("a step being retried shows its attempt, the last attempt's failure and the next retry", () => {
  const { scenario, shots } = tour;
  const page = shots.retryingTask;
  expect(page.text).toContain(scenario.retrying);
  expect(page.text).toMatch(/submitVideo[\s\S]*Attempt\s+([2-9]|\d{2,})\b/);
  expect(page.text).toMatch(/Next Retry/);
  // A 5xx answer to a submit: the provider surely took no job (src/providers/submit-outcome.ts).
  expect(page.text).toMatch(/Last Failure[\s\S]*HTTP 50[03][\s\S]*"type":\s*"SubmitNotAccepted"/);
});

test('each page was written as a valid PNG of the viewport size', () => {
  const written: Shot[] = Object.values(tour.shots);
  expect(written.map((s) => path.basename(s.file)).sort()).toEqual(Object.values(SHOTS).sort());
  for (const shot of written) {
    const png = fs.readFileSync(shot.file);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(png.toString('latin1', 12, 16)).toBe('IHDR');
    expect({ file: path.basename(shot.file), width: png.readUInt32BE(16), height: png.readUInt32BE(20) }).toEqual({
      file: path.basename(shot.file),
      ...VIEWPORT,
    });
    expect(png.toString('latin1', png.length - 8, png.length - 4)).toBe('IEND');
    // A blank or half-drawn page compresses to a few KiB; a rendered one is tens of KiB.
    expect(png.length).toBeGreaterThan(30_000);
    expect(png.length).toBeLessThan(1_500_000);
  }
});
