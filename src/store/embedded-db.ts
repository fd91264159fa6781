/**
 * The embedded store as the gateway sees it: the Db seam over a store process of its own
 * (embedded-server.ts, PGlite inside). PGlite's WebAssembly PostgreSQL takes a few hundred MiB
 * that would otherwise sit in the process serving requests, and runs each query on the thread
 * it is called from; in a child it costs the gateway one IPC round trip per statement.
 *
 * The directory belongs to one opener (embedded-lock.ts: a second one is a clear error); the
 * store process also locks it for itself, so a store process of a gateway that was just
 * killed is gone before another starts. A store process that dies is started again at once;
 * the statements it had in flight fail, and those sent meanwhile wait for the new one.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../config/paths';
import type { Db, Sql } from './db';
import { acquireEmbeddedLock } from './embedded-lock';
import type { StoreErrorFields, StoreMessage, StoreMode, StoreRequest } from './embedded-protocol';

/** Start-up, recovery after a crash included, may take this long. */
const START_DEADLINE_MS = 60_000;

/**
 * The store process's V8 flags; none are inherited (jest's, the inspector's). PostgreSQL as
 * WebAssembly is most of that process's memory, and V8's optimizing tier is the larger part of
 * what it adds: optimized copies of the hot functions and the compiler's zones, left resident in
 * per-thread malloc arenas. Baseline code only (Liftoff, no tier-up), compiled on the main
 * thread, holds the process at ~126 MiB instead of 160-220, for ~5-8 % more CPU per statement
 * (a hold-and-settle transaction: 0.70 vs 0.65-0.70 ms), which the batched ledger writes
 * amortise. A small young generation: the process holds little on its JavaScript heap.
 */
const STORE_PROCESS_FLAGS = ['--liftoff-only', '--single-threaded', '--max-semi-space-size=1'];

/** A request before the client numbers it (Omit distributed over the union). */
type WithoutId<R> = R extends StoreRequest ? Omit<R, 'id'> : never;
type RequestBody = WithoutId<StoreRequest>;

/** The compiled store process: next to this file when running compiled, else in dist/. */
function serverScript(): string {
  const here = path.join(__dirname, 'embedded-server.js');
  return fs.existsSync(here) ? here : path.join(projectRoot(), 'dist', 'src', 'store', 'embedded-server.js');
}

/** An error from the store with PostgreSQL's fields (code = SQLSTATE) kept. */
export class StoreError extends Error {
  code?: string;
  detail?: string;
  constraint?: string;
  constructor(fields: StoreErrorFields) {
    super(fields.message);
    Object.assign(this, { code: fields.code, detail: fields.detail, constraint: fields.constraint });
  }
}

class StoreProcess {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly exited: Promise<void>;

  private constructor(
    readonly child: ChildProcess,
    onNotify: (channel: string, payload: string) => void,
  ) {
    child.on('message', (m: StoreMessage) => {
      if (m.op === 'notify') onNotify(m.channel, m.payload);
      if (m.op !== 'reply') return;
      const waiter = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.ok) waiter?.resolve(m.value);
      else waiter?.reject(new StoreError(m.error));
    });
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        const gone = new Error(`the embedded store process exited (${signal ?? `code ${code}`})`);
        for (const waiter of this.pending.values()) waiter.reject(gone);
        this.pending.clear();
        resolve();
      }),
    );
  }

  static async start(dir: string, mode: StoreMode, onNotify: (channel: string, payload: string) => void): Promise<StoreProcess> {
    const script = serverScript();
    if (!fs.existsSync(script)) throw new Error(`the embedded store's process is missing at ${script}: run \`npm run build\``);
    const child = fork(script, [dir, mode], {
      execArgv: STORE_PROCESS_FLAGS,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const store = new StoreProcess(child, onNotify);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the embedded store did not start within ${START_DEADLINE_MS / 1000} s`));
      }, START_DEADLINE_MS);
      const settle = (err?: Error) => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      child.on('message', (m: StoreMessage) => {
        if (m.op === 'ready') settle();
        if (m.op === 'failed') settle(new Error(m.error));
      });
      void store.exited.then(() => settle(new Error('the embedded store process exited while starting')));
    });
    return store;
  }

  request(body: RequestBody): Promise<unknown> {
    if (!this.child.connected) return Promise.reject(new Error('the embedded store process is not running'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // A store process that died a moment ago is still `connected` until its exit is seen: the
      // send then fails with EPIPE, which without this callback is an 'error' event on the child,
      // and an unheard one would take the whole gateway down with it.
      this.child.send({ ...body, id } as StoreRequest, (err) => {
        if (!err) return;
        this.pending.delete(id);
        reject(new Error(`the embedded store process is not running (${err.message})`));
      });
    });
  }
}

export async function openEmbeddedDb(dir: string): Promise<Db> {
  fs.mkdirSync(dir, { recursive: true });
  const release = acquireEmbeddedLock(path.join(path.dirname(dir), `${path.basename(dir)}.lock`));
  const listeners = new Map<string, Array<(payload: string) => void>>();
  const onNotify = (channel: string, payload: string) => listeners.get(channel)?.forEach((fn) => fn(payload));
  let closing = false;
  let current: Promise<StoreProcess>;
  const start = (): Promise<StoreProcess> => {
    current = StoreProcess.start(dir, 'serve', onNotify).then(async (store) => {
      // Listening is part of the session: a restarted store listens again.
      for (const channel of listeners.keys()) await store.request({ op: 'listen', channel });
      void store.exited.then(() => {
        if (!closing) void start().catch(() => undefined);
      });
      return store;
    });
    return current;
  };
  try {
    // Created by a process of its own: initdb's memory leaves with it.
    if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) await (await StoreProcess.start(dir, 'init', onNotify)).exited;
    await start();
  } catch (err) {
    release();
    throw err;
  }
  const call = async (body: RequestBody): Promise<unknown> => (await current).request(body);
  return {
    kind: 'embedded',
    ...sqlOver(call),
    async transaction(fn) {
      const store = await current;
      const tx = (await store.request({ op: 'begin' })) as number;
      let result;
      try {
        // Its statements go to the store process that opened it, never to a restarted one.
        result = await fn(sqlOver((body) => store.request(body), tx));
      } catch (err) {
        await store.request({ op: 'end', tx, commit: false }).catch(() => undefined);
        throw err;
      }
      await store.request({ op: 'end', tx, commit: true });
      return result;
    },
    async listen(channel, onPayload) {
      const fns = listeners.get(channel) ?? [];
      fns.push(onPayload);
      if (fns.length === 1) {
        listeners.set(channel, fns);
        await call({ op: 'listen', channel });
      }
    },
    async close() {
      closing = true;
      const store = await current.catch(() => null);
      if (store?.child.connected) {
        await store.request({ op: 'close' }).catch(() => undefined);
        await store.exited;
      }
      release();
    },
  };
}

function sqlOver(send: (body: RequestBody) => Promise<unknown>, tx?: number): Sql {
  return {
    async query<R extends object>(text: string, params: readonly unknown[] = []) {
      return (await send({ op: 'query', text, params: [...params], tx })) as R[];
    },
  };
}
