/**
 * Property-based fuzzing of the real API (issue 17, "Show it"): generated hostile JSON bodies,
 * headers, paths and multipart forms, sent byte for byte to every endpoint with a valid key, a
 * wrong key and none. Every request must be answered, within a deadline, with a status below
 * 500; afterwards the API's and the worker's logs must hold none of the secrets used and none
 * of the prompts.
 *
 * Fixed seed, short by default (part of `npm test`). Longer: FUZZ_RUNS=2000 (batches per
 * property); another sequence: FUZZ_SEED=<n>. `npm run test:fuzz` runs this file alone.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { call, createTask, waitForTerminal } from '../support/client';
import {
  buildHeaderRequest,
  buildJsonRequest,
  buildMultipartRequest,
  buildPathRequest,
  ENDPOINTS,
  headerRequests,
  jsonRequests,
  multipartRequests,
  pathRequests,
  PROMPT_MARK,
  WRONG_KEY,
  type FuzzContext,
  type FuzzRequest,
} from '../support/fuzz-requests';
import { TEST_DATA } from '../support/processes';
import { buildRequest, rawRequest } from '../support/raw-http';
import { ADMIN_TOKEN, startGateway, type Gateway } from '../support/stack';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const SEED = Number(process.env.FUZZ_SEED ?? 20_251_123);
/** Longest wait for a status line: far beyond any answer of this stack, well short of the test's timeout. */
const DEADLINE_MS = 20_000;
const JSON_LIMIT = 1024 * 1024;

let gw: Gateway;
let port: number;
let ctx: FuzzContext;
const sent: Record<number | string, number> = {};
const failures: string[] = [];

beforeAll(async () => {
  gw = await startGateway({ env: { MAX_JSON_BODY_BYTES: String(JSON_LIMIT), FETCH_MAX_BYTES: String(512 * 1024), LOG_LEVEL: 'debug' } });
  port = Number(new URL(gw.url).port);
  const key = await gw.issueKey('fuzz');
  const spare = await gw.issueKeyWithId('spare', { quota: 1000 });
  // A finished task, for the routes that read, remix or serve one.
  const task = await createTask(gw.url, key, { model: 'motion-2', prompt: `${PROMPT_MARK} the task the fuzzer reads`, images: [] });
  const { final } = await waitForTerminal(gw.url, key, task.id);
  expect(final.status).toBe('completed');
  const link = new URL(final.video_url!);
  ctx = { key, adminToken: ADMIN_TOKEN, taskId: task.id, spareKeyId: spare.id, fileTarget: `${link.pathname}${link.search}` };
  secrets.push(key, spare.key);
  expect((await call(`${gw.url}${ctx.fileTarget}`)).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await gw?.stop();
}, 120_000);

const secrets: string[] = [ADMIN_TOKEN, WRONG_KEY];

/** Sends one generated request; records a failure (5xx, no answer, hang) instead of throwing, so one run lists them all. */
async function check(req: FuzzRequest): Promise<boolean> {
  const bytes = buildRequest(req.method, req.target, [...req.headers, ['Connection', 'close']], req.body);
  const res = await rawRequest(port, bytes, { deadlineMs: DEADLINE_MS, bodyGraceMs: 200 });
  const outcome = res.timedOut ? 'hang' : (res.status ?? 'no answer');
  sent[outcome] = (sent[outcome] ?? 0) + 1;
  let problem: string | null = null;
  if (res.timedOut) problem = `no status line within ${DEADLINE_MS} ms`;
  else if (res.status === null) problem = `connection closed without an answer (${res.error ?? 'closed'})`;
  else if (res.status >= 500) problem = `${res.status} ${res.body.toString('utf8').slice(0, 300)}`;
  if (problem) failures.push(`${problem}\n    request: ${req.label}`);
  return true;
}

/**
 * Runs a property over batches of 1 to 3 generated requests sent at once (some faults only show
 * under concurrency), then fails with every failing request of the run.
 */
async function fuzz<T>(arb: fc.Arbitrary<T>, build: (d: T) => FuzzRequest): Promise<void> {
  failures.length = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(arb, { minLength: 1, maxLength: 3 }), async (batch) => {
      await Promise.all(batch.map((d) => check(build(d))));
      return true;
    }),
    { seed: SEED, numRuns: RUNS },
  );
  const unique = [...new Set(failures)];
  if (unique.length > 0) throw new Error(`${unique.length} request(s) failed (seed ${SEED}):\n  ${unique.slice(0, 30).join('\n  ')}`);
}

test('the suite covers every endpoint', () => {
  const routes = ENDPOINTS.map((e) => `${e.method} ${e.path.split('?')[0]}`);
  for (const route of [
    'GET /healthz',
    'GET {file}',
    'POST /admin/keys',
    'GET /admin/keys',
    'GET /admin/keys/{key}',
    'PATCH /admin/keys/{key}',
    'POST /admin/keys/{key}/quota',
    'GET /admin/keys/{key}/ledger',
    'GET /admin/keys/{key}/usage',
    'GET /admin/audit',
    'GET /admin/channels',
    'GET /admin/tasks',
    'POST /v1/messages',
    'GET /v1/models',
    'GET /v1/models/gpt-4o-mini',
    'POST /v1/video/create',
    'GET /v1/video/query',
    'POST /v1/videos',
    'GET /v1/videos/{task}',
    'GET /v1/videos/{task}/content',
    'POST /v1/videos/{task}/remix',
    'POST /v1/chat/completions',
    'POST /v1/responses',
    'GET /v1/responses/resp_nobody',
    'GET /v1/billing',
    'GET /v1/billing/ledger',
    'GET /v1/billing/spend',
    'GET /v1/billing/usage',
    'GET /v1/videos/{task}/timeline',
    'GET /motion/v1/characters',
    'POST /motion/v1/characters',
    'GET /motion/v1/characters/char_nobody',
  ])
    expect(routes).toContain(route);
});

test('hostile JSON bodies: no 5xx, no hang', async () => {
  await fuzz(jsonRequests, (d) => buildJsonRequest(d, ctx, JSON_LIMIT));
}, 600_000);

test('hostile headers: no 5xx, no hang', async () => {
  await fuzz(headerRequests, (d) => buildHeaderRequest(d, ctx));
}, 600_000);

test('hostile paths and query strings: no 5xx, no hang', async () => {
  await fuzz(pathRequests, (d) => buildPathRequest(d, ctx));
}, 600_000);

test('hostile multipart forms: no 5xx, no hang', async () => {
  await fuzz(multipartRequests, (d) => buildMultipartRequest(d, ctx));
}, 600_000);

test("the API still serves, and its and the worker's logs hold no secret and no prompt", async () => {
  expect((await call(`${gw.url}/v1/models`, { key: ctx.key })).status).toBe(200);
  // Stopped first, so everything is written.
  await gw.stop();
  const name = path.basename(gw.dataDir);
  const logs = fs.readdirSync(TEST_DATA).filter((f) => f.startsWith(`${name}-`) && f.endsWith('.log'));
  expect(logs.some((f) => f.endsWith('-api.log'))).toBe(true);
  expect(logs.some((f) => f.includes('-worker-'))).toBe(true);
  for (const file of logs) {
    const text = fs.readFileSync(path.join(TEST_DATA, file), 'utf8');
    // A client that left mid-request is its own failure, not an unhandled one.
    if (file.endsWith('-api.log') && text.includes('unhandled error')) {
      throw new Error(`${file} logs an unhandled error: ${text.slice(text.indexOf('unhandled error') - 400, text.indexOf('unhandled error') + 50)}`);
    }
    for (const secret of [...secrets, PROMPT_MARK]) {
      if (text.includes(secret))
        throw new Error(
          `${file} contains ${secret === PROMPT_MARK ? 'a prompt' : 'a secret'}: ${text.slice(Math.max(0, text.indexOf(secret) - 200), text.indexOf(secret) + 100)}`,
        );
    }
  }
  // What was answered, for the record.
  console.log(`fuzz: seed ${SEED}, ${RUNS} runs per property; answers by status: ${JSON.stringify(sent)}`);
}, 60_000);
