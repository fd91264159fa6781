/**
 * The load of the video benchmarks (bench:video, bench:video-ab): a wave of /v1/video/create
 * calls, a burst of streamed video chat completions and status reads, against one gateway API;
 * and the completion lag of the tasks once done.
 */
import type { Client } from '@temporalio/client';
import type { TaskState } from '../src/tasks/task';
import { upstreamJobOf } from '../test/support/upstream';

export const percentile = (values: number[], p: number): number => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

const sleepUntil = (at: number) => new Promise((r) => setTimeout(r, Math.max(0, at - performance.now())));

export async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

export interface CreateWave {
  ids: string[];
  latencies: number[];
  seconds: number;
  errors: number;
}

/** The models of a create wave unless told otherwise: one per simulated video protocol (Veo, OpenAI videos). */
export const WAVE_MODELS = ['vidgen3', 'motion-2'] as const;

/**
 * n JSON creates (`models` in turn, vidgen3 and motion-2 by default) by `concurrency` clients;
 * `rate` > 0 paces them at that many per second. `label` goes into the prompts, to tell runs
 * apart in logs. Each job lasts `jobMs`, plus with `spreadMs` a share of it spread evenly over
 * the tasks (task i: (i mod 100) hundredths), so that job ends do not all fall at one phase of
 * the poll interval.
 */
export async function createWave(
  api: string,
  auth: Record<string, string>,
  args: { n: number; concurrency: number; jobMs: number; spreadMs?: number; rate: number; label: string; models?: readonly string[] },
): Promise<CreateWave> {
  const models = args.models ?? WAVE_MODELS;
  const jobMsOf = (i: number) => args.jobMs + Math.floor(((i % 100) * (args.spreadMs ?? 0)) / 100);
  const wave: CreateWave = { ids: [], latencies: [], seconds: 0, errors: 0 };
  const startedAt = performance.now();
  await pool(
    Array.from({ length: args.n }, (_, i) => i),
    args.concurrency,
    async (i) => {
      if (args.rate > 0) await sleepUntil(startedAt + (i * 1000) / args.rate);
      const t0 = performance.now();
      const res = await fetch(`${api}/v1/video/create`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ model: models[i % models.length], prompt: `bench ${args.label}/${i} [sim:ms=${jobMsOf(i)}]`, images: [] }),
      });
      const body = (await res.json()) as { id?: string };
      wave.latencies.push(performance.now() - t0);
      if (res.status === 200 && body.id) wave.ids.push(body.id);
      else wave.errors++;
    },
  );
  wave.seconds = (performance.now() - startedAt) / 1000;
  return wave;
}

export interface StreamOutcome {
  /** ms from the request to the chunk that names the task */
  firstChunkMs: number;
  taskId: string;
  /** ms epoch at which the video_url event arrived */
  urlAt: number;
}

/**
 * `streams` streamed video chat completions (motion-2) sent at once; each is read to its end.
 * `firstChunkMs` has every stream that named its task, `outcomes` only those that also got
 * their video_url: a stream that broke later still had its first chunk.
 */
export async function chatStreamBurst(
  api: string,
  auth: Record<string, string>,
  args: { streams: number; jobMs: number },
): Promise<{ outcomes: StreamOutcome[]; firstChunkMs: number[]; errors: number }> {
  const outcomes: StreamOutcome[] = [];
  const firstChunkMs: number[] = [];
  let errors = 0;
  await Promise.all(
    Array.from({ length: args.streams }, async (_, i) => {
      const t0 = performance.now();
      const res = await fetch(`${api}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'motion-2', stream: true, messages: [{ role: 'user', content: `stream ${i} [sim:ms=${args.jobMs}]` }] }),
      });
      if (!res.body) return void errors++;
      let buffer = '';
      let taskId = '';
      let first = NaN;
      let urlAt = 0;
      for await (const piece of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += Buffer.from(piece).toString('utf8');
        if (!taskId && buffer.includes('task_id: ')) {
          first = performance.now() - t0;
          firstChunkMs.push(first);
          taskId = /task_id: ([^\\"]+)/.exec(buffer)?.[1] ?? '';
        }
        if (!urlAt && buffer.includes('video_url: ')) urlAt = Date.now();
      }
      if (!taskId || !urlAt) return void errors++;
      outcomes.push({ firstChunkMs: first, taskId, urlAt });
    }),
  );
  return { outcomes, firstChunkMs, errors };
}

/** Status reads' latencies (ms) and how many did not answer 200. */
interface ReadTally {
  latencies: number[];
  errors: number;
}

/**
 * One status read (GET /v1/video/query) of a random task of `ids`, counted into `tally` with its
 * latency from `since` (the read's start, or its scheduled time).
 */
async function readRandomTask(api: string, auth: Record<string, string>, ids: string[], tally: ReadTally, since = performance.now()): Promise<void> {
  const id = ids[Math.floor(Math.random() * ids.length)]!;
  try {
    const res = await fetch(`${api}/v1/video/query?id=${encodeURIComponent(id)}`, { headers: auth });
    await res.arrayBuffer();
    tally.latencies.push(performance.now() - since);
    if (res.status !== 200) tally.errors++;
  } catch {
    tally.errors++;
  }
}

/**
 * `concurrency` clients reading random tasks of `ids` for `seconds`, each read after the last
 * came back: each read's latency, and how many were not 200.
 */
export async function statusReads(
  api: string,
  auth: Record<string, string>,
  ids: string[],
  args: { seconds: number; concurrency: number },
): Promise<ReadTally> {
  const tally: ReadTally = { latencies: [], errors: 0 };
  if (ids.length === 0) return tally;
  const until = performance.now() + args.seconds * 1000;
  await Promise.all(
    Array.from({ length: args.concurrency }, async () => {
      while (performance.now() < until) await readRandomTask(api, auth, ids, tally);
    }),
  );
  return tally;
}

/**
 * Status reads of random tasks at a fixed rate, open loop: each read leaves at its scheduled
 * time whatever came back, and its latency counts from then, so it is what a client sees at that
 * rate (a closed loop of clients measures the server's capacity instead: its latency is
 * clients / throughput).
 */
export async function statusReadsAtRate(
  api: string,
  auth: Record<string, string>,
  ids: string[],
  args: { seconds: number; rate: number; describe?: (id: string) => Promise<unknown> },
): Promise<ReadTally & { describes: ReadTally }> {
  const tally = { latencies: [] as number[], errors: 0, describes: { latencies: [] as number[], errors: 0 } };
  if (ids.length === 0 || args.rate <= 0) return tally;
  const reads: Promise<void>[] = [];
  const startedAt = performance.now();
  const total = Math.round(args.seconds * args.rate);
  for (let i = 0; i < total; i++) {
    const due = startedAt + (i * 1000) / args.rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    reads.push(readRandomTask(api, auth, ids, tally, due));
    // The yardstick: the describe a status read makes, sent by the bench to the dev server itself
    // at the same moments, so what the gateway adds to the reads can be told from the server's queue.
    if (args.describe) reads.push(timed(() => args.describe!(ids[Math.floor(Math.random() * ids.length)]!), tally.describes, due));
  }
  await Promise.all(reads);
  return tally;
}

async function timed(call: () => Promise<unknown>, tally: ReadTally, since: number): Promise<void> {
  try {
    await call();
    tally.latencies.push(performance.now() - since);
  } catch {
    tally.errors++;
  }
}

/** A completed task's lag: its upstream job completed at `upstreamDone` (ms epoch), its workflow closed `lag` ms later. */
export interface CompletionLag {
  id: string;
  lag: number;
  upstreamDone: number;
}

/**
 * Completion lag of finished tasks: from the moment the simulator's job completed to the
 * moment the task's workflow closed. Tasks that did not complete are counted, not timed.
 */
export async function completionLags(temporal: Client, simUrl: string, ids: string[]): Promise<{ done: CompletionLag[]; notCompleted: number }> {
  const done: CompletionLag[] = [];
  let notCompleted = 0;
  await pool(ids, 20, async (id) => {
    const d = await temporal.workflow.getHandle(id).describe();
    const state = d.memo?.state as TaskState | undefined;
    if (state?.status !== 'completed' || !d.closeTime) return void notCompleted++;
    const upstreamDone = (await upstreamJobOf(temporal, simUrl, id)).completedAt ?? NaN;
    done.push({ id, lag: d.closeTime.getTime() - upstreamDone, upstreamDone });
  });
  return { done, notCompleted };
}
