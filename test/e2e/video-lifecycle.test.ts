/**
 * Create -> query -> completed -> download, on the real stack (Temporal dev server, worker
 * and API processes, provider simulator), for a vidgen and a motion model.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { THUMBNAIL_PNG } from '../../simulator/assets';
import { createTask, queryTask, waitForTerminal } from '../support/client';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';
import { upstreamJobOf } from '../support/upstream';
import { closedRunDescription } from '../support/runs';

let gw: Gateway;
let key: string;
let imageServer: http.Server;
let imageUrl: string;
let temporal: Client;

beforeAll(async () => {
  gw = await startGateway();
  key = await gw.issueKey('lifecycle');
  imageServer = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(THUMBNAIL_PNG);
  });
  await new Promise<void>((r) => imageServer.listen(0, '127.0.0.1', r));
  imageUrl = `http://127.0.0.1:${(imageServer.address() as AddressInfo).port}/ref.png`;
  temporal = new Client({ connection: await Connection.connect({ address: e2eEnv().temporalAddress }) });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  imageServer?.close();
  await temporal?.connection.close();
}, 120_000);

const upstreamJob = (taskId: string) => upstreamJobOf(temporal, gw.simulatorUrl, taskId);

async function expectPlayableMp4(videoUrl: string): Promise<void> {
  expect(videoUrl.startsWith(`http://localhost:`) || videoUrl.startsWith('http://127.0.0.1')).toBe(true);
  const res = await fetch(videoUrl);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('video/mp4');
  const bytes = Buffer.from(await res.arrayBuffer());
  expect(bytes.toString('ascii', 4, 8)).toBe('ftyp');
  expect(Number(res.headers.get('content-length'))).toBe(bytes.length);

  const ranged = await fetch(videoUrl, { headers: { range: 'bytes=0-15' } });
  expect(ranged.status).toBe(206);
  expect(ranged.headers.get('content-range')).toBe(`bytes 0-15/${bytes.length}`);
  expect(Buffer.from(await ranged.arrayBuffer())).toEqual(bytes.subarray(0, 16));
  // Past the end: refused, with the size to ask for instead.
  const past = await fetch(videoUrl, { headers: { range: `bytes=${bytes.length}-` } });
  expect(past.status).toBe(416);
  expect(past.headers.get('content-range')).toBe(`bytes */${bytes.length}`);
  // Several ranges or another unit: ignored (RFC 9110, 14.2), the whole file served.
  for (const range of ['bytes=0-1,4-5', 'items=0-5']) {
    const whole = await fetch(videoUrl, { headers: { range } });
    expect(whole.status).toBe(200);
    expect(Buffer.from(await whole.arrayBuffer())).toEqual(bytes);
  }

  const tampered = new URL(videoUrl);
  tampered.searchParams.set('signature', 'AAAA' + (tampered.searchParams.get('signature') ?? '').slice(4));
  expect((await fetch(tampered)).status).toBe(403);
  const expired = new URL(videoUrl);
  expired.searchParams.set('expires', '1000');
  expect((await fetch(expired)).status).toBe(403);
}

test('vidgen3 with a base64 reference image: pending -> processing -> completed, file served by the gateway', async () => {
  const created = await createTask(gw.url, key, {
    model: 'vidgen3',
    prompt: 'a lighthouse in a storm [sim:ms=1500]',
    aspect_ratio: '9:16',
    images: [`data:image/png;base64,${THUMBNAIL_PNG.toString('base64')}`],
  });
  expect(created.id).toMatch(/^vidgen3:\d+-[a-z0-9]+$/);
  expect(created.status).toBe('pending');
  expect(created.enhanced_prompt).toBe('a lighthouse in a storm [sim:ms=1500]');
  expect(Math.abs(created.status_update_time - Date.now() / 1000)).toBeLessThan(5);
  expect(Object.keys(created).sort()).toEqual(['enhanced_prompt', 'id', 'status', 'status_update_time']);

  const first = await queryTask(gw.url, key, created.id);
  expect(first.status).toBe(200);
  expect(first.body.video_url).toBeNull();

  const { final, seen } = await waitForTerminal(gw.url, key, created.id);
  expect(final.status).toBe('completed');
  expect(seen[seen.length - 1]).toBe('completed');
  expect(seen.indexOf('processing')).toBeLessThan(seen.indexOf('completed'));
  expect(seen).not.toContain('failed');
  expect(final.video_url).toEqual(expect.any(String));
  await expectPlayableMp4(final.video_url!);

  const job = await upstreamJob(created.id);
  expect(job.flavor).toBe('veo');
  expect(job.model).toBe('veo-3.0-generate-001');

  // Operators find the task in Temporal by the id the client holds, with its search attributes.
  const description = await closedRunDescription(temporal, created.id);
  expect(description.status.name).toBe('COMPLETED');
  expect(description.searchAttributes.GatewayModel).toEqual(['vidgen3']);
  expect(description.searchAttributes.GatewayStatus).toEqual(['completed']);
  expect((description.searchAttributes.GatewayOwner as string[])[0]).toMatch(/^key_/);
});

test('motion-2 with a reference image URL: defaults to 10 s portrait, completes, readable many times', async () => {
  const created = await createTask(gw.url, key, { model: 'motion-2', prompt: 'a paper boat on a river [sim:ms=1000]', images: [imageUrl] });
  expect(created.id).toMatch(/^motion-2:\d+-[a-z0-9]+$/);
  const { final } = await waitForTerminal(gw.url, key, created.id);
  expect(final.status).toBe('completed');
  await expectPlayableMp4(final.video_url!);
  const job = await upstreamJob(created.id);
  expect(job.flavor).toBe('openai');
  expect(job.model).toBe('sora-2');
  expect(job.idempotencyKey).toBe(`${created.id}:submit`);

  // A finished task keeps answering the same way (served from the closed workflow's memo).
  const again = await queryTask(gw.url, key, created.id);
  expect(again.body.status).toBe('completed');
  expect(again.body.status_update_time).toBe(final.status_update_time);
});

test('a task of another key is 404 with the same body as an unknown id', async () => {
  const created = await createTask(gw.url, key, { model: 'vidgen2', prompt: 'owned by the first key' });
  const other = await gw.issueKey('other');
  const foreign = await queryTask(gw.url, other, created.id);
  const unknown = await queryTask(gw.url, other, created.id.replace(/-[a-z0-9]+$/, '-zzzzzzzzzz'));
  expect(foreign.status).toBe(404);
  expect(unknown.status).toBe(404);
  expect(foreign.body).toEqual(unknown.body);
  expect((await queryTask(gw.url, key, created.id)).status).toBe(200);
});

test('progress never goes backwards and status_update_time moves only on status changes', async () => {
  const created = await createTask(gw.url, key, { model: 'vidgen3.1', prompt: 'slow clouds [sim:ms=2500]' });
  const handle = temporal.workflow.getHandle(created.id);
  let last = -1;
  const updateTimes = new Map<string, number>();
  for (;;) {
    const state = await handle.query<{ progress: number; status: string; statusUpdateTime: number }>('state');
    expect(state.progress).toBeGreaterThanOrEqual(last);
    last = state.progress;
    const known = updateTimes.get(state.status);
    if (known !== undefined) expect(state.statusUpdateTime).toBe(known);
    updateTimes.set(state.status, state.statusUpdateTime);
    if (state.status === 'completed') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(last).toBe(100);
});
