import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { launchChromium } from './chromium';
import type { UiScenario } from './scenario';
import { waitForListing, type ListedWorkflow } from './visibility';

/** The pages of the tour, one PNG each (docs/temporal-ui.md shows them). */
export const SHOTS = {
  ownerFilter: 'owner-filter.png',
  taskById: 'task-by-id.png',
  failedTask: 'failed-task.png',
  failedTaskHistory: 'failed-task-history.png',
  runningTask: 'running-task.png',
  retryingTask: 'retrying-task.png',
} as const;
export type ShotName = keyof typeof SHOTS;

export interface Shot {
  file: string;
  url: string;
  /** The page's visible text when the picture was taken (what the test checks). */
  text: string;
  /** A list page's rows, as text. */
  rows: string[];
}

export interface CaptureOptions {
  uiUrl: string;
  namespace: string;
  scenario: UiScenario;
  outDir: string;
  chromiumPath: string;
  log?: (line: string) => void;
}

export const VIEWPORT = { width: 1280, height: 800 };

/** How long a page may take to show what it is waited for (the UI loads its data after the page). */
const RENDER_TIMEOUT_MS = 30_000;

/**
 * The list's columns: the gateway's search attributes next to the workflow id, as an operator
 * adds them once with the table's column settings (the UI keeps them in the browser's storage).
 */
const LIST_COLUMNS = ['Status', 'Workflow ID', 'GatewayStatus', 'GatewayModel', 'GatewayOwner', 'Start'];

export const ownerQuery = (ownerId: string) => `GatewayOwner="${ownerId}"`;
export const idQuery = (taskId: string) => `WorkflowId="${taskId}"`;

/** Opens the Temporal Web UI on the scenario's tasks in headless chromium and writes the PNGs. */
export async function captureTemporalUi(opts: CaptureOptions): Promise<Record<ShotName, Shot>> {
  const { scenario, uiUrl, namespace } = opts;
  const log = opts.log ?? (() => undefined);
  const ns = encodeURIComponent(namespace);
  const listUrl = (query: string) => `${uiUrl}/namespaces/${ns}/workflows?query=${encodeURIComponent(query)}`;
  const runUrl = (w: ListedWorkflow, tab: string) => `${uiUrl}/namespaces/${ns}/workflows/${encodeURIComponent(w.workflowId)}/${w.runId}/${tab}`;

  // The other owner's task must be indexed too, or its absence from the owner's list proves nothing.
  await waitForListing(uiUrl, namespace, idQuery(scenario.otherOwnersTask), { [scenario.otherOwnersTask]: 'completed' });
  // The running task's GatewayStatus stays `pending` while its job runs (the workflow publishes
  // its status when a step ends; progress lives in the watching step's heartbeats).
  const listed = await waitForListing(uiUrl, namespace, ownerQuery(scenario.owner.id), {
    [scenario.completed]: 'completed',
    [scenario.failed]: 'failed',
    [scenario.running]: null,
    [scenario.retrying]: null,
  });
  const byId = (id: string) => listed.find((w) => w.workflowId === id)!;

  fs.mkdirSync(opts.outDir, { recursive: true });
  const browser = await launchChromium(opts.chromiumPath);
  try {
    const context = await browser.newContext({ viewport: VIEWPORT, timezoneId: 'UTC', locale: 'en-US', colorScheme: 'light' });
    context.setDefaultTimeout(RENDER_TIMEOUT_MS);
    const columns = JSON.stringify({ [namespace]: LIST_COLUMNS.map((label) => ({ label })) });
    await context.addInitScript({ content: `window.localStorage.setItem('namespace-workflow-table-columns', ${JSON.stringify(columns)});` });
    const page = await context.newPage();
    const shots = {} as Record<ShotName, Shot>;
    const take = async (name: ShotName) => {
      await page.mouse.move(VIEWPORT.width - 1, VIEWPORT.height - 1); // no hover tooltip in the picture
      const file = path.join(opts.outDir, SHOTS[name]);
      await page.screenshot({ path: file });
      const rows = await page.getByTestId('workflows-summary-configurable-table-row').allInnerTexts();
      shots[name] = { file, url: page.url(), text: await page.innerText('body'), rows };
      log(`${SHOTS[name]}: ${page.url()}`);
    };

    // (a) The owner's tasks: the list filtered by GatewayOwner.
    await page.goto(listUrl(ownerQuery(scenario.owner.id)));
    await waitForRows(page, [scenario.completed, scenario.failed, scenario.running, scenario.retrying]);
    await take('ownerFilter');

    // (b) One task found by its id.
    await page.goto(listUrl(idQuery(scenario.completed)));
    await waitForRows(page, [scenario.completed]);
    await take('taskById');

    // (c) The failed task: its result names the reason; (d) its history, step by step.
    await page.goto(runUrl(byId(scenario.failed), 'history'));
    const reason = page.getByTestId('input-and-result').locator('.cm-line', { hasText: '"upstream_failed"' });
    await reason.waitFor();
    // Scrolls the result's own box (not the page) so that the error is in sight.
    await reason.evaluate((line: CodeLine) => {
      const scroller = line.closest('.cm-scroller');
      if (scroller) scroller.scrollTop = Math.max(0, line.offsetTop - 60);
    });
    await take('failedTask');

    await page.getByTestId('compact').click();
    await page.getByTestId('zoom-in').click(); // oldest step first: the story reads top down
    const watchStep = page.getByTestId('event-summary-row').filter({ hasText: 'watchVideoJob' });
    await watchStep.waitFor();
    await until('the oldest step first', async () => {
      const rows = await page.getByTestId('event-summary-row').allInnerTexts();
      const first = rows.findIndex((t) => t.includes('claimCharge'));
      return first >= 0 && first < rows.findIndex((t) => t.includes('settleTask'));
    });
    await page.getByRole('heading', { name: 'Event History' }).evaluate((heading: Scrollable) => heading.scrollIntoView({ block: 'start' }));
    await take('failedTaskHistory');

    // (e) The running task: the watching step's heartbeat carries its progress.
    await page.goto(runUrl(byId(scenario.running), 'pending-activities'));
    await page.getByText('Heartbeat Details', { exact: true }).waitFor();
    await page.locator('.cm-line', { hasText: '"progress"' }).first().waitFor();
    await take('runningTask');

    // (f) A step being retried: its attempt, the last failure and the next retry.
    await page.goto(runUrl(byId(scenario.retrying), 'pending-activities'));
    await page.getByText('Last Failure', { exact: true }).waitFor();
    await page.getByText('Next Retry', { exact: true }).waitFor();
    await take('retryingTask');

    return shots;
  } finally {
    await browser.close();
  }
}

/** Waits until the list shows exactly these workflow ids (the UI fetches the rows after the page loads). */
async function waitForRows(page: Page, ids: string[]): Promise<void> {
  const rows = page.getByTestId('workflows-summary-configurable-table-row');
  for (const id of ids) await rows.filter({ hasText: id }).first().waitFor();
  await until(`${ids.length} rows`, async () => (await rows.count()) === ids.length);
}

/** Polls `check` until it holds; the pages' own waits cover everything but counts and order. */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + RENDER_TIMEOUT_MS;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`the Temporal UI page did not show ${what} within ${RENDER_TIMEOUT_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The browser-side elements the page callbacks touch (this project compiles without the DOM's types). */
interface CodeLine {
  offsetTop: number;
  closest(selector: string): { scrollTop: number } | null;
}
interface Scrollable {
  scrollIntoView(options: { block: 'start' | 'center' | 'end' }): void;
}
