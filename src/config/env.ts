import path from 'node:path';
import { z } from 'zod';

/**
 * Every environment variable the gateway reads, parsed once at start-up.
 * docker-compose.yml is checked against ENV_KEYS by a test, so a variable
 * named there but unknown here (a typo that would silently do nothing) fails CI.
 */
const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** `host:port`, an IPv6 host in brackets; blank counts as unset. */
const hostPort = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .pipe(
    z
      .string()
      .regex(/^(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'must be host:port (for example 127.0.0.1:9464)')
      .refine((v) => Number(v.slice(v.lastIndexOf(':') + 1)) <= 65535, 'port must be at most 65535')
      .optional(),
  );

/** An http(s) URL; blank counts as unset. */
const httpUrl = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .pipe(
    z
      .string()
      .url('must be an http(s) URL')
      .refine((v) => /^https?:$/.test(new URL(v).protocol), 'must be an http(s) URL')
      .optional(),
  );

/**
 * OTLP exporter headers, `key=value` pairs separated by commas, values URL-encoded (the
 * OpenTelemetry specification's format). Messages never repeat a value: these carry tokens.
 */
const otlpHeaders = z.string().transform((raw, ctx) => {
  const headers: Record<string, string> = {};
  for (const pair of raw.split(',')) {
    if (pair.trim() === '') continue;
    const at = pair.indexOf('=');
    const name = at > 0 ? pair.slice(0, at).trim() : '';
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      ctx.addIssue({ code: 'custom', message: 'must be key=value pairs separated by commas (a key is missing or not a header name)' });
      return z.NEVER;
    }
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      ctx.addIssue({ code: 'custom', message: `the value of ${name} is not valid URL encoding` });
      return z.NEVER;
    }
    // Node refuses control characters in a header when the export is sent: refused here instead.
    if ([...value].some((c) => (c < ' ' && c !== '\t') || c === '\u007f')) {
      ctx.addIssue({ code: 'custom', message: `the value of ${name} holds a control character` });
      return z.NEVER;
    }
    headers[name.toLowerCase()] = value;
  }
  return headers;
});

export const envSchema = z.object({
  // HTTP edge
  PORT: int(0, 65535).default(8080),
  HOST: z.string().default('127.0.0.1'),
  PUBLIC_BASE_URL: optionalString,
  MAX_JSON_BODY_BYTES: int(1024, 512 * 1024 * 1024).default(20 * 1024 * 1024),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ADMIN_TOKEN: optionalString,

  // HTTP server limits (docs/api.md, "Request limits")
  /** Time a client has to send a request's headers (slowloris); 408 and closed after. */
  HTTP_HEADERS_TIMEOUT_MS: int(1000, 600_000).default(20_000),
  /** Time a client has to send a whole request, body included; a response may take longer (streams are not cut). */
  HTTP_REQUEST_TIMEOUT_MS: int(1000, 3_600_000).default(120_000),
  /** An idle keep-alive connection is closed after this long (above common load balancers' 60 s). */
  HTTP_KEEPALIVE_TIMEOUT_MS: int(1000, 600_000).default(65_000),
  /** A connection whose client reads nothing of a waiting answer for this long is closed (a stalled text stream is billed as aborted). */
  HTTP_SEND_STALL_MS: int(1000, 3_600_000).default(60_000),
  /** Open connections at once; further ones are closed at accept. Keep it below the process's file limit (ulimit -n). */
  HTTP_MAX_CONNECTIONS: int(1, 1_000_000).default(4096),
  /** Largest request line plus headers; 431 over. */
  HTTP_MAX_HEADER_BYTES: int(1024, 1024 * 1024).default(16 * 1024),
  /** Failed key authentications allowed per client address per minute, then 429; 0 = no limit. */
  AUTH_FAILURES_PER_MINUTE: int(0, 1_000_000).default(30),
  /** The client address is the last X-Forwarded-For entry (set only behind one reverse proxy that appends it). */
  TRUST_PROXY: bool.default(false),

  // Console (docs/console.md): the web UI's sign-in sessions
  /** A console session unused this long ends (sliding; refreshed at most once a minute). */
  CONSOLE_SESSION_IDLE_MINUTES: int(1, 7 * 24 * 60).default(30),
  /** A console session ends this long after sign-in, however used. */
  CONSOLE_SESSION_MAX_HOURS: int(1, 30 * 24).default(8),

  // Files
  DATA_DIR: z.string().default('./data'),
  STORAGE_DIR: optionalString,
  URL_SIGNING_SECRET: optionalString,
  VIDEO_URL_TTL_SECONDS: int(60, 30 * 24 * 3600).default(24 * 3600),

  // Store
  DATABASE_URL: optionalString,

  // Billing and limits
  /** A YAML/JSON price table merged over the built-in defaults (see prices.example.yaml). */
  PRICES_FILE: optionalString,
  /** Rate limits shared by every API replica through Redis; unset = in-process. */
  REDIS_URL: optionalString,
  /** How often charges whose workflow never started (or was terminated) are settled; 0 = never. */
  BILLING_RECONCILE_SECONDS: int(0, 86_400).default(60),
  /**
   * How often runs stopped from outside (terminated, timed out, cancelled by an operator) are
   * looked for between the reconciler's passes: their views dropped, their charges refunded.
   * 0 = only at each pass.
   */
  TASK_STOP_SWEEP_SECONDS: int(0, 3600).default(5),

  // Temporal
  TEMPORAL_ADDRESS: optionalString,
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('gateway-video'),
  TEMPORAL_DEV_PORT: int(1, 65535).default(7233),
  TEMPORAL_UI_PORT: int(1, 65535).default(8233),
  TEMPORAL_CLI_PATH: optionalString,
  /** Base of the Temporal Web UI the console and GET /admin/tasks link to; unset = the embedded dev server's, or no links. */
  TEMPORAL_UI_URL: httpUrl.optional(),
  TEMPORAL_RPC_TIMEOUT_MS: int(100, 60_000).default(5000),
  /**
   * `npm start` (API and worker in one process): start runs with eager start on the worker's
   * connection. Less CPU per task, slower create bursts (docs/operations.md).
   */
  TEMPORAL_EAGER_START: bool.default(false),
  /**
   * The longest a video task's first workflow task may wait for a worker and still make the
   * submit's first attempt inside it (a local activity) rather than as a step; 0: always a step.
   * Read by the API, which puts it in each task's input.
   */
  SUBMIT_FIRST_TRY_MAX_WAIT_MS: int(0, 86_400_000).default(60_000),
  /** How often a streamed video chat completion re-reads its task for progress. */
  STREAM_POLL_MS: int(50, 60_000).default(1000),

  // Metrics (docs/operations.md, "Metrics")
  /** A token that reads GET /metrics on the API port (and nothing else); unset = the admin token only. */
  METRICS_TOKEN: optionalString,
  /** `host:port` of a listener serving /metrics with no token (the way to read a standalone worker's); unset = none. */
  METRICS_ADDRESS: hostPort.optional(),
  /** `host:port` where the Temporal SDK (worker) serves its own Prometheus metrics; unset = off. */
  TEMPORAL_METRICS_ADDRESS: hostPort.optional(),
  /** The embedded dev server's /metrics port; 0 = a random free one (the dev server's default). */
  TEMPORAL_DEV_METRICS_PORT: int(0, 65535).default(0),

  // Tracing (docs/operations.md, "Tracing"): the OpenTelemetry variables' standard meanings.
  /** Either endpoint turns tracing on; unset = off and no OpenTelemetry code is loaded. */
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
  /** The traces URL as it is (the one above gets `/v1/traces` appended); wins over it. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.optional(),
  /** `key=value,key2=value2` (values URL-encoded) sent with every export, e.g. a collector's token. */
  OTEL_EXPORTER_OTLP_HEADERS: otlpHeaders.optional(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: otlpHeaders.optional(),
  /** Unset = durable-model-gateway (npm start), durable-model-gateway-api or -worker. */
  OTEL_SERVICE_NAME: optionalString,
  OTEL_TRACES_SAMPLER: z
    .enum(['parentbased_traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'traceidratio', 'always_on', 'always_off'])
    .default('parentbased_traceidratio'),
  /** The ratio of new traces kept (0-1) by the traceidratio samplers. */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
  /** true = no tracing even with an endpoint set. */
  OTEL_SDK_DISABLED: bool.default(false),

  // Supervision (docs/operations.md, "Health and supervision")
  /**
   * `npm start` restarts its embedded Temporal dev server (and replaces its in-process worker)
   * at most this many times within SUPERVISOR_RESTART_WINDOW_SECONDS; one more failure and the
   * process exits 1 for its own supervisor to restart. 0 = exit at the first failure.
   */
  SUPERVISOR_RESTART_MAX: int(0, 1000).default(5),
  SUPERVISOR_RESTART_WINDOW_SECONDS: int(1, 7 * 86_400).default(600),
  /** The wait before the n-th restart inside the window is this times 2^n, at most 30 s. */
  SUPERVISOR_RESTART_BACKOFF_MS: int(0, 60_000).default(1000),
  /** `npm start` kills (and so restarts) a dev server that runs but has not answered this long; 0 = never. */
  SUPERVISOR_HUNG_SECONDS: int(0, 86_400).default(60),
  /** A standalone worker (`npm run worker`) that cannot reach Temporal this long exits 1; 0 = waits for ever. */
  TEMPORAL_LOST_EXIT_SECONDS: int(0, 7 * 86_400).default(300),

  // Upstream channels
  CHANNELS_FILE: optionalString,
  GEMINI_API_KEY: optionalString,
  GEMINI_BASE_URL: z.string().url().default('https://generativelanguage.googleapis.com'),
  OPENAI_VIDEOS_BASE_URL: optionalString,
  OPENAI_VIDEOS_API_KEY: optionalString,
  ANTHROPIC_API_KEY: optionalString,
  ANTHROPIC_BASE_URL: z.string().url().default('https://api.anthropic.com'),
  OPENAI_API_KEY: optionalString,
  OPENAI_BASE_URL: z.string().url().default('https://api.openai.com/v1'),
  /** Comma-separated models the OPENAI_API_KEY channel serves (default: gpt-4o-mini, gpt-4o, gpt-4.1-mini, gpt-4.1). */
  OPENAI_MODELS: optionalString,
  /** Consecutive failures (429, 5xx, connection) after which a channel rests, and for how long. */
  CHANNEL_FAILURE_THRESHOLD: int(1, 1000).default(3),
  CHANNEL_COOLDOWN_SECONDS: int(1, 86_400).default(30),
  /** Text requests: the longest wait for an upstream's response headers (a non-streamed answer arrives whole). */
  TEXT_TIMEOUT_MS: int(1000, 3_600_000).default(600_000),
  /** A text stream silent this long is ended with an error event instead of hanging the client. */
  TEXT_STREAM_IDLE_MS: int(1000, 3_600_000).default(90_000),
  /** Output tokens held for (and sent upstream as max_completion_tokens by) a chat request that names no limit. */
  TEXT_DEFAULT_MAX_TOKENS: int(1, 10_000_000).default(4096),
  /** Text requests in flight per key, unless the key sets its own (max_text_in_flight). */
  TEXT_MAX_IN_FLIGHT_PER_KEY: int(1, 1_000_000).default(100),
  /** Streams (text, and video chat progress) one key may keep open at once, per API process. */
  MAX_STREAMS_PER_KEY: int(1, 1_000_000).default(100),
  /** The longest an answer waits for its usage to be written before it ends anyway (the write goes on). */
  TEXT_SETTLE_WAIT_MS: int(0, 600_000).default(5000),
  /**
   * The longest an answer waits for its settlement's fdatasync in the local journal; past it the
   * answer ends with the line in the page cache (a kill -9 keeps it) and its sync under way.
   */
  TEXT_JOURNAL_SYNC_WAIT_MS: int(0, 600_000).default(2),
  /**
   * How long an answered request's settlement waits, in the local journal, to share the store's
   * next statement with others (0: written at once, one statement per request when they do not overlap).
   */
  TEXT_USAGE_FLUSH_MS: int(0, 600_000).default(100),
  /** An API process silent this long is dead: any other settles its text holds in full. */
  TEXT_HOLD_ORPHAN_SECONDS: int(3, 86_400).default(60),
  UPSTREAM_POLL_MS: int(50, 600_000).optional(),
  /** Polls of running jobs fall on multiples of this many ms (at most a quarter of the interval), so they share the worker's wakeups; 0: off. */
  UPSTREAM_POLL_GRID_MS: int(0, 60_000).default(100),
  /** openai-videos channels poll their running jobs by listing them, unless a channel's poll_by_list says otherwise. */
  UPSTREAM_POLL_BY_LIST: bool.default(false),
  /** A running job's progress reaches status reads at most this often (each update is a write on Temporal). */
  PROGRESS_UPDATE_MS: int(100, 600_000).default(10_000),
  /** ... and once it has moved this many points: at most 100 / this updates whatever the job's length. */
  PROGRESS_UPDATE_STEP: int(1, 100).default(10),
  UPSTREAM_TIMEOUT_MS: int(1000, 600_000).default(60_000),
  UPSTREAM_RETRY_INITIAL_MS: int(10, 600_000).default(2000),
  UPSTREAM_RETRY_MAX_MS: int(10, 3_600_000).default(60_000),
  TASK_DEADLINE_MINUTES: int(1, 7 * 24 * 60).default(180),
  /** How long finished tasks stay readable (the Temporal namespace's retention). */
  TASK_RETENTION_DAYS: int(1, 3650).default(30),

  // Prompt enhancement (OpenAI chat-completions compatible endpoint); unset = pass-through
  PROMPT_ENHANCER_BASE_URL: optionalString,
  PROMPT_ENHANCER_API_KEY: optionalString,
  PROMPT_ENHANCER_MODEL: optionalString,

  // Fetching user-supplied URLs (reference images, character clips)
  FETCH_ALLOW_PRIVATE: bool.default(false),
  FETCH_MAX_BYTES: int(1024, 512 * 1024 * 1024).default(20 * 1024 * 1024),
  /**
   * The whole of one fetch of a user URL (DNS, connect, headers, body, redirects): a server
   * that drips its bytes is cut off here. Kept well under the fetching steps' 3-minute
   * start-to-close, which also covers the upstream submit.
   */
  FETCH_TIMEOUT_MS: int(1000, 120_000).default(30_000),
  /** A key's fetching steps in flight per worker process; one over it is retried a few seconds later. */
  FETCH_MAX_PER_KEY: int(1, 1000).default(3),

  // Completion webhooks (README "Completion webhooks")
  /** Plain http:// webhook targets are accepted (local development, tests); default: https only. */
  WEBHOOK_ALLOW_HTTP: bool.default(false),
  /** Webhook targets on loopback and private addresses are accepted (local development, tests). */
  WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  /** One delivery attempt: DNS, connect, request and the receiver's answer. */
  WEBHOOK_TIMEOUT_MS: int(100, 60_000).default(10_000),
  /** Delivery retries: the first interval, doubled after each failed attempt up to WEBHOOK_RETRY_MAX_MS. */
  WEBHOOK_RETRY_INITIAL_MS: int(10, 3_600_000).default(5000),
  WEBHOOK_RETRY_MAX_MS: int(10, 86_400_000).default(3_600_000),
  /** How long an event is retried before it is given up (state failed). */
  WEBHOOK_DELIVERY_HOURS: int(1, 24 * 30).default(24),

  // Worker
  /** Activities a worker process runs at once (tasks mostly wait between polls, so many fit). */
  /** Every task in flight holds one while its upstream job is watched (watchVideoJob), so this bounds the tasks one worker carries. */
  WORKER_MAX_CONCURRENT_ACTIVITIES: int(1, 200_000).default(20_000),
  /**
   * How long a workflow task waits on this worker's sticky queue before the server moves it to
   * the task queue (where any worker takes it, after replaying the workflow's history).
   * Temporal's default; longer keeps a busy worker's tasks in flight out of a backlog on the task
   * queue, and delays the recovery of those sent to a worker that died.
   */
  WORKER_STICKY_TIMEOUT_MS: int(1000, 3_600_000).default(10_000),
  /**
   * Workflows this worker keeps in memory between their workflow tasks. A task whose workflow
   * was evicted loses its sticky queue: its next workflow task waits on the task queue, behind
   * any backlog there, and replays its history. The SDK's default follows the heap (about 2,300
   * on a 4 GiB heap), below the tasks in flight one worker carries; unset, it is
   * WORKER_MAX_CONCURRENT_ACTIVITIES, one cached workflow per task a worker watches.
   */
  WORKER_MAX_CACHED_WORKFLOWS: int(10, 200_000).optional(),

  // Provider simulator (used when no provider credentials are configured)
  SIMULATOR_URL: optionalString,
  SIMULATOR_PORT: int(0, 65535).default(8090),
  SIMULATOR_JOB_MS: int(0, 24 * 3600 * 1000).default(20_000),
  SIMULATOR_FAULT_RATE: z.coerce.number().min(0).max(1).default(0),
  SIMULATOR_LATENCY_MS: int(0, 60_000).default(0),
});

export type Env = z.infer<typeof envSchema>;
export const ENV_KEYS: readonly string[] = Object.keys(envSchema.shape);

export interface Config {
  env: Env;
  dataDir: string;
  storageDir: string;
  publicBaseUrl: string;
  /** Embedded mode starts a Temporal dev server when TEMPORAL_ADDRESS is unset. */
  temporalAddress: string;
  embeddedTemporal: boolean;
  /** Base of the Temporal Web UI for links (no trailing slash), or null: no links. */
  temporalUiUrl: string | null;
}

export class ConfigError extends Error {}

export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const picked: Record<string, string> = {};
  for (const key of ENV_KEYS) {
    const value = source[key];
    if (value !== undefined) picked[key] = value;
  }
  const parsed = envSchema.safeParse(picked);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const env = parsed.data;
  const dataDir = path.resolve(env.DATA_DIR);
  return {
    env,
    dataDir,
    storageDir: path.resolve(env.STORAGE_DIR ?? path.join(dataDir, 'storage')),
    publicBaseUrl: (env.PUBLIC_BASE_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, ''),
    temporalAddress: env.TEMPORAL_ADDRESS ?? `127.0.0.1:${env.TEMPORAL_DEV_PORT}`,
    embeddedTemporal: env.TEMPORAL_ADDRESS === undefined,
    // The embedded dev server serves its UI itself; a cluster's UI is wherever the operator says.
    temporalUiUrl: env.TEMPORAL_UI_URL?.replace(/\/+$/, '') ?? (env.TEMPORAL_ADDRESS === undefined ? `http://localhost:${env.TEMPORAL_UI_PORT}` : null),
  };
}
