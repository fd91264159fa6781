/**
 * The Responses API's stored responses. A foreground response is complete when it is answered;
 * a background one moves queued -> in_progress -> completed (or failed) on the clock, like a
 * video job (jobs.ts): its status is a pure function of the time, its creation and its duration,
 * and its id carries those (job-ids.ts), so a restarted simulator still answers its polls.
 */
import { readResponseId, type ResponseFacts } from './job-ids';

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled' | 'incomplete';

export interface SimResponse {
  id: string;
  facts: ResponseFacts;
  model: string;
  /** The request fields the Response object repeats (instructions, tools, metadata, ...). */
  echo: Readonly<Record<string, unknown>>;
  /** The output items once the response is done. */
  output: ReadonlyArray<Record<string, unknown>>;
  /** How the answer ends when it is not failed or cancelled. */
  finish: 'completed' | 'incomplete';
  /** ms epoch of a cancel that came before the end, else null. */
  cancelledAt: number | null;
  /** Rebuilt from its id by a later simulator process: no prompt, so generic text. */
  recovered: boolean;
}

/** Like a provider's queue wait: the first 10% of a background response's duration is `queued`. */
const QUEUED_FRACTION = 0.1;

export function terminalAt(r: SimResponse): number {
  return r.facts.createdAt + r.facts.durationMs;
}

export function statusOf(r: SimResponse, now: number): ResponseStatus {
  if (r.cancelledAt !== null) return 'cancelled';
  const elapsed = now - r.facts.createdAt;
  if (elapsed < r.facts.durationMs) return elapsed < r.facts.durationMs * QUEUED_FRACTION ? 'queued' : 'in_progress';
  return r.facts.failed ? 'failed' : r.finish;
}

export function isDone(status: ResponseStatus): boolean {
  return status !== 'queued' && status !== 'in_progress';
}

/** What a later process knows of a response from its id alone. */
function recovered(id: string): SimResponse | undefined {
  const facts = readResponseId(id);
  if (!facts?.stored) return undefined;
  const text = 'Echo: (answered by an earlier simulator process)';
  return {
    id,
    facts,
    model: 'unknown',
    echo: {},
    output: [
      {
        id: `msg_${id.slice(5, 53)}`,
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
      },
    ],
    finish: 'completed',
    cancelledAt: null,
    recovered: true,
  };
}

/** Cleared by /_sim/reset, with the jobs. */
export class ResponseStore {
  private readonly byId = new Map<string, SimResponse>();
  private readonly deleted = new Set<string>();
  private forgottenBefore = 0;

  add(r: SimResponse): void {
    this.byId.set(r.id, r);
  }

  get(id: string): SimResponse | undefined {
    const known = this.byId.get(id);
    if (known || this.deleted.has(id)) return known;
    const r = recovered(id);
    if (!r || r.facts.createdAt <= this.forgottenBefore) return undefined;
    // Kept once read, so a cancel or a delete of a recovered response sticks.
    this.byId.set(id, r);
    return r;
  }

  /** The responses this process holds (created, or recovered by a read), for /_sim/responses. */
  all(): IterableIterator<SimResponse> {
    return this.byId.values();
  }

  delete(id: string): boolean {
    const known = this.get(id) !== undefined;
    this.byId.delete(id);
    if (known) this.deleted.add(id);
    return known;
  }

  clear(now: number): void {
    this.byId.clear();
    this.deleted.clear();
    this.forgottenBefore = now;
  }
}
