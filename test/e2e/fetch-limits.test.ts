/**
 * Fetches of user URLs on the real stack (issue 17, bounded work): a reference image or a
 * character clip whose server drips its bytes is cut off at FETCH_TIMEOUT_MS and retried,
 * never holding a worker slot for minutes; one key's fetches hold at most FETCH_MAX_PER_KEY of
 * the worker's activity slots, so another key's task completes meanwhile; a terminated task's
 * fetch stops (through the activity's heartbeat) long before its deadline; and no temporary
 * file is left behind.
 *
 * The URLs are served by a server in this test that sends a PNG signature and then one byte a
 * second for as long as the connection stays open: every connection it sees closed was closed
 * by the gateway.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { THUMBNAIL_PNG } from '../../simulator/assets';
import { call, createTask, queryTask, waitForTerminal } from '../support/client';
import { waitFor } from '../support/ports';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';

interface DripConnection {
  who: string;
  item: string;
  open: boolean;
}

let server: http.Server;
let base: string;
const sockets = new Set<Socket>();
const drips: DripConnection[] = [];
/** The most connections one `who` had open at once. */
const mostOpen = new Map<string, number>();
let temporal: Client;

const openFor = (who: string) => drips.filter((c) => c.who === who && c.open).length;
const requestsFor = (who: string, item?: string) => drips.filter((c) => c.who === who && (item === undefined || c.item === item)).length;
const dripUrl = (who: string, item: number | string) => `${base}/drip.png?who=${who}&item=${item}`;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/ok.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      return res.end(THUMBNAIL_PNG);
    }
    if (url.pathname !== '/drip.png') {
      res.writeHead(404);
      return res.end();
    }
    const who = url.searchParams.get('who') ?? '';
    const connection: DripConnection = { who, item: url.searchParams.get('item') ?? '', open: true };
    drips.push(connection);
    mostOpen.set(who, Math.max(mostOpen.get(who) ?? 0, openFor(who)));
    res.writeHead(200, { 'content-type': 'image/png' });
    res.write(THUMBNAIL_PNG.subarray(0, 8));
    const timer = setInterval(() => res.write(Buffer.from([0])), 1000);
    res.on('close', () => {
      clearInterval(timer);
      connection.open = false;
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  temporal = new Client({ connection: await Connection.connect({ address: e2eEnv().temporalAddress }) });
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((r) => server.close(() => r()));
  await temporal?.connection.close();
});

/** Temporary files of the worker's fetches (the worker's DATA_DIR). */
const fetchFiles = (gw: Gateway) => {
  const dir = path.join(gw.dataDir, 'tmp', 'fetches');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
};

async function lastFailureOf(workflowId: string): Promise<string | undefined> {
  const description = await temporal.workflow.getHandle(workflowId).describe();
  return description.raw.pendingActivities?.[0]?.lastFailure?.message ?? undefined;
}

async function terminateAll(ids: readonly string[]): Promise<void> {
  await Promise.all(
    ids.map((id) =>
      temporal.workflow
        .getHandle(id)
        .terminate('test cleanup')
        .catch(() => undefined),
    ),
  );
}

describe('a key whose image URLs drip', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway({
      // Four activity slots: without a per-key cap, the dripping key's fetches would take them all.
      env: { FETCH_TIMEOUT_MS: '3000', FETCH_MAX_PER_KEY: '2', WORKER_MAX_CONCURRENT_ACTIVITIES: '4' },
    });
  }, 120_000);
  afterAll(async () => {
    await gw?.stop();
  }, 60_000);

  test('is cut off at the deadline and retried, holds at most its cap, and does not hold up another key', async () => {
    const dripping = await gw.issueKey('dripping');
    const other = await gw.issueKey('other');
    const tasks = [];
    for (let i = 0; i < 6; i++) {
      tasks.push(await createTask(gw.url, dripping, { model: 'vidgen3', prompt: `dripping reference ${i} [sim:ms=300]`, images: [dripUrl('A', i)] }));
    }
    const ids = tasks.map((t) => t.id);
    try {
      await waitFor('the dripping key fetching', async () => openFor('A') >= 2, 60_000, 100);

      // Queued behind the dripping key's six steps, on a worker with four activity slots.
      const normal = await createTask(gw.url, other, { model: 'vidgen3', prompt: 'a normal reference [sim:ms=300]', images: [`${base}/ok.png`] });
      const { final } = await waitForTerminal(gw.url, other, normal.id, 90_000);
      expect(final.status).toBe('completed');

      // A fetch that was cut and came again: the deadline ended it, not the drip.
      await waitFor('a dripping fetch cut off and retried', async () => [...Array(6).keys()].some((i) => requestsFor('A', String(i)) >= 2), 60_000, 200);

      // Meanwhile the dripping key's tasks wait for their image, none of them finished or charged twice.
      for (const id of ids) expect(['pending', 'processing']).toContain((await queryTask(gw.url, dripping, id)).body.status);
      expect(mostOpen.get('A')).toBeLessThanOrEqual(2);
      expect(drips.filter((c) => c.who === 'A' && !c.open).length).toBeGreaterThanOrEqual(2);
      const failures = (await Promise.all(ids.map(lastFailureOf))).filter((m): m is string => m !== undefined);
      expect(failures.some((m) => /did not finish within 3000 ms/.test(m))).toBe(true);
      for (const m of failures) expect(m).toMatch(/did not finish within 3000 ms|user-URL fetches in flight/);
    } finally {
      await terminateAll(ids);
    }
    await waitFor('the dripping connections closed', async () => openFor('A') === 0, 30_000, 200);
    await waitFor('no fetch file left', async () => fetchFiles(gw).length === 0, 10_000, 200);
  }, 240_000);
});

describe('a key whose character clips drip, under a long deadline', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway({ env: { FETCH_TIMEOUT_MS: '120000', FETCH_MAX_PER_KEY: '2' } });
  }, 120_000);
  afterAll(async () => {
    await gw?.stop();
  }, 60_000);

  test('holds at most its cap of fetches, and a terminated character stops fetching long before the deadline', async () => {
    const { id: owner, key } = await gw.issueKeyWithId('clips');
    // Each create waits for its character; these never finish, so nobody awaits them.
    const creates = [0, 1, 2].map((i) => call(`${gw.url}/motion/v1/characters`, { key, json: { url: dripUrl('C', i) } }).catch(() => undefined));
    let characterIds: string[] = [];
    try {
      await waitFor('clip fetches open', async () => openFor('C') >= 2, 60_000, 200);
      characterIds = await waitFor(
        'the three character workflows',
        async () => {
          const ids: string[] = [];
          for await (const wf of temporal.workflow.list({ query: `GatewayOwner = '${owner}'` })) ids.push(wf.workflowId);
          return ids.length === 3 ? ids : null;
        },
        30_000,
        500,
      );
      // The third step was turned away (and is retried a few seconds later), not queued on a slot.
      await waitFor(
        'a clip fetch turned away',
        async () => {
          const failures = await Promise.all(characterIds.map(lastFailureOf));
          return failures.some((m) => m !== undefined && /user-URL fetches in flight/.test(m));
        },
        60_000,
        500,
      );
      expect(mostOpen.get('C')).toBe(2);
    } finally {
      // A terminated workflow's activity learns it from its next heartbeat, and aborts its fetch.
      await terminateAll(characterIds);
    }
    await waitFor('the clip connections closed by the termination (the deadline is 120 s away)', async () => openFor('C') === 0, 45_000, 200);
    expect(requestsFor('C')).toBe(2);
    await waitFor('no fetch file left', async () => fetchFiles(gw).length === 0, 10_000, 200);
    await Promise.all(creates);
  }, 240_000);
});
