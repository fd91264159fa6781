/**
 * The store process: the embedded store's PGlite, run apart from the gateway so that its
 * WebAssembly heap and its CPU stay out of the process that serves requests (the API's event
 * loop never waits on a query's execution, only on its answer). Started by embedded-db.ts with
 * an IPC channel; one request at a time reaches PGlite, as one connection would, and a
 * transaction holds it until it ends.
 *
 * It exits as soon as its parent is gone, without closing PGlite (a crash PostgreSQL recovers
 * from its WAL): the parent's next store process must never find this one still writing.
 */
import path from 'node:path';
import type { PGlite, Transaction } from '@electric-sql/pglite';
import { acquireEmbeddedLock } from './embedded-lock';
import { openPGlite } from './embedded-pglite';
import type { StoreErrorFields, StoreMessage, StoreMode, StoreRequest } from './embedded-protocol';

const send = (message: StoreMessage): void => {
  if (process.connected) process.send?.(message);
};

/** Thrown inside a transaction's callback to make PGlite roll it back. */
class Rollback extends Error {}

function errorFields(err: unknown): StoreErrorFields {
  const e = err as Partial<StoreErrorFields> & { message?: string };
  return { message: e.message ?? String(err), code: e.code, detail: e.detail, constraint: e.constraint };
}

async function acquireEngineLock(dir: string): Promise<() => void> {
  // A store process of a parent that just died may take a moment to exit.
  const file = path.join(path.dirname(dir), `${path.basename(dir)}.engine.lock`);
  for (let waited = 0; ; waited += 100) {
    try {
      return acquireEmbeddedLock(file);
    } catch (err) {
      if (waited >= 10_000) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function serve(pg: PGlite, release: () => void): void {
  const txs = new Map<number, { tx: Transaction; end: (commit: boolean) => void; done: Promise<void> }>();
  let nextTx = 1;

  const handle = async (req: StoreRequest): Promise<unknown> => {
    switch (req.op) {
      case 'query': {
        const on = req.tx === undefined ? pg : txs.get(req.tx)?.tx;
        if (!on) throw new Error(`transaction ${req.tx} is not open`);
        return (await on.query(req.text, req.params)).rows;
      }
      case 'begin': {
        const id = nextTx++;
        let began: () => void = () => undefined;
        const open = new Promise<void>((resolve) => (began = resolve));
        let end: (commit: boolean) => void = () => undefined;
        const ended = new Promise<boolean>((resolve) => (end = resolve));
        const done = pg
          .transaction(async (tx) => {
            txs.set(id, { tx, end, done });
            began();
            if (!(await ended)) throw new Rollback();
          })
          .catch((err: unknown) => {
            if (!(err instanceof Rollback)) throw err;
          })
          .finally(() => txs.delete(id));
        await Promise.race([open, done]);
        return id;
      }
      case 'end': {
        const open = txs.get(req.tx);
        if (!open) throw new Error(`transaction ${req.tx} is not open`);
        open.end(req.commit);
        await open.done;
        return null;
      }
      case 'listen':
        await pg.listen(req.channel, (payload) => send({ op: 'notify', channel: req.channel, payload }));
        return null;
      case 'close':
        await pg.close();
        release();
        setImmediate(() => process.exit(0));
        return null;
    }
  };

  process.on('message', (req: StoreRequest) => {
    handle(req).then(
      (value) => send({ op: 'reply', id: req.id, ok: true, value }),
      (err: unknown) => send({ op: 'reply', id: req.id, ok: false, error: errorFields(err) }),
    );
  });
}

async function main(): Promise<void> {
  const [dir, mode] = process.argv.slice(2) as [string, StoreMode];
  // The parent gone (even by SIGKILL) closes the channel: stop at once, see above.
  process.on('disconnect', () => process.exit(0));
  // This process lives as long as its parent, which closes it last when it stops. A terminal's
  // Ctrl-C (SIGINT to the whole process group) or a SIGTERM to the group reaches it too, and
  // leaving then would take the store from under the parent's own stop (its text holds' retirement,
  // its journal's last lines). SIGKILL still ends it, and the parent's exit does.
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => undefined);
  let release: () => void = () => undefined;
  try {
    release = await acquireEngineLock(dir);
    const pg = await openPGlite(dir);
    if (mode === 'init') {
      await pg.close();
      release();
      send({ op: 'ready' });
      process.disconnect();
      return;
    }
    serve(pg, release);
    send({ op: 'ready' });
  } catch (err) {
    release();
    send({ op: 'failed', error: (err as Error).message });
    process.exitCode = 1;
    process.disconnect();
  }
}

void main();
