/**
 * What the gateway and its store process (embedded-server.ts) say to each other over the IPC
 * channel (Node's "advanced" serialization, so Dates, BigInts and byte arrays cross intact).
 */

export type StoreRequest =
  | { id: number; op: 'query'; text: string; params: unknown[]; tx?: number }
  | { id: number; op: 'begin' }
  | { id: number; op: 'end'; tx: number; commit: boolean }
  | { id: number; op: 'listen'; channel: string }
  | { id: number; op: 'close' };

/** A PostgreSQL error's fields that callers read (SQLSTATE code and friends). */
export interface StoreErrorFields {
  message: string;
  code?: string;
  detail?: string;
  constraint?: string;
}

export type StoreMessage =
  | { op: 'reply'; id: number; ok: true; value: unknown }
  | { op: 'reply'; id: number; ok: false; error: StoreErrorFields }
  | { op: 'notify'; channel: string; payload: string }
  | { op: 'ready' }
  | { op: 'failed'; error: string };

/** `init` creates the store and exits (initdb's memory goes with that process); `serve` answers requests. */
export type StoreMode = 'init' | 'serve';
