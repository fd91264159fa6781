/**
 * Crashes, not stops: SIGKILL with nothing flushed or closed.
 * - The provider simulator's process killed and started again on its port answers for the
 *   jobs and characters it created before (their state is in their ids).
 * - `npm start`'s whole process group (the gateway with its embedded store and simulator, and
 *   the Temporal dev server it spawned) killed with tasks in flight and started again on the
 *   same DATA_DIR: the tasks complete, and their videos download.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { SAMPLE_MP4 } from '../../simulator/assets';
import { createTask, queryTask, waitForTerminal } from '../support/client';
import { freePort, waitFor } from '../support/ports';
import { killGroup, startGroup, type GroupLeader } from '../support/process-group';
import { TEST_DATA } from '../support/processes';
import { embeddedEnv } from '../support/stack';

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

const running: GroupLeader[] = [];
afterAll(async () => {
  for (const s of running) {
    if (s.proc.exitCode !== null || s.proc.signalCode !== null) continue;
    s.proc.kill('SIGTERM');
    const timer = setTimeout(() => void killGroup(s), 20_000);
    await s.exited;
    clearTimeout(timer);
    await killGroup(s); // whatever of the group outlived it
  }
}, 60_000);

function start(entry: string, env: Record<string, string>, logName: string): GroupLeader {
  const s = startGroup(entry, env, logName);
  running.push(s);
  return s;
}

const AUTH = { authorization: 'Bearer sim-key' };
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' };

test('a simulator killed with SIGKILL and started again answers for its jobs and characters', async () => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = { HOST: '127.0.0.1', SIMULATOR_PORT: String(port), SIMULATOR_JOB_MS: '4000' };
  const first = start('dist/simulator/main.js', env, 'crash-simulator-1');
  await waitFor('simulator', async () => (await fetch(`${url}/_sim/health`).catch(() => null))?.ok, 20_000);

  const video = (await (
    await fetch(`${url}/v1/videos`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ prompt: 'crash [sim:ms=3000]', seconds: '8' }) })
  ).json()) as { id: string };
  const failing = (await (
    await fetch(`${url}/v1/videos`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ prompt: 'crash [sim:fail][sim:ms=2000]' }) })
  ).json()) as { id: string };
  const op = (await (
    await fetch(`${url}/v1beta/models/veo-3.0-generate-001:predictLongRunning`, {
      method: 'POST',
      headers: { 'x-goog-api-key': 'sim-key', 'content-type': 'application/json' },
      body: JSON.stringify({ instances: [{ prompt: 'crash [sim:ms=3000]' }] }),
    })
  ).json()) as { name: string };
  const form = new FormData();
  form.append('name', 'crash-hero');
  form.append('video', new Blob([new Uint8Array(SAMPLE_MP4)], { type: 'video/mp4' }), 'clip.mp4');
  const character = (await (await fetch(`${url}/v1/videos/characters`, { method: 'POST', headers: AUTH, body: form })).json()) as { id: string };
  expect(character.id).toMatch(/^char_/);

  await killGroup(first);
  expect(await portOpen(port)).toBe(false);
  start('dist/simulator/main.js', env, 'crash-simulator-2');
  await waitFor('simulator again', async () => (await fetch(`${url}/_sim/health`).catch(() => null))?.ok, 20_000);

  const done = await waitFor(
    'video completed',
    async () => {
      const v = (await (await fetch(`${url}/v1/videos/${video.id}`, { headers: AUTH })).json()) as { status: string; seconds: string };
      return v.status === 'completed' ? v : null;
    },
    20_000,
    200,
  );
  expect(done.seconds).toBe('8');
  expect((await fetch(`${url}/v1/videos/${video.id}/content`, { headers: AUTH })).status).toBe(200);
  const failed = (await (await fetch(`${url}/v1/videos/${failing.id}`, { headers: AUTH })).json()) as { status: string };
  expect(failed.status).toBe('failed');
  const operation = await waitFor(
    'operation done',
    async () => {
      const o = (await (await fetch(`${url}/v1beta/${op.name}`, { headers: { 'x-goog-api-key': 'sim-key' } })).json()) as {
        done?: boolean;
        response?: unknown;
      };
      return o.done ? o : null;
    },
    20_000,
    200,
  );
  expect(operation.response).toBeDefined();
  const remix = await fetch(`${url}/v1/videos/${video.id}/remix`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ prompt: 'again' }) });
  expect(remix.status).toBe(200);
  const cast = await fetch(`${url}/v1/videos`, {
    method: 'POST',
    headers: JSON_AUTH,
    body: JSON.stringify({ prompt: 'with the hero', characters: [character.id] }),
  });
  expect(cast.status).toBe(200);
}, 90_000);

test('npm start killed as a whole process group resumes its tasks in flight when started again', async () => {
  const dataDir = path.join(TEST_DATA, 'crash-npm-start');
  fs.rmSync(dataDir, { recursive: true, force: true });
  // The embedded simulator: it dies with the group, as in the demo.
  const env = await embeddedEnv(dataDir, { SIMULATOR_PORT: String(await freePort()) });
  const base = `http://127.0.0.1:${env.PORT}`;
  const banner = async (s: GroupLeader) => {
    await waitFor('banner', async () => fs.existsSync(s.log) && fs.readFileSync(s.log, 'utf8').includes('Try it:'), 120_000, 200);
    return fs.readFileSync(s.log, 'utf8');
  };

  const first = start('dist/src/main.js', env, 'crash-npm-start-1');
  const key = /Demo API key\s+(sk-\S+)/.exec(await banner(first))?.[1];
  expect(key).toBeDefined();
  const motion = await createTask(base, key!, { model: 'motion-2', prompt: 'through a crash [sim:ms=12000]', images: [] });
  const vidgen = await createTask(base, key!, { model: 'vidgen3', prompt: 'through a crash too [sim:ms=12000]', aspect_ratio: '16:9' });
  for (const task of [motion, vidgen]) {
    await waitFor(`${task.id} processing`, async () => (await queryTask(base, key!, task.id)).body.status === 'processing', 30_000);
  }

  await killGroup(first);
  // The group's other processes die a moment after its leader, whose exit killGroup waits for.
  for (const port of [env.PORT, env.TEMPORAL_DEV_PORT, env.SIMULATOR_PORT]) {
    await waitFor(`port ${port} closed`, async () => !(await portOpen(Number(port))), 10_000);
  }

  const second = start('dist/src/main.js', env, 'crash-npm-start-2');
  expect(await banner(second)).not.toMatch(/Demo API key/);
  for (const task of [motion, vidgen]) {
    const { final } = await waitForTerminal(base, key!, task.id, 120_000);
    expect(final).toMatchObject({ id: task.id, status: 'completed' });
    const file = await fetch(final.video_url!);
    expect(file.status).toBe(200);
    expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(1000);
  }
}, 300_000);
