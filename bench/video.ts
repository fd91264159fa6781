/**
 * npm run bench:video -- [--tasks 100,1000] [--job-ms 30000] [--poll-ms 2000] [--concurrency 50] [--query-seconds 10] [--query-rate 100]
 *                         [--billing on|off] [--gateway <checkout>]
 *                         [--create-rate <tasks/s>] [--models vidgen3,motion-2] [--cpu-prof <dir>] [--one-process [--eager-start]]
 *
 * Drives N video tasks through the real stack (Temporal dev server, worker and API as
 * separate processes, provider simulator) and prints, per N tasks in flight:
 *   creates/s beside the rate of bare workflow starts on the same dev server (bare-starts.ts),
 *   create latency p50/p99, query latency p50/p99 (while all N are in flight) and what
 *   answered those reads (the task views, Temporal, the API's cache: bench/read-sources.ts),
 *   completion lag p50/p99/max (upstream job completed -> the gateway's workflow completed)
 *   and its phases (bench/lag-phases.ts),
 *   and the peak RSS of the API and worker processes, the CPU ms per task of every process on
 *   the machine (bench/cpu.ts) during the creates and during completion; the slowest task,
 *   when it finished more than 20 s after its upstream job, with its workflow history as a
 *   timeline; the CPU of a task over its life (dev server + worker) and its history events.
 * Then the other paths, with the first N: /v1/videos (multipart create, retrieve) and video
 * chat completions streamed by 50 concurrent clients (time to the first chunk, and the lag
 * from upstream completion to the video_url event).
 * Results also go to bench-results/video-<time>.json.
 *
 * `--gateway <checkout>` runs the API, worker and simulator built in another checkout (its
 * dist/) under this bench, so an older commit is measured by the same code: the baseline of
 * a before/after comparison (give a checkout that predates billing `--billing off`).
 * `--create-rate` paces the /v1/video/create wave (unpaced by default): the completion lag of
 * a wave depends on how tightly it arrives, so two builds whose create rates differ are
 * compared on lag only with the same pace.
 * `--models` names the create wave's models, taken in turn (vidgen3 and motion-2 by default: one
 * per simulated video protocol).
 * `--cpu-prof <dir>` writes CPU profiles of the API and worker processes there (node
 * --cpu-prof, written when they exit), to see where their time goes under load.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { projectRoot, temporalCliPath } from '../src/config/paths';
import { createLogger } from '../src/log';
import { loadConfig } from '../src/config/env';
import { startDevServer } from '../src/temporal/dev-server';
import { freePort, waitFor } from '../test/support/ports';
import { runNode } from '../test/support/processes';
import { upstreamJobOf } from '../test/support/upstream';
import { BenchChildren } from './child-guard';
import { writeBenchResults } from './results';
import { formatReadSources, readSources, readSourcesBetween } from './read-sources';
import { bareStartRate, historySizes } from './bare-starts';
import { floorTaskCost } from './floor-tasks';
import { cpuPerItem, cpuSnapshot, formatCpu, type CpuGroups } from './cpu';
import { statusMiB } from './proc-stats';
import { runScript } from './script-command';
import { slowTaskTimeline } from './slow-task';
import { LAG_PHASES, lagPhasesOf, type LagPhases } from './lag-phases';
import { chatStreamBurst, completionLags, createWave, percentile, pool, statusReads, statusReadsAtRate, WAVE_MODELS, type CompletionLag } from './video-load';
import { benchDatabase, benchKeyBody, billingModeOf, type BillingMode } from './billing';
import { formatWatchCounts, watchCounts, watchCountsPerTask } from './watch-counts';
import { formatTemporalWaits, readTemporal, sampleWorkflowSlots, temporalWaitsBetween } from './temporal-waits';

interface Options {
  tasks: number[];
  jobMs: number;
  /** Job lengths spread evenly over jobMs .. jobMs + this. */
  jobSpreadMs: number;
  pollMs: number;
  concurrency: number;
  querySeconds: number;
  /** Status reads per second of the open-loop phase. */
  queryRate: number;
  billing: BillingMode;
  /** The checkout whose build runs the gateway; this one by default. */
  gateway: string;
  /** Creates per second of the /v1/video/create wave; 0 = as fast as the clients go. */
  createRate: number;
  /** Where the API and worker write CPU profiles; none when empty. */
  cpuProfDir: string;
  /** The models of the create wave, in turn. */
  models: string[];
  /**
   * The API and the worker in one process, as `npm start` runs them (dist/src/main.js on the
   * bench's dev server, simulator and database).
   */
  oneProcess: boolean;
  /** With oneProcess: TEMPORAL_EAGER_START (runs started eagerly on the worker's connection). */
  eagerStart: boolean;
}

function parseArgs(argv: string[]): Options {
  const get = (name: string, fallback: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 && argv[i + 1] ? argv[i + 1]! : fallback;
  };
  // Only npm start's process reads TEMPORAL_EAGER_START: apart, the flag would measure nothing.
  if (argv.includes('--eager-start') && !argv.includes('--one-process')) throw new Error('--eager-start needs --one-process');
  return {
    tasks: get('tasks', '100,1000').split(',').map(Number),
    jobMs: Number(get('job-ms', '30000')),
    jobSpreadMs: Number(get('job-spread-ms', '0')),
    pollMs: Number(get('poll-ms', '2000')),
    concurrency: Number(get('concurrency', '50')),
    querySeconds: Number(get('query-seconds', '10')),
    queryRate: Number(get('query-rate', '100')),
    billing: billingModeOf(get('billing', 'on')),
    gateway: path.resolve(get('gateway', projectRoot())),
    createRate: Number(get('create-rate', '0')),
    cpuProfDir: get('cpu-prof', ''),
    models: get('models', WAVE_MODELS.join(',')).split(','),
    oneProcess: argv.includes('--one-process'),
    eagerStart: argv.includes('--eager-start'),
  };
}

/** A task finished this long after its upstream job has its history printed. */
const SLOW_TASK_MS = 20_000;
/** A median wait of the first workflow tasks for a worker past this has one such task's history printed. */
const SLOW_FIRST_TASK_MS = 5_000;
const ms = (v: number) => (Number.isNaN(v) ? 'n/a' : `${v.toFixed(1)} ms`);

const rssMiB = (pid: number | undefined): number => statusMiB(pid, 'VmRSS');

/** Bare starts measured per wave: enough for a steady rate, few enough not to weigh on the run. */
const BARE_STARTS_MAX = 2000;
/** Finished tasks whose history length is read. */
const HISTORY_SAMPLE = 50;

/** A task's CPU from create to completion, per process group: the creates phase plus the rest. */
const lifeCpu = (creates: CpuGroups, completion: CpuGroups) => {
  const sum = (k: string) => (creates[k] ?? NaN) + (completion[k] ?? NaN);
  return { temporal: sum('temporal'), worker: sum('worker'), api: sum('api'), gateway: sum('gateway') };
};

/** How long the simulated channels expect a job to last: SIMULATOR_JOB_MS when set, else the wave's mean job. */
const expectedJobMs = (opts: Pick<Options, 'jobMs' | 'jobSpreadMs'>): string =>
  process.env.SIMULATOR_JOB_MS ?? String(Math.round(opts.jobMs + opts.jobSpreadMs / 2));

/** The gateway's task queue, as its processes (which inherit this shell's environment) read it. */
const TASK_QUEUE = loadConfig().env.TEMPORAL_TASK_QUEUE;

const bench = new BenchChildren('the gateway, the simulator and the dev server');

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const root = projectRoot();
  const runDir = path.join(root, '.bench-data', `video-${Date.now()}`);
  fs.mkdirSync(runDir, { recursive: true });
  const logger = createLogger('warn', 'bench');
  bench.removeAtEnd(runDir);
  const temporalPort = await freePort();
  // The dev server's own metrics, for where the wave's workflow tasks waited (temporal-waits.ts).
  const serverMetrics = `http://127.0.0.1:${await freePort()}/metrics`;
  const temporalServer = await startDevServer({
    cliPath: temporalCliPath(),
    dataDir: runDir,
    port: temporalPort,
    uiPort: await freePort(),
    namespace: 'default',
    logger,
    headless: true,
    metricsPort: Number(new URL(serverMetrics).port),
  });
  bench.atEnd(() => temporalServer.stop());
  const simPort = await freePort();
  const simUrl = `http://127.0.0.1:${simPort}`;
  const simulatorProc = bench.add(
    runNode('dist/simulator/main.js', { HOST: '127.0.0.1', SIMULATOR_PORT: String(simPort), LOG_LEVEL: 'warn' }, 'bench-simulator', opts.gateway),
  );
  await waitFor('simulator', async () => (await fetch(`${simUrl}/_sim/health`)).ok, 20_000);

  const apiPort = await freePort();
  const api = `http://127.0.0.1:${apiPort}`;
  // The worker settles charges in the store it shares with the API: PostgreSQL, as in a scale-out deployment.
  const database = await benchDatabase('video');
  bench.atEnd(database.drop);
  const env = {
    DATABASE_URL: database.url,
    PORT: String(apiPort),
    HOST: '127.0.0.1',
    DATA_DIR: runDir,
    ADMIN_TOKEN: 'bench-admin',
    LOG_LEVEL: 'warn',
    TEMPORAL_ADDRESS: temporalServer.address,
    SIMULATOR_URL: simUrl,
    UPSTREAM_POLL_MS: String(opts.pollMs),
    // The simulated channels expect the wave's jobs to last as long as they do, as a channel's
    // expected_job_seconds would say for a real provider: progress estimates and the watching
    // step's heartbeat timeout follow it.
    SIMULATOR_JOB_MS: expectedJobMs(opts),
    ...(opts.eagerStart ? { TEMPORAL_EAGER_START: 'true' } : {}),
  };
  const profile = opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(opts.cpuProfDir)}`] : [];
  // A profile is written as its process exits: a worker that drains and writes a large one needs longer than 5 s.
  if (opts.cpuProfDir) bench.stopGraceMs = 60_000;
  // The worker's own metrics (not the API's: both would bind it), for the counts of what watching jobs costs.
  const workerMetrics = `127.0.0.1:${await freePort()}`;
  // ... and the Temporal SDK's metrics of the worker (its slots and polls).
  const sdkMetrics = `127.0.0.1:${await freePort()}`;
  const workerEnv = { ...env, METRICS_ADDRESS: workerMetrics, TEMPORAL_METRICS_ADDRESS: sdkMetrics };
  const gatewayProc = opts.oneProcess ? bench.add(runScript('start', workerEnv, 'bench-gateway', opts.gateway, profile)) : null;
  const apiProc = gatewayProc ?? bench.add(runScript('api', env, 'bench-api', opts.gateway, profile));
  const workerProc = gatewayProc ?? bench.add(runScript('worker', workerEnv, 'bench-worker', opts.gateway, profile));
  /** Null for a gateway built before the heartbeat counter (--gateway): the line is then left out. */
  const readWatchCounts = () => watchCounts(`http://${workerMetrics}/metrics`).catch(() => null);
  const readWaits = () => readTemporal(`http://${sdkMetrics}/metrics`, serverMetrics);
  await waitFor('gateway healthy', async () => (await fetch(`${api}/healthz`)).status === 200, 90_000, 250);

  // RSS once started and idle, so that the peak under load can be read as growth.
  const startRss = { api: rssMiB(apiProc.proc.pid), worker: rssMiB(workerProc.proc.pid) };
  const issued = (await (
    await fetch(`${api}/admin/keys`, {
      method: 'POST',
      headers: { authorization: 'Bearer bench-admin', 'content-type': 'application/json' },
      body: JSON.stringify(benchKeyBody(opts.billing)),
    })
  ).json()) as { key: string };
  const auth = { authorization: `Bearer ${issued.key}` };
  const temporal = new Client({ connection: await Connection.connect({ address: temporalServer.address }) });

  console.log(
    `\nbench:video  job ${opts.jobMs}${opts.jobSpreadMs > 0 ? ` to ${opts.jobMs + opts.jobSpreadMs}` : ''} ms (channels expect ${expectedJobMs(opts)}), upstream poll ${opts.pollMs} ms, client concurrency ${opts.concurrency}${opts.createRate > 0 ? `, creates paced at ${opts.createRate}/s` : ''}, billing ${opts.billing}${opts.gateway === root ? '' : `, gateway built in ${opts.gateway}`}${opts.oneProcess ? `, API and worker in one process${opts.eagerStart ? ' (eager starts)' : ''}` : ''}; 2 cores shared by every process\n`,
  );
  const results = [];
  for (const n of opts.tasks) {
    // The ceiling first, on the same server and connection, before the tasks load it.
    const bareStarts = await bareStartRate(
      temporal,
      Math.min(n, BARE_STARTS_MAX),
      opts.concurrency,
      () => cpuSnapshot({}, { temporal: 'temporal' }).temporal ?? NaN,
    );
    const floor = await floorTaskCost(
      bench,
      temporal,
      { address: temporalServer.address, log: path.join(runDir, `floor-worker-${n}.log`) },
      Math.min(n, BARE_STARTS_MAX),
      opts.concurrency,
    );
    // create
    const gatewayPids = gatewayProc ? { gateway: gatewayProc.proc.pid } : { api: apiProc.proc.pid, worker: workerProc.proc.pid };
    const cpu = () => cpuSnapshot({ ...gatewayPids, simulator: simulatorProc.proc.pid }, { temporal: 'temporal', postgres: 'postgres' });
    const cpuBeforeCreates = cpu();
    const watchBefore = await readWatchCounts();
    const waitsBefore = await readWaits();
    const waitsFrom = Date.now();
    const slotSampler = sampleWorkflowSlots(`http://${sdkMetrics}/metrics`);
    const wave = await createWave(api, auth, {
      n,
      concurrency: opts.concurrency,
      jobMs: opts.jobMs,
      spreadMs: opts.jobSpreadMs,
      rate: opts.createRate,
      label: String(n),
      models: opts.models,
    });
    const { ids, latencies: createLatencies, errors: createErrors } = wave;
    const createSeconds = wave.seconds;
    const cpuCreates = cpuPerItem(cpuBeforeCreates, cpu(), n);

    // query, while the tasks are in flight
    let peakApi = rssMiB(apiProc.proc.pid);
    let peakWorker = rssMiB(workerProc.proc.pid);
    const sourcesBefore = await readSources(api, 'bench-admin');
    const paced = await statusReadsAtRate(api, auth, ids, {
      seconds: opts.querySeconds,
      rate: opts.queryRate,
      describe: (id) => temporal.workflow.getHandle(id).describe(),
    });
    const { latencies: queryLatencies, errors: queryErrors } = await statusReads(api, auth, ids, { seconds: opts.querySeconds, concurrency: opts.concurrency });
    const readsBy = readSourcesBetween(sourcesBefore, await readSources(api, 'bench-admin'));
    const inFlightAtQuery = await temporal.workflow.count(`GatewayOwner IS NOT NULL AND ExecutionStatus = "Running"`);
    const cpuBeforeCompletion = cpu();

    // completion
    const owner = ((await temporal.workflow.getHandle(ids[0]!).describe()).searchAttributes.GatewayOwner as string[])[0];
    // A run whose tasks do not all finish within the wait still prints its figures: those of the
    // tasks that finished, with the count of those still running (the lag line's `not`).
    let stillRunning = 0;
    const waitMs = opts.jobMs + opts.jobSpreadMs + 600_000;
    await waitFor(
      `${n} tasks completed`,
      async () => {
        peakApi = Math.max(peakApi, rssMiB(apiProc.proc.pid));
        peakWorker = Math.max(peakWorker, rssMiB(workerProc.proc.pid));
        stillRunning = (await temporal.workflow.count(`GatewayOwner = "${owner}" AND ExecutionStatus = "Running"`)).count;
        return stillRunning === 0;
      },
      waitMs,
      1000,
    ).catch(() =>
      console.log(
        `  (${stillRunning} of ${n} tasks still running ${(waitMs / 1000).toFixed(0)} s after the queries: the figures below are those of the tasks that finished)`,
      ),
    );
    const cpuCompletion = cpuPerItem(cpuBeforeCompletion, cpu(), n);
    const watchAfter = await readWatchCounts();
    const waitsAfter = await readWaits();
    const slots = await slotSampler.stop();
    const waits = waitsBefore && waitsAfter ? temporalWaitsBetween(waitsBefore, waitsAfter, TASK_QUEUE, slots) : null;
    const waitsSeconds = (Date.now() - waitsFrom) / 1000;
    const watch = watchBefore && watchAfter ? watchCountsPerTask(watchBefore, watchAfter, n) : null;
    const { done, notCompleted: failed } = await completionLags(temporal, simUrl, ids);
    const lags = done.map((t) => t.lag);
    const history = await historySizes(
      temporal,
      done.map((t) => t.id),
      HISTORY_SAMPLE,
    );
    const life = lifeCpu(cpuCreates, cpuCompletion);
    const phases: LagPhases[] = [];
    const firstWaitOf = new Map<CompletionLag, number>();
    await pool(done, 20, async (t) => {
      const split = await lagPhasesOf(temporal, t.id, t.upstreamDone);
      if (split) phases.push(split);
      if (split?.firstTaskWait != null) firstWaitOf.set(t, split.firstTaskWait);
    });
    const firstTaskWaits = [...firstWaitOf.values()];
    // When the first workflow tasks waited long, one that waited the median says what for.
    const medianWait = [...firstWaitOf].sort((a, b) => a[1] - b[1])[Math.floor(firstWaitOf.size / 2)];
    if (medianWait && medianWait[1] > SLOW_FIRST_TASK_MS) {
      const [t, wait] = medianWait;
      console.log(`  task ${t.id} waited ${ms(wait)} for its first workflow task (the median); its history (s from upstream done):`);
      for (const line of await slowTaskTimeline(temporal, t.id, t.upstreamDone)) console.log(`    ${line}`);
    }
    const slowest = done.reduce<CompletionLag | undefined>((worst, t) => (t.lag > (worst?.lag ?? 0) ? t : worst), undefined);
    // A task far behind the rest is worth a look: its history says where the time went.
    if (slowest && slowest.lag > SLOW_TASK_MS) {
      console.log(`  slowest task ${slowest.id}: ${ms(slowest.lag)} after its upstream job; its history (s from upstream done):`);
      for (const line of await slowTaskTimeline(temporal, slowest.id, slowest.upstreamDone)) console.log(`    ${line}`);
    }
    await temporal.workflow.count(); // keep the connection honest

    const row = {
      tasks: n,
      createsPerSecond: n / createSeconds,
      bareStartsPerSecond: bareStarts.perSecond,
      bareStartCpuMs: { start: bareStarts.startCpuMs, terminate: bareStarts.terminateCpuMs },
      floor,
      createP50: percentile(createLatencies, 50),
      createP99: percentile(createLatencies, 99),
      createErrors,
      queries: queryLatencies.length,
      queryP50: percentile(queryLatencies, 50),
      queryP99: percentile(queryLatencies, 99),
      queryErrors,
      pacedQueries: {
        rate: opts.queryRate,
        reads: paced.latencies.length,
        p50: percentile(paced.latencies, 50),
        p99: percentile(paced.latencies, 99),
        errors: paced.errors,
        describeP50: percentile(paced.describes.latencies, 50),
        describeP99: percentile(paced.describes.latencies, 99),
        describeErrors: paced.describes.errors,
      },
      inFlightDuringQueries: inFlightAtQuery.count,
      /** Both query phases' reads by what answered them; null for a gateway without the counter. */
      queriesAnsweredBy: readsBy,
      lagP50: percentile(lags, 50),
      lagP99: percentile(lags, 99),
      lagMax: Math.max(...lags),
      completed: lags.length,
      failed,
      lagPhases: Object.fromEntries(
        LAG_PHASES.map((k) => [
          k,
          {
            p50: percentile(
              phases.map((x) => x[k]),
              50,
            ),
            p99: percentile(
              phases.map((x) => x[k]),
              99,
            ),
          },
        ]),
      ),
      firstTaskWait: {
        p50: percentile(firstTaskWaits, 50),
        p90: percentile(firstTaskWaits, 90),
        max: firstTaskWaits.length ? Math.max(...firstTaskWaits) : NaN,
      },
      peakRssApiMiB: peakApi,
      peakRssWorkerMiB: peakWorker,
      startRssApiMiB: startRss.api,
      startRssWorkerMiB: startRss.worker,
      cpuMsPerTask: { creates: cpuCreates, completion: cpuCompletion, life },
      historyEvents: history,
      watchPerTask: watch,
      temporalWaits: waits,
    };
    results.push(row);
    console.log(`${n} tasks in flight`);
    console.log(`  create   ${row.createsPerSecond.toFixed(1)} tasks/s   p50 ${ms(row.createP50)}   p99 ${ms(row.createP99)}   errors ${createErrors}`);
    console.log(
      `           bare workflow starts on the same dev server: ${bareStarts.perSecond.toFixed(1)}/s (creates at ${((100 * row.createsPerSecond) / bareStarts.perSecond).toFixed(0)} % of it); its CPU ${bareStarts.startCpuMs.toFixed(1)} ms per start, ${bareStarts.terminateCpuMs.toFixed(1)} per termination`,
    );
    console.log(
      `  query    ${row.queries} reads in ${opts.querySeconds} s with ${row.inFlightDuringQueries} tasks running   p50 ${ms(row.queryP50)}   p99 ${ms(row.queryP99)}   errors ${queryErrors}`,
    );
    console.log(
      `           at ${opts.queryRate}/s (open loop) ${row.pacedQueries.reads} reads   p50 ${ms(row.pacedQueries.p50)}   p99 ${ms(row.pacedQueries.p99)}   errors ${paced.errors}`,
    );
    console.log(
      `           beside them, the bench's own describe on the dev server: p50 ${ms(row.pacedQueries.describeP50)}   p99 ${ms(row.pacedQueries.describeP99)}   errors ${row.pacedQueries.describeErrors}`,
    );
    if (readsBy) console.log(`           the reads of both, answered by: ${formatReadSources(readsBy)}`);
    console.log(
      `  lag      upstream completed -> gateway completed   p50 ${ms(row.lagP50)}   p99 ${ms(row.lagP99)}   max ${ms(row.lagMax)}   (${row.completed} completed, ${failed} not)`,
    );
    console.log(`  phases   ${LAG_PHASES.map((k) => `${k} p50 ${ms(row.lagPhases[k]!.p50)} p99 ${ms(row.lagPhases[k]!.p99)}`).join('   ')}`);
    console.log(
      `  first    workflow task's wait for a worker   p50 ${ms(row.firstTaskWait.p50)}   p90 ${ms(row.firstTaskWait.p90)}   max ${ms(row.firstTaskWait.max)}`,
    );
    console.log(`  cpu      ms per task, creates: ${formatCpu(cpuCreates)}`);
    console.log(`           ms per task, from the queries to the last completion: ${formatCpu(cpuCompletion)}`);
    console.log(
      gatewayProc
        ? `           ms per task over its life: dev server ${life.temporal.toFixed(1)} + gateway (API and worker in one process) ${life.gateway.toFixed(1)} = ${(life.temporal + life.gateway).toFixed(1)}`
        : `           ms per task over its life: dev server ${life.temporal.toFixed(1)} + worker ${life.worker.toFixed(1)} = ${(life.temporal + life.worker).toFixed(1)}; api ${life.api.toFixed(1)} (all three ${(life.temporal + life.worker + life.api).toFixed(1)})`,
    );
    const floorMs = floor.devServerMs + floor.workerMs;
    const taskMs = life.temporal + (gatewayProc ? life.gateway : life.worker);
    console.log(
      `           floor: a task of one empty activity on the same dev server (${floor.tasks} of them, ${floor.historyEvents} events each, ${floor.perSecond.toFixed(1)}/s): dev server ${floor.devServerMs.toFixed(1)} + worker ${floor.workerMs.toFixed(1)} = ${floorMs.toFixed(1)} (a gateway task costs ${(taskMs / floorMs).toFixed(1)}x)`,
    );
    console.log(`  history  events per task (${history.sampled} sampled): min ${history.min}, p50 ${history.p50}, max ${history.max}`);
    if (watch) console.log(`  watch    per task: ${formatWatchCounts(watch)}`);
    if (waits) console.log(`  waits    ${formatTemporalWaits(waits, waitsSeconds)}`);
    console.log(
      gatewayProc
        ? `  memory   peak RSS gateway ${row.peakRssApiMiB.toFixed(0)} MiB (idle at start: ${startRss.api.toFixed(0)})\n`
        : `  memory   peak RSS api ${row.peakRssApiMiB.toFixed(0)} MiB, worker ${row.peakRssWorkerMiB.toFixed(0)} MiB (idle at start: api ${startRss.api.toFixed(0)}, worker ${startRss.worker.toFixed(0)})\n`,
    );
  }
  const paths = await benchOtherPaths({ api, auth, simUrl, temporal, n: opts.tasks[0] ?? 100, opts });
  await temporal.connection.close();
  console.log(`results written to ${writeBenchResults('video', { options: opts, results, paths })}`);
}

/** /v1/videos (multipart) and streamed chat completions, measured on their own. */
async function benchOtherPaths(args: { api: string; auth: Record<string, string>; simUrl: string; temporal: Client; n: number; opts: Options }) {
  const { api, auth, simUrl, temporal, n, opts } = args;
  const ids: string[] = [];
  const createLatencies: number[] = [];
  const startedAt = performance.now();
  await pool(
    Array.from({ length: n }, (_, i) => i),
    opts.concurrency,
    async (i) => {
      const form = new FormData();
      for (const [k, v] of Object.entries({ model: 'motion-2', prompt: `videos ${i} [sim:ms=${opts.jobMs}]`, seconds: '4', size: '480x480' })) form.set(k, v);
      const t0 = performance.now();
      const res = await fetch(`${api}/v1/videos`, { method: 'POST', headers: auth, body: form });
      const body = (await res.json()) as { id?: string };
      createLatencies.push(performance.now() - t0);
      if (body.id) ids.push(body.id);
    },
  );
  const createsPerSecond = n / ((performance.now() - startedAt) / 1000);
  const retrieveLatencies: number[] = [];
  const until = performance.now() + (opts.querySeconds * 1000) / 2;
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      while (performance.now() < until) {
        const t0 = performance.now();
        const res = await fetch(`${api}/v1/videos/${encodeURIComponent(ids[Math.floor(Math.random() * ids.length)]!)}`, { headers: auth });
        await res.arrayBuffer();
        retrieveLatencies.push(performance.now() - t0);
      }
    }),
  );
  console.log(`/v1/videos (multipart), ${n} tasks`);
  console.log(`  create   ${createsPerSecond.toFixed(1)} tasks/s   p50 ${ms(percentile(createLatencies, 50))}   p99 ${ms(percentile(createLatencies, 99))}`);
  console.log(`  retrieve ${retrieveLatencies.length} reads   p50 ${ms(percentile(retrieveLatencies, 50))}   p99 ${ms(percentile(retrieveLatencies, 99))}\n`);

  // Streams: shorter jobs, one client per stream, all at once.
  const streams = Math.min(50, n);
  const streamJobMs = Math.max(3000, Math.floor(opts.jobMs / 3));
  const burst = await chatStreamBurst(api, auth, { streams, jobMs: streamJobMs });
  const firstChunk = burst.firstChunkMs;
  const streamErrors = burst.errors;
  const urlLag = await Promise.all(burst.outcomes.map(async (o) => o.urlAt - ((await upstreamJobOf(temporal, simUrl, o.taskId)).completedAt ?? NaN)));
  console.log(`chat completions, ${streams} concurrent streams (job ${streamJobMs} ms)`);
  console.log(`  first chunk (task_id)   p50 ${ms(percentile(firstChunk, 50))}   p99 ${ms(percentile(firstChunk, 99))}`);
  console.log(
    `  lag      upstream completed -> video_url event   p50 ${ms(percentile(urlLag, 50))}   p99 ${ms(percentile(urlLag, 99))}   (${urlLag.length} streams, ${streamErrors} errors)\n`,
  );
  return {
    videos: {
      tasks: n,
      createsPerSecond,
      createP50: percentile(createLatencies, 50),
      createP99: percentile(createLatencies, 99),
      retrieveP50: percentile(retrieveLatencies, 50),
      retrieveP99: percentile(retrieveLatencies, 99),
    },
    streams: {
      streams,
      firstChunkP50: percentile(firstChunk, 50),
      firstChunkP99: percentile(firstChunk, 99),
      urlLagP50: percentile(urlLag, 50),
      urlLagP99: percentile(urlLag, 99),
      errors: streamErrors,
    },
  };
}

bench.run(main);
