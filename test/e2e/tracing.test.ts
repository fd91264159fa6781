/**
 * OpenTelemetry tracing through the real stack (docs/operations.md, "Tracing"). A gateway (API
 * and standalone worker) exports to a real OTLP/HTTP receiver: a video task created with the
 * caller's `traceparent` is one trace from the API request through the workflow start, the
 * workflow, its activities and their upstream calls; a text request's trace holds one upstream
 * span per channel attempt (a failover shows as two); no span holds the key, the prompt or a
 * query string. A second gateway with tracing off (the API unset, the worker disabled with
 * OTEL_SDK_DISABLED despite an endpoint) does the same work, exports nothing, and never loads
 * OpenTelemetry's SDK, exporter or interceptors, nor the gateway's code that uses them (read from
 * each process's require.cache by a preloaded probe).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { channelsYaml } from '../support/channels-file';
import { call, waitForTerminal, type TaskView } from '../support/client';
import { startOtlpReceiver, SPAN_KIND, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { waitFor } from '../support/ports';
import { ROOT } from '../support/processes';
import { e2eEnv, startGateway } from '../support/stack';

const SONNET = 'cm-sonnet-4.5'; // dead-native (priority 10, nothing listens) -> live-native
const VIDEO = 'vidgen3';
const PROBE = path.join(ROOT, 'dist/test/support/loaded-modules.js');
/**
 * OpenTelemetry's SDK, exporter and Temporal's interceptors, and the gateway's modules that use
 * them. Not @opentelemetry/api: prom-client (the metrics) loads that in every process, tracing
 * or not; on its own it is a no-op facade.
 */
const OTEL_MODULE =
  /[\\/](@opentelemetry[\\/](?!api[\\/])|@temporalio[\\/]interceptors-opentelemetry[\\/]|telemetry[\\/](tracer-provider|upstream-tracer|temporal-tracing)\.js$|middleware[\\/]request-spans\.js$)/;

function channelsFile(sim: string): string {
  return channelsYaml([
    // Port 1 is never served here: the attempt on it fails to connect, and the request fails over.
    { name: 'dead-native', type: 'anthropic-native', baseUrl: 'http://127.0.0.1:1', models: [SONNET], priority: 10 },
    { name: 'live-native', type: 'anthropic-native', baseUrl: sim, models: [SONNET], priority: 0 },
    { name: 'veo', type: 'gemini-veo', baseUrl: sim, models: { [VIDEO]: 'veo-3.0-generate-001' }, priority: 0 },
  ]);
}

/** What one gateway run did: the key, the marker its prompts carried, the task, the processes' loaded modules. */
interface Run {
  key: string;
  marker: string;
  task: TaskView;
  /** The signed link the video was downloaded through (its query string holds the signature). */
  videoUrl: string;
  apiModules: string[];
  workerModules: string[];
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * Starts a gateway with `env` (API) and `workerEnv`, creates a video task with `traceparent`,
 * runs it to completion, downloads its file, sends a message, and stops the gateway.
 */
async function runGateway(env: Record<string, string>, workerEnv: Record<string, string>, traceparent: string): Promise<Run> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tracing-'));
  const channels = path.join(tmp, 'channels.yaml');
  fs.writeFileSync(channels, channelsFile(e2eEnv().simulatorUrl));
  const apiModulesFile = path.join(tmp, 'api-modules.json');
  const workerModulesFile = path.join(tmp, 'worker-modules.json');
  const gw = await startGateway({
    env: { CHANNELS_FILE: channels, NODE_OPTIONS: `--require ${PROBE}`, LOADED_MODULES_FILE: apiModulesFile, ...env },
    workerEnv: { LOADED_MODULES_FILE: workerModulesFile, ...workerEnv },
  });
  let done: Omit<Run, 'apiModules' | 'workerModules'>;
  try {
    const key = await gw.issueKey('tracing');
    const marker = `marker${hex(6)}`;
    const created = await call<TaskView>(`${gw.url}/v1/video/create`, {
      key,
      json: { model: VIDEO, prompt: `a lighthouse at dusk ${marker}` },
      headers: { traceparent },
    });
    expect(created.status).toBe(200);
    const { final } = await waitForTerminal(gw.url, key, created.body.id, 90_000);
    expect(final.status).toBe('completed');
    const link = new URL(final.video_url!);
    expect(link.search).toMatch(/sig/);
    const videoUrl = `${gw.url}${link.pathname}${link.search}`;
    expect((await fetch(videoUrl)).status).toBe(200);

    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
    const answer = await anthropic.messages.create({ model: SONNET, max_tokens: 16, messages: [{ role: 'user', content: `hello ${marker}` }] });
    expect(answer.content.length).toBeGreaterThan(0);
    done = { key, marker, task: final, videoUrl };
  } finally {
    // SIGTERM: each process exports what it still holds before it exits.
    await gw.stop();
  }
  const read = (file: string) => (fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as string[]) : []);
  const modules = { apiModules: read(apiModulesFile), workerModules: read(workerModulesFile) };
  fs.rmSync(tmp, { recursive: true, force: true });
  return { ...done, ...modules };
}

describe('tracing on', () => {
  let receiver: OtlpReceiver;
  let run: Run;
  const traceId = hex(16);
  const callerSpanId = hex(8);
  let spans: ReceivedSpan[];

  const inTrace = (id: string) => spans.filter((s) => s.traceId === id);
  const one = (list: ReceivedSpan[], name: string): ReceivedSpan => {
    const found = list.filter((s) => s.name === name);
    if (found.length === 0) throw new Error(`no span ${name} among ${list.map((s) => s.name).join(', ')}`);
    return found[0]!;
  };

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '200' };
    run = await runGateway(otel, otel, `00-${traceId}-${callerSpanId}-01`);
    // The workflow's span ends with the workflow, a moment after the task reads completed.
    await waitFor('the workflow span', async () => receiver.spans.some((s) => s.traceId === traceId && s.name === 'RunWorkflow:videoTaskWorkflowV3'), 20_000);
    spans = receiver.spans;
  }, 240_000);

  afterAll(async () => {
    await receiver?.close();
  });

  test("the API request is a server span, a child of the caller's traceparent", () => {
    const request = one(inTrace(traceId), 'POST /v1/video/create');
    expect(request).toMatchObject({
      service: 'durable-model-gateway-api',
      kind: SPAN_KIND.SERVER,
      parentSpanId: callerSpanId,
      attributes: { 'http.request.method': 'POST', 'http.route': '/v1/video/create', 'http.response.status_code': 200 },
    });
    // Status reads are named by their route pattern, not their path or query.
    const reads = spans.filter((s) => s.attributes['http.route'] === '/v1/video/query');
    expect(reads.length).toBeGreaterThan(0);
    expect(new Set(reads.map((s) => s.name))).toEqual(new Set(['GET /v1/video/query']));
  });

  test('one trace covers the workflow start, the workflow, its activities and their upstream calls', () => {
    const trace = inTrace(traceId);
    const request = one(trace, 'POST /v1/video/create');
    const start = one(trace, 'StartWorkflow:videoTaskWorkflowV3');
    const workflow = one(trace, 'RunWorkflow:videoTaskWorkflowV3');
    expect(start).toMatchObject({ service: 'durable-model-gateway-api', parentSpanId: request.spanId });
    expect(workflow).toMatchObject({ service: 'durable-model-gateway-worker', parentSpanId: start.spanId });

    const submit = one(trace, 'RunActivity:submitVideo');
    const watch = one(trace, 'RunActivity:watchVideoJob');
    for (const activity of [submit, watch]) {
      expect(activity.service).toBe('durable-model-gateway-worker');
      // RunActivity <- StartActivity <- RunWorkflow.
      const scheduled = trace.find((s) => s.spanId === activity.parentSpanId);
      expect(scheduled?.name).toBe(activity.name.replace('RunActivity', 'StartActivity'));
      expect(scheduled?.parentSpanId).toBe(workflow.spanId);
    }

    const upstream = trace.filter((s) => s.kind === SPAN_KIND.CLIENT);
    const operations = new Set(upstream.map((s) => s.attributes['gateway.upstream.operation']));
    expect(operations).toEqual(new Set(['veo submit', 'veo poll', 'veo download']));
    for (const s of upstream) {
      expect(s).toMatchObject({ service: 'durable-model-gateway-worker', attributes: { 'gateway.channel': 'veo', 'gateway.upstream.kind': 'video' } });
      expect([200, 302]).toContain(s.attributes['http.response.status_code']);
    }
    expect(one(upstream, 'POST veo').parentSpanId).toBe(submit.spanId);
    expect(upstream.filter((s) => s.attributes['gateway.upstream.operation'] === 'veo poll').every((s) => s.parentSpanId === watch.spanId)).toBe(true);
  });

  test("a text request's trace has one upstream span per channel attempt: the failover shows", () => {
    const request = spans.find((s) => s.kind === SPAN_KIND.SERVER && s.attributes['http.route'] === '/v1/messages');
    expect(request).toMatchObject({ name: 'POST /v1/messages', parentSpanId: '', attributes: { 'http.response.status_code': 200 } });
    const attempts = inTrace(request!.traceId).filter((s) => s.kind === SPAN_KIND.CLIENT);
    expect(attempts.map((s) => s.attributes['gateway.channel']).sort()).toEqual(['dead-native', 'live-native']);
    const dead = one(attempts, 'POST dead-native');
    const live = one(attempts, 'POST live-native');
    expect(dead).toMatchObject({ parentSpanId: request!.spanId, statusCode: 2, attributes: { 'error.type': 'ECONNREFUSED', 'gateway.upstream.kind': 'text' } });
    expect(live).toMatchObject({ parentSpanId: request!.spanId, attributes: { 'http.response.status_code': 200 } });
    expect(live.attributes['error.type']).toBeUndefined();
  });

  test('no span holds the key, the prompt or a query string', () => {
    expect(spans.length).toBeGreaterThan(20);
    // Anywhere in a span as it was exported: attributes of any shape, events, status.
    const leaks = spans
      .filter((s) => [run.key, run.marker, '?', 'sig=', 'alt=media'].some((secret) => s.raw.includes(secret)))
      .map((s) => `${s.name}: ${s.raw}`);
    expect(leaks).toEqual([]);
    // The download (whose URL carries ?alt=media, then a signed redirect) is recorded by origin and path.
    const downloads = spans.filter((s) => s.attributes['gateway.upstream.operation'] === 'veo download');
    expect(downloads.length).toBeGreaterThanOrEqual(2);
    for (const d of downloads) expect(String(d.attributes['url.full'])).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/[^?]*$/);
    // The signed link the client fetched is a server span of the file route, without its signature.
    expect(spans.some((s) => s.kind === SPAN_KIND.SERVER && String(s.attributes['http.route']).startsWith('/files/'))).toBe(true);
  });

  test('the processes did load OpenTelemetry (the module probe sees what the tracing-off test checks for)', () => {
    const loaded = (modules: string[]) => modules.filter((m) => OTEL_MODULE.test(m));
    expect(loaded(run.apiModules)).toEqual(
      expect.arrayContaining([expect.stringMatching(/@opentelemetry[\\/]sdk-trace-base[\\/]/), expect.stringMatching(/request-spans\.js$/)]),
    );
    expect(loaded(run.workerModules)).toEqual(
      expect.arrayContaining([expect.stringMatching(/interceptors-opentelemetry[\\/]/), expect.stringMatching(/temporal-tracing\.js$/)]),
    );
  });
});

describe('tracing off', () => {
  let receiver: OtlpReceiver;
  let run: Run;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    // The API: nothing set. The worker: an endpoint, but the SDK disabled.
    run = await runGateway({}, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: 'true' }, `00-${hex(16)}-${hex(8)}-01`);
  }, 240_000);

  afterAll(async () => {
    await receiver?.close();
  });

  test('nothing is exported, and neither process loads the OpenTelemetry SDK or the tracing code', () => {
    expect(run.task.status).toBe('completed');
    expect(receiver.requests).toBe(0);
    // The probe read both processes (their own code is there)...
    expect(run.apiModules.some((m) => m.endsWith(path.join('dist', 'src', 'api', 'server.js')))).toBe(true);
    expect(run.workerModules.some((m) => m.endsWith(path.join('dist', 'src', 'worker.js')))).toBe(true);
    // ...and found no OpenTelemetry code in either.
    expect(run.apiModules.filter((m) => OTEL_MODULE.test(m))).toEqual([]);
    expect(run.workerModules.filter((m) => OTEL_MODULE.test(m))).toEqual([]);
  });
});
