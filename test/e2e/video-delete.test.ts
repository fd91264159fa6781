/**
 * DELETE /v1/videos/{id} through the official `openai` SDK's videos.delete(), on the real stack
 * (API and worker processes, PostgreSQL, the Temporal dev server, the provider simulator): a
 * running task is cancelled at the provider where it allows, refunded exactly once (the
 * reconciler sweeping the cancelled run too) and its workflow ends as cancelled; a finished
 * task's files leave storage; either is a 404 from then on, on a second API replica as well
 * (one that had cached it), skipped by the list, and ends a chat completion that follows it.
 */
import fs from 'node:fs';
import path from 'node:path';
import OpenAI, { NotFoundError, toFile } from 'openai';
import { Client, Connection } from '@temporalio/client';
import { THUMBNAIL_PNG } from '../../simulator/assets';
import { auditMismatches, balanceOf, taskEntries } from '../support/billing';
import { call, createTask, queryTask, waitForTerminal } from '../support/client';
import { waitFor } from '../support/ports';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';
import { simJobId, taskMemoState } from '../support/upstream';

/** Each key's credits: a few tasks' worth. */
const QUOTA = 10_000_000;

let gw: Gateway;
let replica: string;
let temporal: Client;

beforeAll(async () => {
  // A reconciler pass every second: it sweeps the cancelled runs while the tests look at the ledger.
  gw = await startGateway({ env: { BILLING_RECONCILE_SECONDS: '1', STREAM_POLL_MS: '100' } });
  replica = await gw.startApiReplica();
  temporal = new Client({ connection: await Connection.connect({ address: e2eEnv().temporalAddress }) });
}, 120_000);

afterAll(async () => {
  if (gw) expect(await auditMismatches(gw.url)).toEqual([]);
  await temporal?.connection.close();
  await gw?.stop();
}, 120_000);

/** A limited key (so its balance is kept) and SDK clients on the primary and on the replica. */
async function keyWithClients(name: string) {
  const { id, key } = await gw.issueKeyWithId(name, { quota: QUOTA });
  return {
    id,
    key,
    openai: new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 }),
    onReplica: new OpenAI({ apiKey: key, baseURL: `${replica}/v1`, maxRetries: 0 }),
  };
}

/** A motion video created through the SDK, once its upstream job was submitted; the video and its job id at the provider. */
async function runningMotionTask(openai: OpenAI, prompt: string): Promise<{ created: OpenAI.Video; jobId: string }> {
  const created = await openai.videos.create({ model: 'motion-2' as OpenAI.VideoModel, prompt, seconds: '8', size: '1280x720' });
  return { created, jobId: await upstreamJob(created.id) };
}

/** Waits until the task's upstream job was submitted; its job id at the provider. */
async function upstreamJob(taskId: string): Promise<string> {
  let jobId: string | undefined;
  await waitFor('the upstream job', async () => (jobId = (await taskMemoState(temporal, taskId)).upstream?.jobId) !== undefined, 30_000, 100);
  return jobId!;
}

const simJob = (jobId: string) => fetch(`${gw.simulatorUrl}/_sim/jobs/${encodeURIComponent(simJobId(jobId))}`);
const deleteRequests = async () =>
  (await call<{ requests: Record<string, number> }>(`${gw.simulatorUrl}/_sim/stats`)).body.requests['openai.videos.delete'] ?? 0;
const workflowStatus = async (taskId: string) => (await temporal.workflow.getHandle(taskId).describe()).status.name;

test('a running task: cancelled at the provider, refunded exactly once, its run cancelled, gone everywhere', async () => {
  const { id: keyId, key, openai, onReplica } = await keyWithClients('delete-running');
  const { created, jobId } = await runningMotionTask(openai, 'to be cancelled [sim:ms=120000] [sim:cancellable]');
  expect((await onReplica.videos.retrieve(created.id)).id).toBe(created.id);
  const charged = (await balanceOf(gw.url, keyId))!;
  expect(charged).toBeLessThan(QUOTA);
  const deletesBefore = await deleteRequests();

  expect(await openai.videos.delete(created.id)).toEqual({ id: created.id, object: 'video.deleted', deleted: true });

  // Gone at once, on both replicas and through every family's read.
  await expect(openai.videos.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  await expect(onReplica.videos.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  expect((await queryTask(replica, key, created.id)).status).toBe(404);
  await expect(openai.videos.downloadContent(created.id)).rejects.toBeInstanceOf(NotFoundError);
  await expect(openai.videos.remix(created.id, { prompt: 'again' })).rejects.toBeInstanceOf(NotFoundError);
  expect((await openai.videos.list()).data.map((v) => v.id)).not.toContain(created.id);
  await expect(openai.videos.delete(created.id)).rejects.toBeInstanceOf(NotFoundError);

  // The run refunds, tells the provider and ends as cancelled.
  await waitFor('the run to end as cancelled', async () => (await workflowStatus(created.id)) === 'CANCELLED', 30_000, 100);
  expect(await balanceOf(gw.url, keyId)).toBe(QUOTA);
  expect(await deleteRequests()).toBe(deletesBefore + 1);
  expect((await simJob(jobId)).status).toBe(404);
  expect((await taskMemoState(temporal, created.id)).error).toMatchObject({ code: 'cancelled' });

  // The reconciler sweeps the cancelled run (every second) and finds it refunded: still one refund.
  await new Promise((r) => setTimeout(r, 3000));
  const entries = await taskEntries(gw.url, keyId, created.id);
  expect(entries).toEqual([`charge:${charged - QUOTA}`, `refund:${QUOTA - charged}`].sort());
  expect(await balanceOf(gw.url, keyId)).toBe(QUOTA);
}, 90_000);

test('a running task at a provider that will not cancel it: refunded and cancelled all the same, the job left to run', async () => {
  const { id: keyId, openai } = await keyWithClients('delete-refused');
  const { created, jobId } = await runningMotionTask(openai, 'provider says no [sim:ms=120000]');
  const deletesBefore = await deleteRequests();
  expect(await openai.videos.delete(created.id)).toMatchObject({ deleted: true });
  await waitFor('the run to end as cancelled', async () => (await workflowStatus(created.id)) === 'CANCELLED', 30_000, 100);
  expect(await balanceOf(gw.url, keyId)).toBe(QUOTA);
  // Asked (OpenAI's protocol has the call), refused while the job runs (400): the job goes on upstream.
  expect(await deleteRequests()).toBe(deletesBefore + 1);
  expect(await (await simJob(jobId)).json()).toMatchObject({ status: expect.stringMatching(/^(queued|in_progress)$/) });
}, 90_000);

test('a running Veo task (no cancel call in its protocol) of the JSON family is refunded and cancelled', async () => {
  const { id: keyId, key, openai } = await keyWithClients('delete-veo');
  const task = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'veo runs on [sim:ms=120000]' });
  const jobId = await upstreamJob(task.id);
  const deletesBefore = await deleteRequests();
  expect(await openai.videos.delete(task.id)).toEqual({ id: task.id, object: 'video.deleted', deleted: true });
  expect((await queryTask(gw.url, key, task.id)).status).toBe(404);
  await waitFor('the run to end as cancelled', async () => (await workflowStatus(task.id)) === 'CANCELLED', 30_000, 100);
  expect(await balanceOf(gw.url, keyId)).toBe(QUOTA);
  expect(await deleteRequests()).toBe(deletesBefore);
  expect(await (await simJob(jobId)).json()).toMatchObject({ flavor: 'veo', status: expect.stringMatching(/^(queued|in_progress)$/) });
}, 90_000);

test('a finished task: its files leave storage, its charge stands, a replica that cached it answers 404', async () => {
  const { id: keyId, key, openai, onReplica } = await keyWithClients('delete-finished');
  const created = await openai.videos.create(
    {
      model: 'vidgen_3_1-fast' as OpenAI.VideoModel,
      prompt: 'finished [sim:ms=300]',
      seconds: '6' as OpenAI.VideoSeconds,
      size: '720x1280',
      input_reference: await toFile(THUMBNAIL_PNG, 'ref.png', { type: 'image/png' }),
    },
    { headers: { 'idempotency-key': 'delete-finished-1' } },
  );
  expect((await waitForTerminal(gw.url, key, created.id)).final.status).toBe('completed');
  const storage = path.join(gw.dataDir, 'storage');
  const taskPath = created.id.replace(':', '/');
  const video = path.join(storage, 'videos', `${taskPath}.mp4`);
  const inputs = path.join(storage, 'inputs', taskPath);
  expect(fs.existsSync(video)).toBe(true);
  expect(fs.readdirSync(inputs)).toHaveLength(1);
  // The replica reads it once: a closed task is cached there from now on.
  const read = (await onReplica.videos.retrieve(created.id)) as unknown as { status: string; video_url: string };
  expect(read.status).toBe('completed');
  expect((await fetch(read.video_url)).status).toBe(200);
  const balance = await balanceOf(gw.url, keyId);

  expect(await openai.videos.delete(created.id)).toEqual({ id: created.id, object: 'video.deleted', deleted: true });

  expect(fs.existsSync(video)).toBe(false);
  expect(fs.existsSync(inputs)).toBe(false);
  expect((await fetch(read.video_url)).status).toBe(404);
  await expect(onReplica.videos.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  await expect(onReplica.videos.downloadContent(created.id)).rejects.toBeInstanceOf(NotFoundError);
  expect((await call(`${replica}/v1/videos/${encodeURIComponent(created.id)}/content`, { key })).status).toBe(404);
  expect((await onReplica.videos.list()).data.map((v) => v.id)).not.toContain(created.id);
  // The video was made: its charge stands.
  expect(await balanceOf(gw.url, keyId)).toBe(balance);
  expect((await taskEntries(gw.url, keyId, created.id)).map((e) => e.split(':')[0])).toEqual(['charge']);
  // Its create replayed under the same Idempotency-Key: that task is no longer readable.
  await expect(
    openai.videos.create(
      {
        model: 'vidgen_3_1-fast' as OpenAI.VideoModel,
        prompt: 'finished [sim:ms=300]',
        seconds: '6' as OpenAI.VideoSeconds,
        size: '720x1280',
        input_reference: await toFile(THUMBNAIL_PNG, 'ref.png', { type: 'image/png' }),
      },
      { headers: { 'idempotency-key': 'delete-finished-1' } },
    ),
  ).rejects.toMatchObject({ status: 409, code: 'idempotency_key_expired' });
}, 90_000);

test("another key's task, an unknown id and a malformed id are the same 404, and nothing is deleted", async () => {
  const owner = await keyWithClients('delete-owner');
  const other = await keyWithClients('delete-other');
  const task = await createTask(gw.url, owner.key, { model: 'vidgen3-fast', prompt: 'not yours [sim:ms=300]' });
  await expect(other.openai.videos.delete(task.id)).rejects.toMatchObject({ status: 404, code: 'not_found', param: 'id' });
  await expect(other.openai.videos.delete('vidgen3:1700000000000-abcdef12')).rejects.toMatchObject({ status: 404 });
  await expect(other.openai.videos.delete('not a task id')).rejects.toMatchObject({ status: 404 });
  expect((await queryTask(gw.url, owner.key, task.id)).status).toBe(200);
  expect((await waitForTerminal(gw.url, owner.key, task.id)).final.status).toBe('completed');
}, 60_000);

test('a chat completion following a task that is deleted says so and ends', async () => {
  const { key, openai } = await keyWithClients('delete-chat');
  const stream = await openai.chat.completions.create({
    model: 'motion-2',
    stream: true,
    messages: [{ role: 'user', content: 'deleted mid-stream [sim:ms=120000]' }],
  });
  const contents: string[] = [];
  const finishReasons: (string | null)[] = [];
  for await (const chunk of stream) {
    const choice = chunk.choices[0]!;
    if (choice.delta.content) contents.push(choice.delta.content);
    finishReasons.push(choice.finish_reason);
    const taskId = /^task_id: (\S+)\n$/.exec(choice.delta.content ?? '')?.[1];
    if (taskId) {
      await upstreamJob(taskId);
      expect((await call(`${gw.url}/v1/videos/${encodeURIComponent(taskId)}`, { key, method: 'DELETE' })).status).toBe(200);
    }
  }
  expect(contents[contents.length - 1]).toBe('failed: the task was deleted\n');
  expect(finishReasons[finishReasons.length - 1]).toBe('stop');
}, 60_000);
