/**
 * A task run with tracing on, the way the gateway wires it (telemetry/temporal-tracing.ts): the
 * API's client interceptor on TaskService, the traced workflow bundle, the activity interceptors
 * and the workflow span sink, on a local dev server with scripted activities. Its history is the
 * `traced-completed` replay fixture (RECORD_HISTORIES=1 saves it; replay.test.ts replays it
 * against both bundles, so tracing can be turned off with traced tasks in flight).
 */
import { context, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { Resource } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { Worker } from '@temporalio/worker';
import { tracedWorkflowBundlePath } from '../../src/config/paths';
import { TaskService } from '../../src/tasks/task-service';
import type { TaskState } from '../../src/tasks/task';
import { tracedWorkerOptions, tracingClientInterceptors } from '../../src/telemetry/temporal-tracing';
import { environmentPerFile, fakeActivities, recordHistories, recordingViewSinks, taskRequest } from './harness';

const environment = environmentPerFile();
const exporter = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor(exporter);
const provider = new NodeTracerProvider({ spanProcessors: [processor] });

beforeAll(() => provider.register({ propagator: new W3CTraceContextPropagator() }));
afterAll(() => provider.shutdown());

const named = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);

test('one trace runs from the start through the workflow, its activities and their steps', async () => {
  const env = environment();
  const { activities } = fakeActivities();
  const taskQueue = `wf-traced-${Date.now()}`;
  const traced = tracedWorkerOptions({ processor, resource: new Resource({ 'service.name': 'worker-under-test' }) });
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { codePath: tracedWorkflowBundlePath() },
    activities,
    maxHeartbeatThrottleInterval: '1s',
    ...traced,
    // As the gateway's worker: the tracing's sink beside the task views' (worker.ts).
    sinks: { ...traced.sinks, ...recordingViewSinks() },
  });
  const tasks = new TaskService(
    env.connection,
    { namespace: 'default', taskQueue, rpcTimeoutMs: 5000, firstTryMaxWaitMs: null, interceptors: tracingClientInterceptors() },
    null,
  );
  const request = taskRequest();
  // The API request's span, as request-spans.ts makes it: the start runs inside it.
  const requestSpan = trace.getTracer('test').startSpan('POST /v1/video/create');
  const { final, runId } = await worker.runUntil(async () => {
    await context.with(trace.setSpan(context.active(), requestSpan), () => tasks.start(request));
    requestSpan.end();
    const handle = env.client.workflow.getHandle(request.taskId);
    return { final: (await handle.result()) as TaskState, runId: (await handle.describe()).runId };
  });
  expect(final.status).toBe('completed');
  await recordHistories(env, 'traced-completed', request.taskId, runId);

  const traceId = requestSpan.spanContext().traceId;
  const spans = exporter.getFinishedSpans();
  const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
  const names = new Set(inTrace.map((s) => s.name));
  for (const name of [
    'StartWorkflow:videoTaskWorkflowV3',
    'RunWorkflow:videoTaskWorkflowV3',
    'StartActivity:claimCharge',
    'RunActivity:claimCharge',
    'RunActivity:planChannel',
    'RunActivity:submitVideo',
    'RunActivity:watchVideoJob',
  ]) {
    expect(names).toContain(name);
  }
  // The chain of parents: request -> StartWorkflow -> RunWorkflow -> StartActivity -> RunActivity.
  const start = named(inTrace, 'StartWorkflow:videoTaskWorkflowV3')[0]!;
  const run = named(inTrace, 'RunWorkflow:videoTaskWorkflowV3')[0]!;
  const startSubmit = named(inTrace, 'StartActivity:submitVideo')[0]!;
  const runSubmit = named(inTrace, 'RunActivity:submitVideo')[0]!;
  expect(start.parentSpanId).toBe(requestSpan.spanContext().spanId);
  expect(run.parentSpanId).toBe(start.spanContext().spanId);
  expect(startSubmit.parentSpanId).toBe(run.spanContext().spanId);
  expect(runSubmit.parentSpanId).toBe(startSubmit.spanContext().spanId);
  // Workflow spans leave the sandbox through the sink, with the worker's resource and which run
  // they belong to, but nothing the run holds (its memo has the prompt, its search attributes the owner).
  expect(run.resource.attributes['service.name']).toBe('worker-under-test');
  for (const span of inTrace.filter((s) => /^(RunWorkflow|StartActivity):/.test(s.name))) {
    expect(Object.keys(span.attributes).sort()).toEqual(['attempt', 'namespace', 'runId', 'taskQueue', 'workflowId', 'workflowType']);
  }
  // Every span of the run is in the request's trace: none started a trace of its own.
  expect(spans.filter((s) => /Workflow|Activity/.test(s.name) && s.spanContext().traceId !== traceId).map((s) => s.name)).toEqual([]);
}, 60_000);
