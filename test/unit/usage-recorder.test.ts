/**
 * The usage recorder (src/billing/usage.ts) against a store that refuses every statement: what
 * it could not write stays in the journal, and nothing of it keeps a stopping process up.
 */
import pino from 'pino';
import { SettlementJournal } from '../../src/billing/settlement-journal';
import { DEFAULT_PRICES } from '../../src/billing/prices';
import { UsageRecorder } from '../../src/billing/usage';
import type { Db } from '../../src/store/db';
import { waitFor } from '../support/ports';
import { journalFolder } from '../support/journal-folder';

const folder = journalFolder('recorder-');

/** Runs fn with every timer it starts tracked; returns the ones still pending when fn is done. */
async function pendingTimersOf(fn: () => Promise<void>): Promise<NodeJS.Timeout[]> {
  const pending = new Set<NodeJS.Timeout>();
  const realSet = globalThis.setTimeout;
  const realClear = globalThis.clearTimeout;
  const tracked = (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]): NodeJS.Timeout => {
    const timer = realSet(() => {
      pending.delete(timer);
      callback(...args);
    }, ms);
    pending.add(timer);
    return timer;
  };
  globalThis.setTimeout = tracked as typeof setTimeout;
  globalThis.clearTimeout = ((timer: NodeJS.Timeout | undefined) => {
    if (timer) pending.delete(timer);
    realClear(timer);
  }) as typeof clearTimeout;
  try {
    await fn();
  } finally {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
  }
  return [...pending];
}

test('a store that refuses every write: close() gives up after its timeout, the usage stays in the journal, and no timer keeps the process up', async () => {
  let attempts = 0;
  const refuse = async (): Promise<never> => {
    attempts++;
    throw new Error('store away');
  };
  const away: Db = { kind: 'embedded', query: refuse, transaction: refuse, listen: refuse, close: async () => undefined };
  const left = await pendingTimersOf(async () => {
    const usage = new UsageRecorder(away, pino({ level: 'silent' }), DEFAULT_PRICES, { journal: new SettlementJournal(folder.dir, 'gw_me'), flushMs: 0 });
    await usage.settle({
      holdId: 'hold_1',
      keyId: 'key_1',
      usage: {
        requestId: 'req',
        keyId: 'key_1',
        model: 'cm-sonnet-4.5',
        channel: 'c',
        endpoint: 'messages',
        streamed: false,
        outcome: 'completed',
        inputTokens: 10,
        outputTokens: 5,
        cacheCreationTokens: 0,
        cacheReadTokens: 0,
      },
    });
    await waitFor('a refused write', async () => attempts > 0, 5000, 5);
    await usage.close(50);
  });
  expect(folder.lines()).toHaveLength(1);
  // The write is retried on a timer (still pending here), which must not hold a stopping process open.
  expect(left.length).toBeGreaterThan(0);
  expect(left.filter((t) => t.hasRef())).toEqual([]);
});
