/**
 * Characters (spec 8) on the real stack: a motion task with character_url makes the workflow
 * fetch the clip, create a character upstream and cast it in the video job. A clip that is not
 * an MP4, or that cannot be fetched, fails the task with invalid_input before any job starts.
 *
 * The gateway talks to the simulator through a small recording proxy, so the test can also see
 * the multipart character request as the provider received it (name, clip bytes, timestamps).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { SAMPLE_MP4, THUMBNAIL_PNG } from '../../simulator/assets';
import { call, createTask, waitForTerminal } from '../support/client';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';
import { taskMemoState, upstreamJobOf, type SimJob } from '../support/upstream';
import { closedRunDescription } from '../support/runs';

interface CharacterRequest {
  name: string;
  timestamps: string | null;
  video: Buffer;
  videoType: string;
  status: number;
  responseBody: string;
}

let gw: Gateway;
let key: string;
let temporal: Client;
let clipServer: http.Server;
let clipBase: string;
const clipHits: string[] = [];
let proxy: http.Server;
const characterRequests: CharacterRequest[] = [];

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function close(server: http.Server | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Forwards everything to the simulator; records POST /v1/videos/characters as the simulator received it. */
function recordingProxy(target: string): http.Server {
  return http.createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (value === undefined || ['host', 'connection', 'content-length', 'transfer-encoding'].includes(name)) continue;
        headers.set(name, Array.isArray(value) ? value.join(', ') : value);
      }
      const method = req.method ?? 'GET';
      const upstream = await fetch(`${target}${req.url ?? '/'}`, { method, headers, body: method === 'GET' || method === 'HEAD' ? undefined : body });
      const answer = Buffer.from(await upstream.arrayBuffer());
      if (method === 'POST' && (req.url ?? '').split('?')[0] === '/v1/videos/characters') {
        const form = await new Response(body, { headers: { 'content-type': req.headers['content-type'] ?? '' } }).formData();
        const video = form.get('video');
        const timestamps = form.get('timestamps');
        characterRequests.push({
          name: String(form.get('name')),
          timestamps: typeof timestamps === 'string' ? timestamps : null,
          video: video instanceof Blob ? Buffer.from(await video.arrayBuffer()) : Buffer.alloc(0),
          videoType: video instanceof Blob ? video.type : '',
          status: upstream.status,
          responseBody: answer.toString('utf8'),
        });
      }
      const out: Record<string, string> = {};
      upstream.headers.forEach((value, name) => {
        if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(name)) out[name] = value;
      });
      out['content-length'] = String(answer.length);
      res.writeHead(upstream.status, out);
      res.end(answer);
    })().catch((err: unknown) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy error: ${String(err)}`);
    });
  });
}

beforeAll(async () => {
  clipServer = http.createServer((req, res) => {
    clipHits.push(req.url ?? '');
    if (req.url === '/clip.mp4') {
      res.writeHead(200, { 'content-type': 'video/mp4' });
      return res.end(SAMPLE_MP4);
    }
    if (req.url === '/still.mp4') {
      // A PNG under a video name and type: the content, not the label, decides.
      res.writeHead(200, { 'content-type': 'video/mp4' });
      return res.end(THUMBNAIL_PNG);
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  clipBase = await listen(clipServer);
  proxy = recordingProxy(e2eEnv().simulatorUrl);
  const proxyUrl = await listen(proxy);
  gw = await startGateway({ env: { SIMULATOR_URL: proxyUrl } });
  key = await gw.issueKey('characters');
  temporal = new Client({ connection: await Connection.connect({ address: e2eEnv().temporalAddress }) });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await close(proxy);
  await close(clipServer);
  await temporal?.connection.close();
}, 120_000);

const unique = () => Math.random().toString(36).slice(2, 10);

interface ActivityRun {
  input: unknown[];
  result: unknown;
}

/** Every completed run of one activity type in a workflow's history, with decoded input and result. */
async function completedActivities(handle: WorkflowHandle, activityType: string): Promise<ActivityRun[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  const decode = (payloads: Payload[] | null | undefined): unknown[] => (payloads ?? []).map((p) => defaultPayloadConverter.fromPayload(p));
  const scheduled = new Map<string, unknown[]>();
  const runs: ActivityRun[] = [];
  for (const event of events) {
    const s = event.activityTaskScheduledEventAttributes;
    if (s && s.activityType?.name === activityType) scheduled.set(String(event.eventId), decode(s.input?.payloads));
    const c = event.activityTaskCompletedEventAttributes;
    const input = c ? scheduled.get(String(c.scheduledEventId)) : undefined;
    if (c && input) runs.push({ input, result: decode(c.result?.payloads)[0] });
  }
  return runs;
}

const memoState = (taskId: string) => taskMemoState(temporal, taskId);

async function upstreamJob(taskId: string): Promise<SimJob> {
  const job = await upstreamJobOf(temporal, gw.simulatorUrl, taskId);
  expect(job.id).toMatch(/^video_[0-9a-f]{32}$/);
  return job;
}

test('motion-2 with character_url and character_timestamps: the created character is cast in the upstream job', async () => {
  const prompt = `a character waves at the camera ${unique()} [sim:ms=800]`;
  const created = await createTask(gw.url, key, {
    model: 'motion-2',
    prompt,
    images: [],
    character_url: `${clipBase}/clip.mp4`,
    character_timestamps: '0,2',
  });
  expect(created.status).toBe('pending');

  const { final } = await waitForTerminal(gw.url, key, created.id);
  expect(final.status).toBe('completed');
  expect(final.error).toBeUndefined();
  expect(final.video_url).toEqual(expect.any(String));
  const video = await fetch(final.video_url!);
  expect(video.status).toBe(200);
  expect(Buffer.from(await video.arrayBuffer()).toString('ascii', 4, 8)).toBe('ftyp');
  expect(clipHits).toContain('/clip.mp4');

  // The character the workflow created: one createCharacter run, fed the request's clip and span.
  const runs = await completedActivities(temporal.workflow.getHandle(created.id), 'createCharacter');
  expect(runs).toHaveLength(1);
  const run = runs[0]!;
  expect(run.input).toEqual([
    {
      taskId: created.id,
      ownerId: expect.stringMatching(/^key_/),
      channel: 'sim-openai-videos',
      source: { kind: 'url', url: `${clipBase}/clip.mp4`, timestamps: '0,2' },
    },
  ]);
  const character = run.result as { id: string; name: string };
  expect(character.id).toMatch(/^char_[0-9a-f]{32}$/);
  expect(character.name).toMatch(/^gw_[0-9a-f]{10}$/);

  // The provider got the clip itself, the span and the generated name, and still knows the character.
  const sent = characterRequests.filter((r) => r.name === character.name);
  expect(sent).toHaveLength(1);
  expect(sent[0]?.status).toBe(200);
  expect(sent[0]?.timestamps).toBe('0,2');
  expect(sent[0]?.videoType).toBe('video/mp4');
  expect(sent[0]?.video.equals(SAMPLE_MP4)).toBe(true);
  expect((JSON.parse(sent[0]?.responseBody ?? '{}') as { id?: string }).id).toBe(character.id);
  const upstreamCharacter = await call(`${gw.simulatorUrl}/v1/videos/characters/${character.id}`, { key: 'sim-key' });
  expect(upstreamCharacter.status).toBe(200);
  expect(upstreamCharacter.body).toMatchObject({ id: character.id, name: character.name });

  // The video job casts exactly that character, next to the other extension fields.
  const job = await upstreamJob(created.id);
  expect(job.flavor).toBe('openai');
  expect(job.model).toBe('sora-2');
  expect(job.prompt).toBe(prompt);
  expect(job.status).toBe('completed');
  expect(job.params).toEqual({ inputReference: null, watermark: true, private: false, characters: [character.id] });
});

test('a motion task without character_url creates no character and casts none', async () => {
  const created = await createTask(gw.url, key, { model: 'motion-2', prompt: `no character ${unique()} [sim:ms=300]`, images: [] });
  const { final } = await waitForTerminal(gw.url, key, created.id);
  expect(final.status).toBe('completed');
  expect(await completedActivities(temporal.workflow.getHandle(created.id), 'createCharacter')).toEqual([]);
  const job = await upstreamJob(created.id);
  expect(job.params).toEqual({ inputReference: null, watermark: true, private: false });
});

test.each([
  ['serves a PNG (labelled video/mp4)', '/still.mp4', /not an MP4/],
  ['answers 404', '/missing.mp4', /HTTP 404/],
])('a character_url that %s: the task fails with invalid_input and no upstream job', async (_what, clipPath, reason) => {
  const before = characterRequests.length;
  const prompt = `bad character ${unique()} [sim:ms=300]`;
  const created = await createTask(gw.url, key, { model: 'motion-2', prompt, images: [], character_url: `${clipBase}${clipPath}` });
  expect(created.status).toBe('pending');

  const { final, seen } = await waitForTerminal(gw.url, key, created.id);
  expect(final.status).toBe('failed');
  expect(seen).not.toContain('completed');
  expect(final.video_url).toBeNull();
  expect(final.error?.code).toBe('invalid_input');
  expect(final.error?.message).toMatch(reason);
  expect(clipHits).toContain(clipPath);

  // Nothing reached the provider: no character, no video job.
  expect(characterRequests.length).toBe(before);
  expect((await memoState(created.id)).upstream).toBeUndefined();
  const jobs = await call<{ data: unknown[] }>(`${gw.simulatorUrl}/_sim/jobs?prompt=${encodeURIComponent(prompt)}`);
  expect(jobs.status).toBe(200);
  expect(jobs.body.data).toEqual([]);

  const description = await closedRunDescription(temporal, created.id);
  expect(description.status.name).toBe('COMPLETED');
  expect(description.searchAttributes.GatewayStatus).toEqual(['failed']);
});
