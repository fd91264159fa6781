/**
 * A task runs only while its charge is live (issue 17, item 3), on the real stack: a workflow
 * whose charge was refunded before it ran is refused (no upstream job); a task whose charge was
 * refunded while it ran is refused at completion (its file is not published); and a charge
 * taken ahead of a slow character is not taken by the reconciler for a lost start.
 *
 * The refunds are made through the real BillingStore on the gateway's database, as the
 * reconciler or an operator's stopped run would make them; the workflow's reaction is the
 * subject.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_PRICES, videoTaskPrice } from '../../src/billing/prices';
import { BillingStore } from '../../src/billing/ledger';
import type { Db } from '../../src/store/db';
import { openPostgresDb } from '../../src/store/postgres-db';
import { auditMismatches, balanceOf, taskEntries } from '../support/billing';
import { call, createTask, queryTask, waitForTerminal } from '../support/client';
import { nonce } from '../support/text';
import { slowClipServer } from '../support/clips';
import { startGateway, type Gateway } from '../support/stack';

const FAST = videoTaskPrice(DEFAULT_PRICES, { model: 'vidgen3-fast' });
const MOTION = videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2', seconds: 10 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function simJobs(gw: Gateway, prompt: string): Promise<unknown[]> {
  return (await call<{ data: unknown[] }>(`${gw.simulatorUrl}/_sim/jobs?prompt=${encodeURIComponent(prompt)}`)).body.data;
}

describe('the workflow claims its charge', () => {
  let gw: Gateway;
  let db: Db;
  let billing: BillingStore;
  beforeAll(async () => {
    gw = await startGateway({ noWorker: true });
    db = await openPostgresDb(gw.databaseUrl, 2);
    billing = new BillingStore(db);
  }, 120_000);
  afterAll(async () => {
    if (gw) expect(await auditMismatches(gw.url)).toEqual([]);
    await db?.close();
    await gw?.stop();
  }, 120_000);

  test('a task whose charge was refunded before its workflow ran fails with charge_refunded and submits nothing', async () => {
    const { id, key } = await gw.issueKeyWithId('refused-start', { quota: 10 * FAST });
    const prompt = `never paid for ${nonce()} [sim:ms=300]`;
    // No worker yet: the workflow exists but has not run its first step.
    const created = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt });
    expect(await billing.refundTask(created.id, 'the reconciler took it for a lost start', 'refundUnstarted')).toBe('moved');
    await gw.startWorker();
    const { final } = await waitForTerminal(gw.url, key, created.id);
    expect(final.status).toBe('failed');
    expect(final.error).toMatchObject({ code: 'charge_refunded' });
    expect(await simJobs(gw, prompt)).toEqual([]);
    expect(await taskEntries(gw.url, id, created.id)).toEqual([`charge:${-FAST}`, `refund:${FAST}`]);
    expect(await balanceOf(gw.url, id)).toBe(10 * FAST);
  });

  test('a task whose charge was refunded while it ran fails at completion, and its file is not published', async () => {
    const { id, key } = await gw.issueKeyWithId('refused-end', { quota: 10 * FAST });
    const created = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: `paid, then refunded ${nonce()} [sim:ms=4000]` });
    for (let i = 0; i < 100 && (await queryTask(gw.url, key, created.id)).body.status !== 'processing'; i++) await sleep(100);
    expect(await billing.refundTask(created.id, 'an operator stopped the run')).toBe('moved');
    const { final } = await waitForTerminal(gw.url, key, created.id);
    expect(final.status).toBe('failed');
    expect(final.error).toMatchObject({ code: 'charge_refunded' });
    expect(final.video_url).toBeNull();
    const file = path.join(gw.dataDir, 'storage', 'videos', created.id.replace(':', '/') + '.mp4');
    expect(fs.existsSync(file)).toBe(false);
    expect(await taskEntries(gw.url, id, created.id)).toEqual([`charge:${-FAST}`, `refund:${FAST}`]);
  });
});

describe('a charge taken ahead of a slow character', () => {
  let gw: Gateway;
  let clips: { base: string; close: () => void };
  beforeAll(async () => {
    // The clip answers after 14 s: longer than the reconciler's start window below (11 s).
    clips = await slowClipServer(14_000);
    gw = await startGateway({ env: { TEMPORAL_RPC_TIMEOUT_MS: '500', BILLING_RECONCILE_SECONDS: '1' } });
  }, 120_000);
  afterAll(async () => {
    if (gw) expect(await auditMismatches(gw.url)).toEqual([]);
    await gw?.stop();
    clips?.close();
  }, 120_000);

  test('is not refunded by the reconciler while the character is made; the task runs paid', async () => {
    const { id, key } = await gw.issueKeyWithId('ahead', { quota: 10 * MOTION });
    const form = new FormData();
    form.set('model', 'motion-2');
    form.set('prompt', `a saved character ${nonce()} [sim:ms=300]`);
    form.set('seconds', '10');
    form.set('size', '720x1280');
    form.set('character_url', `${clips.base}/clip.mp4`);
    form.set('character_create', JSON.stringify({ save_to_library: true }));
    const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    const body = (await res.json()) as { id: string };
    expect(res.status).toBe(200);
    const { final } = await waitForTerminal(gw.url, key, body.id);
    expect(final.status).toBe('completed');
    // Several reconciler passes ran meanwhile; none refunded the task.
    await sleep(2000);
    expect(await taskEntries(gw.url, id, body.id)).toEqual([`charge:${-MOTION}`]);
  }, 120_000);
});
