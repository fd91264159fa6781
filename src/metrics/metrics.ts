/**
 * Every Prometheus metric the gateway exports, in one registry per process (docs/operations.md,
 * "Metrics", lists them; docs/grafana-dashboard.json charts them). The API and the worker record
 * into the same registry, so `npm start` (both in one process) serves them all at /metrics, and
 * a standalone worker serves its own at METRICS_ADDRESS.
 *
 * Labels are bounded sets (route patterns, channel names, models, status codes, reason codes):
 * never a key id, task id or anything a client chose freely, so a client cannot grow the series
 * without bound.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
// Process CPU and memory, GC, and the event loop's lag (nodejs_eventloop_lag_*).
collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });

/** Seconds: from a millisecond for the quick answers up to the minute a long text answer takes. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds the gateway adds to a proxied answer: finer at the low end, where it should stay. */
const ADDED_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
/** Seconds from an upstream job's end to its file stored and its charge settled. */
const LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export const metrics = {
  httpRequests: new Counter({
    name: 'gateway_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern, status and key class (limited, unlimited, admin, none).',
    labelNames: ['method', 'route', 'status', 'key_class'] as const,
    registers: [registry],
  }),
  httpDuration: new Histogram({
    name: 'gateway_http_request_duration_seconds',
    help: 'Time from a request arriving to its answer beginning (a stream: its first byte), by method, route pattern and status class.',
    labelNames: ['method', 'route', 'status_class'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  stalledReaders: new Counter({
    name: 'gateway_http_stalled_readers_total',
    help: 'Connections closed because their client read nothing of a waiting answer for HTTP_SEND_STALL_MS.',
    registers: [registry],
  }),
  textAdded: new Histogram({
    name: 'gateway_text_added_latency_seconds',
    help: 'Time a proxied text answer spent in the gateway rather than waiting on the upstream (to its first byte when streamed), by endpoint and streaming.',
    labelNames: ['endpoint', 'stream'] as const,
    buckets: ADDED_BUCKETS,
    registers: [registry],
  }),
  streamFirstByte: new Histogram({
    name: 'gateway_stream_first_byte_seconds',
    help: "Time from a streamed request arriving to its stream's first byte, by endpoint (messages, chat, video_chat).",
    labelNames: ['endpoint'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  upstreamRequests: new Counter({
    name: 'gateway_upstream_requests_total',
    help: 'Requests sent to upstream providers, by channel, kind (text, video) and status (an HTTP status, or network when no answer came).',
    labelNames: ['channel', 'kind', 'status'] as const,
    registers: [registry],
  }),
  failovers: new Counter({
    name: 'gateway_text_failovers_total',
    help: 'Text requests moved on from a channel that failed before anything reached the client, by that channel and reason (429, 5xx, auth, network, empty_stream).',
    labelNames: ['channel', 'reason'] as const,
    registers: [registry],
  }),
  cooldowns: new Counter({
    name: 'gateway_channel_cooldowns_total',
    help: 'Times a text channel was sent to rest after CHANNEL_FAILURE_THRESHOLD failures in a row, by channel.',
    labelNames: ['channel'] as const,
    registers: [registry],
  }),
  tasksCreated: new Counter({
    name: 'gateway_tasks_created_total',
    help: 'Paid tasks accepted (charged), by kind (video, character, response) and model.',
    labelNames: ['kind', 'model'] as const,
    registers: [registry],
  }),
  workflowStarts: new Counter({
    name: 'gateway_workflow_starts_total',
    help: 'Runs of paid tasks started on Temporal (video tasks, background responses), by eager (true: the first workflow task went straight to the worker in this process).',
    labelNames: ['eager'] as const,
    registers: [registry],
  }),
  tasksFinished: new Counter({
    name: 'gateway_tasks_finished_total',
    help: 'Paid tasks settled, by kind, model, outcome (completed, failed) and reason (the failure code; none when completed).',
    labelNames: ['kind', 'model', 'outcome', 'reason'] as const,
    registers: [registry],
  }),
  completionLag: new Histogram({
    name: 'gateway_task_completion_lag_seconds',
    help: 'Time from the poll that saw an upstream job done to its file stored and its charge settled.',
    buckets: LAG_BUCKETS,
    registers: [registry],
  }),
  taskReads: new Counter({
    name: 'gateway_task_reads_total',
    help: "Video task status reads, by what answered them: view (the store's task view, no Temporal call), closed (a finished run this process cached) or temporal (a describe on the server).",
    labelNames: ['source'] as const,
    registers: [registry],
  }),
  characterReads: new Counter({
    name: 'gateway_character_reads_total',
    help: "Character reads (GET /motion/v1/characters/{id}, each @username of a prompt, each entry of a list), by what answered them: cache (this process's), view (the store's character view), none (the store: no such character of this key) or temporal (a describe on the server: a charged character with no view yet).",
    labelNames: ['source'] as const,
    registers: [registry],
  }),
  characterViewWrites: new Counter({
    name: 'gateway_character_view_writes_total',
    help: 'Writes of character views to the store, once a character is seen finished (by its create or a read), by outcome (ok, failed: its next cold read asks Temporal and writes it again).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  taskViewWrites: new Counter({
    name: 'gateway_task_view_writes_total',
    help: "Writes of task views to the store, by writer (api: a started task's initial state, or its lease renewed after a describe found the run untouched; workflow: a published state; watch: a watching step's progress and lease) and outcome (ok, failed: reads then ask Temporal until the next write).",
    labelNames: ['writer', 'outcome'] as const,
    registers: [registry],
  }),
  jobHeartbeats: new Counter({
    name: 'gateway_job_heartbeats_total',
    help: 'Heartbeats of the steps that watch upstream video jobs, each a write on Temporal, by reason: status, progress, alive.',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  jobPolls: new Counter({
    name: 'gateway_job_polls_total',
    help: 'Polls of running upstream video jobs, by channel and by how they were answered: list (a page of the channel poller answered many) or single (a request for the job).',
    labelNames: ['channel', 'via'] as const,
    registers: [registry],
  }),
  charges: new Counter({
    name: 'gateway_billing_charges_total',
    help: 'Charges written to the ledger, by kind (video, character, text).',
    labelNames: ['kind'] as const,
    registers: [registry],
  }),
  chargedCredits: new Counter({
    name: 'gateway_billing_charged_credits_total',
    help: 'Credits charged, by kind (video, character, text).',
    labelNames: ['kind'] as const,
    registers: [registry],
  }),
  refunds: new Counter({
    name: 'gateway_billing_refunds_total',
    help: 'Task charges refunded, by kind.',
    labelNames: ['kind'] as const,
    registers: [registry],
  }),
  refundedCredits: new Counter({
    name: 'gateway_billing_refunded_credits_total',
    help: 'Credits refunded, by kind.',
    labelNames: ['kind'] as const,
    registers: [registry],
  }),
  holds: new Counter({
    name: 'gateway_billing_holds_total',
    help: "Text requests' worst-case holds, by outcome (placed, refused_balance, refused_in_flight).",
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  rateLimitRefusals: new Counter({
    name: 'gateway_rate_limit_refusals_total',
    help: "Requests answered 429, by the limit (requests_per_minute, auth_failures, streams, tasks_in_flight, text_in_flight; upstream when it is a provider's 429 passed on).",
    labelNames: ['limit'] as const,
    registers: [registry],
  }),
};

/** The text endpoint a latency belongs to. */
export type TextEndpoint = 'messages' | 'chat' | 'responses';

/** Seconds since a process.hrtime.bigint() reading. */
export function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** How an upstream attempt ended, as the status label: the HTTP status, or network. */
export function upstreamStatusLabel(status: number | null | undefined): string {
  return status === null || status === undefined ? 'network' : String(status);
}

/** Figures read from the store at scrape time: the whole gateway's, the same from every replica. */
export interface StoreFigures {
  tasksInFlight: number;
  textInFlight: number;
  heldCredits: number;
}

/** Where the scrape-time figures come from; set by the process that serves them (the API). */
const sources: {
  store: (() => Promise<StoreFigures>) | null;
  restingChannels: (() => Map<string, boolean>) | null;
  usagePending: (() => number) | null;
} = {
  store: null,
  restingChannels: null,
  usagePending: null,
};

/** One store read serves the three gauges of a scrape (and a second scraper within a second). */
let storeRead: { at: number; figures: Promise<StoreFigures | null> } | null = null;
function storeFigures(): Promise<StoreFigures | null> {
  const read = sources.store;
  if (!read) return Promise.resolve(null);
  if (storeRead && Date.now() - storeRead.at < 1000) return storeRead.figures;
  // A store that is away leaves the gauges out of this scrape rather than failing it.
  storeRead = { at: Date.now(), figures: read().catch(() => null) };
  return storeRead.figures;
}

function storeGauge(name: string, help: string, pick: (f: StoreFigures) => number): Gauge {
  return new Gauge({
    name,
    help,
    registers: [registry],
    async collect() {
      const figures = await storeFigures();
      if (figures) this.set(pick(figures));
      else this.reset();
    },
  });
}

storeGauge(
  'gateway_tasks_in_flight',
  'Video tasks and background responses charged and not yet settled, in the whole gateway (read from the store; take max() over replicas).',
  (f) => f.tasksInFlight,
);
storeGauge(
  'gateway_text_requests_in_flight',
  'Text requests holding credits, in the whole gateway (from the store; with the embedded store, the places its leases set aside).',
  (f) => f.textInFlight,
);
storeGauge(
  'gateway_billing_held_credits',
  'Credits held by text requests in flight, in the whole gateway (from the store; with the embedded store, what its leases set aside).',
  (f) => f.heldCredits,
);

new Gauge({
  name: 'gateway_channel_resting',
  help: "1 while a text channel rests after failures, in this process's view, by channel.",
  labelNames: ['channel'] as const,
  registers: [registry],
  collect() {
    const resting = sources.restingChannels?.();
    if (!resting) return;
    for (const [channel, isResting] of resting) this.set({ channel }, isResting ? 1 : 0);
  },
});

new Gauge({
  name: 'gateway_text_usage_pending',
  help: "Answered text requests whose usage is in this process's journal and not yet in the store (see TEXT_USAGE_FLUSH_MS).",
  registers: [registry],
  collect() {
    const pending = sources.usagePending?.();
    if (pending !== undefined) this.set(pending);
  },
});

/** The API serves the store's figures, its channels' health and its usage on the way to the store. */
export function setMetricSources(from: { store: () => Promise<StoreFigures>; restingChannels: () => Map<string, boolean>; usagePending: () => number }): void {
  sources.store = from.store;
  sources.restingChannels = from.restingChannels;
  sources.usagePending = from.usagePending;
  storeRead = null;
}
