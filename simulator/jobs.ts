/**
 * The job model. A job is a plain object; its status and progress are pure functions of the clock,
 * its creation time, its duration and its fault markers. Nothing is scheduled per job (no timers),
 * so thousands of jobs in flight cost only their Map entries, and a poll does no writes except the
 * fault read counters of jobs that asked for poll/content faults.
 *
 * A job's id carries its creation time, duration, outcome and what the protocol answers with
 * (job-ids.ts), so a job this process did not create (an earlier process's, before a crash) is
 * recovered from its id alone; what an id cannot hold (the prompt, the request's parameters,
 * fault counters, the Idempotency-Key) is known only to the process that created the job.
 */
import type { Markers } from './faults';

export type Flavor = 'veo' | 'openai';
/** How a job ends; `filtered` is Veo's "completed with RAI-filtered media and no samples". */
export type Outcome = 'success' | 'fail' | 'filtered';
export type JobStatus = 'queued' | 'in_progress' | 'completed' | 'failed';

export interface Job {
  id: string;
  flavor: Flavor;
  /** null for a Veo job recovered from its id without its model at hand (see modelHash). */
  model: string | null;
  /** null for a job recovered from its id. */
  prompt: string | null;
  /** ms epoch. */
  createdAt: number;
  durationMs: number;
  outcome: Outcome;
  /** Veo jobs recovered from their id: the 16-bit hash of the model the id carries. */
  modelHash?: number;
  idempotencyKey: string | null;
  remixedFrom: string | null;
  /** OpenAI: the `seconds` field. Veo: durationSeconds as a string, or null when not given. */
  seconds: string | null;
  /** OpenAI: the `size` field. Veo: the aspect ratio. */
  size: string;
  /** Veo: how many samples (files) a successful operation returns. */
  sampleCount: number;
  /** A JSON-safe summary of the request's parameters (no image bytes), for /_sim/jobs. */
  params: Readonly<Record<string, unknown>>;
  /** Requested poll/content faults and how many reads have happened so far. */
  poll429: number;
  poll5xx: number;
  content5xx: number;
  pollReads: number;
  contentReads: number;
  /** `[sim:cancellable]`: a DELETE may cancel the job while it runs (known only to the process that created it). */
  cancellable: boolean;
  /** `[sim:video-kib=N]`: the finished video's size (known only to the process that created it); 0: the sample. */
  videoKib: number;
}

export interface NewJob {
  /** Makes the id from the job's other fields (job-ids.ts: the id carries its state). */
  makeId(job: Omit<Job, 'id'>): string;
  flavor: Flavor;
  model: string;
  prompt: string;
  now: number;
  defaultJobMs: number;
  markers: Markers;
  idempotencyKey: string | null;
  remixedFrom?: string | null;
  seconds?: string | null;
  size: string;
  sampleCount?: number;
  params?: Record<string, unknown>;
}

export function newJob(input: NewJob): Job {
  const m = input.markers;
  // `[sim:filtered]` is a Veo notion; the OpenAI protocol has no filtered state, so it fails there.
  let outcome: Outcome = 'success';
  if (m.filtered) outcome = input.flavor === 'veo' ? 'filtered' : 'fail';
  if (m.fail) outcome = 'fail';
  const job: Omit<Job, 'id'> = {
    flavor: input.flavor,
    model: input.model,
    prompt: input.prompt,
    createdAt: input.now,
    durationMs: m.jobMs ?? input.defaultJobMs,
    outcome,
    idempotencyKey: input.idempotencyKey,
    remixedFrom: input.remixedFrom ?? null,
    seconds: input.seconds ?? null,
    size: input.size,
    sampleCount: input.sampleCount ?? 1,
    params: input.params ?? {},
    poll429: m.poll429,
    poll5xx: m.poll5xx,
    content5xx: m.content5xx,
    pollReads: 0,
    contentReads: 0,
    cancellable: m.cancellable,
    videoKib: m.videoKib,
  };
  return { id: input.makeId(job), ...job };
}

/** A job rebuilt from its id: what the id carries, and nothing the request said beyond it. */
export function recoveredJob(
  fields: Pick<Job, 'id' | 'flavor' | 'model' | 'createdAt' | 'durationMs' | 'outcome' | 'seconds' | 'size' | 'sampleCount'> & { modelHash?: number },
): Job {
  return {
    ...fields,
    prompt: null,
    idempotencyKey: null,
    remixedFrom: null,
    params: {},
    poll429: 0,
    poll5xx: 0,
    content5xx: 0,
    pollReads: 0,
    contentReads: 0,
    cancellable: false,
    videoKib: 0,
  };
}

/** The first 10% of a job's duration is spent `queued`, like a provider's queue wait. */
const QUEUED_FRACTION = 0.1;

/** ms epoch at which the job reaches its terminal state (completed or failed). */
export function terminalAt(job: Job): number {
  return job.createdAt + job.durationMs;
}

export function isTerminal(job: Job, now: number): boolean {
  return now >= terminalAt(job);
}

export function statusAt(job: Job, now: number): JobStatus {
  const elapsed = now - job.createdAt;
  if (elapsed >= job.durationMs) return job.outcome === 'success' ? 'completed' : 'failed';
  return elapsed < job.durationMs * QUEUED_FRACTION ? 'queued' : 'in_progress';
}

/**
 * Integer percent: 0 while queued, then an ease-out curve (fast start, slow finish, as providers
 * report it) capped at 99 until the job completes; 100 only when completed. A failed job keeps the
 * value it had reached. floor() of a monotonic curve keeps it monotonic between polls.
 */
export function progressAt(job: Job, now: number): number {
  const elapsed = Math.min(now - job.createdAt, job.durationMs);
  if (now >= terminalAt(job) && job.outcome === 'success') return 100;
  const queued = job.durationMs * QUEUED_FRACTION;
  const running = job.durationMs - queued;
  if (elapsed < queued || running <= 0) return 0;
  const t = Math.min(1, (elapsed - queued) / running);
  const eased = 1 - (1 - t) * (1 - t);
  return Math.min(99, Math.floor(eased * 100));
}

export interface Character {
  id: string;
  /** null for a character recovered from its id. */
  name: string | null;
  /** ms epoch. */
  createdAt: number;
  selfPortrait?: boolean;
}

/** Rebuilds what an id carries (each protocol module knows its own id shapes), or undefined. */
export interface Recovery {
  job(id: string): Job | undefined;
  character(id: string): Character | undefined;
}

/**
 * All simulator state that /_sim/reset clears, other than counters. Lookups fall back to the
 * ids: a job or character of an earlier process is rebuilt from its id on each read (not
 * stored, so reads of unknown ids cost no memory), unless it was deleted or reset here.
 */
export class JobStore {
  private readonly jobs = new Map<string, Job>();
  private readonly characters = new Map<string, Character>();
  private readonly deleted = new Set<string>();
  /** ms epoch of the last /_sim/reset: recovered jobs and characters from before it are gone. */
  private forgottenBefore = 0;

  constructor(private readonly recovery: Recovery = { job: () => undefined, character: () => undefined }) {}

  add(job: Job): void {
    this.jobs.set(job.id, job);
  }

  /**
   * An id `make` returns that no job or character of this process has. Ids of an earlier
   * process cannot collide: they carry an earlier creation time.
   */
  freshId(make: () => string): string {
    for (;;) {
      const id = make();
      if (!this.jobs.has(id) && !this.characters.has(id)) return id;
    }
  }

  get(id: string): Job | undefined {
    const job = this.jobs.get(id);
    if (job || this.deleted.has(id)) return job;
    const recovered = this.recovery.job(id);
    return recovered && recovered.createdAt > this.forgottenBefore ? recovered : undefined;
  }

  delete(id: string): boolean {
    const known = this.get(id) !== undefined;
    this.jobs.delete(id);
    if (known) this.deleted.add(id);
    return known;
  }

  /** Jobs in creation order (Map preserves insertion order). */
  all(): IterableIterator<Job> {
    return this.jobs.values();
  }

  get size(): number {
    return this.jobs.size;
  }

  addCharacter(c: Character): void {
    this.characters.set(c.id, c);
  }

  getCharacter(id: string): Character | undefined {
    const character = this.characters.get(id);
    if (character) return character;
    const recovered = this.recovery.character(id);
    return recovered && recovered.createdAt > this.forgottenBefore ? recovered : undefined;
  }

  clear(now: number): void {
    this.jobs.clear();
    this.characters.clear();
    this.deleted.clear();
    this.forgottenBefore = now;
  }
}
