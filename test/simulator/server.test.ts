import net from 'node:net';
import { startSimulator, type RunningSimulator } from '../../simulator/server';
import { newJob, progressAt, statusAt } from '../../simulator/jobs';
import { parseMarkers } from '../../simulator/faults';
import type { SimJob } from '../support/upstream';
import { looksLikeMp4, SAMPLE_MP4, sniffImage, THUMBNAIL_PNG, PROFILE_PNG, SPRITESHEET_JPEG } from '../../simulator/assets';

interface Stats {
  jobsCreated: { veo: number; openai: number };
  charactersCreated: number;
  jobsStored: number;
  requests: Record<string, number>;
  faults: Record<string, number>;
}
const AUTH = { authorization: 'Bearer sk-test', 'content-type': 'application/json' };
const GKEY = { 'x-goog-api-key': 'k', 'content-type': 'application/json' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator({ jobMs: 200 });
});
afterAll(async () => {
  await sim.close();
});

const stats = async (s: RunningSimulator = sim): Promise<Stats> => (await (await fetch(`${s.url}/_sim/stats`)).json()) as Stats;

describe('startSimulator', () => {
  it('reports a loopback url without trailing slash and the port it bound', () => {
    expect(sim.url).toBe(`http://127.0.0.1:${sim.port}`);
    expect(sim.port).toBeGreaterThan(0);
  });

  it('close() resolves promptly with keep-alive sockets open, and is idempotent', async () => {
    const s = await startSimulator({ jobMs: 10 });
    expect((await fetch(`${s.url}/_sim/health`)).status).toBe(200); // leaves a keep-alive socket
    const t0 = Date.now();
    await s.close();
    await s.close();
    expect(Date.now() - t0).toBeLessThan(1000);
    await expect(fetch(`${s.url}/_sim/health`)).rejects.toThrow();
  });

  it('close() does not wait for a pending [sim:slow] reply', async () => {
    const s = await startSimulator({ jobMs: 10 });
    const pending = fetch(`${s.url}/v1/videos`, { method: 'POST', headers: AUTH, body: '{"prompt":"[sim:slow=60000]"}' }).catch(() => 'gone');
    await sleep(50);
    const t0 = Date.now();
    await s.close();
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(await pending).toBe('gone');
  });

  it('adds latencyMs to upstream responses only', async () => {
    const s = await startSimulator({ jobMs: 10, latencyMs: 300 });
    try {
      let t0 = Date.now();
      await (await fetch(`${s.url}/_sim/health`)).json();
      expect(Date.now() - t0).toBeLessThan(250);
      t0 = Date.now();
      expect((await fetch(`${s.url}/v1/videos`, { headers: AUTH })).status).toBe(200);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(295);
      t0 = Date.now();
      expect((await fetch(`${s.url}/v1beta/models/veo-2.0-generate-001/operations/x`, { headers: GKEY })).status).toBe(404);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(295);
    } finally {
      await s.close();
    }
  });
});

describe('/_sim introspection', () => {
  it('health', async () => {
    const res = await fetch(`${sim.url}/_sim/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it('jobs/{id} for both flavors with the computed completion time', async () => {
    const v = (await (
      await fetch(`${sim.url}/v1/videos`, {
        method: 'POST',
        headers: { ...AUTH, 'idempotency-key': 'intro-1' },
        body: '{"prompt":"intro [sim:ms=40]","model":"sora-2-pro"}',
      })
    ).json()) as { id: string };
    const running = (await (await fetch(`${sim.url}/_sim/jobs/${v.id}`)).json()) as SimJob;
    expect(running).toMatchObject({
      id: v.id,
      flavor: 'openai',
      model: 'sora-2-pro',
      prompt: 'intro [sim:ms=40]',
      completedAt: null,
      idempotencyKey: 'intro-1',
      remixedFrom: null,
    });
    expect(['queued', 'in_progress']).toContain(running.status);
    await sleep(60);
    const done = (await (await fetch(`${sim.url}/_sim/jobs/${v.id}`)).json()) as SimJob;
    expect(done.status).toBe('completed');
    expect(done.completedAt).toBe(done.createdAt + 40);

    const op = (await (
      await fetch(`${sim.url}/v1beta/models/veo-3.0-fast-generate-001:predictLongRunning`, {
        method: 'POST',
        headers: GKEY,
        body: '{"instances":[{"prompt":"veo intro"}]}',
      })
    ).json()) as { name: string };
    const opId = op.name.split('/').pop() ?? '';
    const veo = (await (await fetch(`${sim.url}/_sim/jobs/${opId}`)).json()) as SimJob;
    expect(veo).toMatchObject({ id: opId, flavor: 'veo', model: 'veo-3.0-fast-generate-001', prompt: 'veo intro', idempotencyKey: null });

    const missing = await fetch(`${sim.url}/_sim/jobs/nope`);
    expect(missing.status).toBe(404);
  });

  it('stats count jobs per flavor, requests per route and faults per kind; reset clears everything', async () => {
    const s = await startSimulator({ jobMs: 10 });
    try {
      await fetch(`${s.url}/v1/videos`, { method: 'POST', headers: AUTH, body: '{"prompt":"a"}' });
      await fetch(`${s.url}/v1/videos`, { method: 'POST', headers: AUTH, body: '{"prompt":"b [sim:submit-429=1]"}' });
      const op = (await (
        await fetch(`${s.url}/v1beta/models/veo-2.0-generate-001:predictLongRunning`, { method: 'POST', headers: GKEY, body: '{"instances":[{"prompt":"c"}]}' })
      ).json()) as { name: string };
      await fetch(`${s.url}/v1beta/${op.name}`, { headers: GKEY });
      await fetch(`${s.url}/v1/nowhere`, { headers: AUTH });
      const st = await stats(s);
      expect(st.jobsCreated).toEqual({ veo: 1, openai: 1 });
      expect(st.jobsStored).toBe(2);
      expect(st.requests).toEqual({
        'openai.videos.create': 2,
        'veo.predict': 1,
        'veo.operation': 1,
        'openai.unmatched': 1,
        'sim.stats': 1,
      });
      expect(st.faults).toEqual({ 'submit-429': 1 });

      const reset = await fetch(`${s.url}/_sim/reset`, { method: 'POST' });
      expect(await reset.json()).toEqual({ ok: true });
      const after = await stats(s);
      expect(after).toEqual({ jobsCreated: { veo: 0, openai: 0 }, charactersCreated: 0, jobsStored: 0, requests: { 'sim.stats': 1 }, faults: {} });
      expect((await fetch(`${s.url}/v1beta/${op.name}`, { headers: GKEY })).status).toBe(404);
      // Attempt counters were reset too: the marker fires again.
      expect((await fetch(`${s.url}/v1/videos`, { method: 'POST', headers: AUTH, body: '{"prompt":"b [sim:submit-429=1]"}' })).status).toBe(429);
    } finally {
      await s.close();
    }
  });
});

describe('robustness', () => {
  it('unknown routes answer 404 in the shape of the protocol they fall under', async () => {
    const oai = await fetch(`${sim.url}/v1/nothing/here`, { headers: AUTH });
    expect(oai.status).toBe(404);
    expect(oai.headers.get('x-request-id')).toMatch(/^req_/);
    expect(((await oai.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
    const google = await fetch(`${sim.url}/v1beta/whatever`, { headers: GKEY });
    expect(google.status).toBe(404);
    expect(((await google.json()) as { error: { status: string } }).error.status).toBe('NOT_FOUND');
    const plain = await fetch(`${sim.url}/nope`);
    expect(plain.status).toBe(404);
    expect(((await plain.json()) as { error: { code: number } }).error.code).toBe(404);
    expect((await fetch(`${sim.url}/_sim/nope`)).status).toBe(404);
  });

  it('a wrong method answers 405 in the protocol shape', async () => {
    const res = await fetch(`${sim.url}/v1/videos`, { method: 'PUT', headers: AUTH, body: '{}' });
    expect(res.status).toBe(405);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });

  it('bad JSON, a non-object body and an unsupported content type are 400s', async () => {
    const bad = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: AUTH, body: '{"prompt":' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
    const arr = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: AUTH, body: '["prompt"]' });
    expect(arr.status).toBe(400);
    const text = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: { ...AUTH, 'content-type': 'text/plain' }, body: 'prompt=x' });
    expect(text.status).toBe(400);
    expect(((await text.json()) as { error: { message: string } }).error.message).toMatch(/content type/i);
    const brokenMultipart = await fetch(`${sim.url}/v1/videos`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'multipart/form-data; boundary=zzz' },
      body: 'garbage',
    });
    expect(brokenMultipart.status).toBe(400);
  });

  it('answers 413 to bodies over 64 MiB', async () => {
    const huge = Buffer.alloc(64 * 1024 * 1024 + 10, 0x20);
    const res = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: AUTH, body: huge }).catch(() => null);
    // Node may reset the socket while the client is still sending; either way the server survives.
    if (res) expect(res.status).toBe(413);
    expect((await fetch(`${sim.url}/_sim/health`)).status).toBe(200);
  });

  it('survives clients that disconnect mid-request and creates nothing', async () => {
    const before = await stats();
    await new Promise<void>((resolve) => {
      const socket = net.connect(sim.port, '127.0.0.1', () => {
        socket.write(
          'POST /v1/videos HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"prompt":"half',
        );
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 30);
      });
    });
    await new Promise<void>((resolve) => {
      const socket = net.connect(sim.port, '127.0.0.1', () => {
        socket.write('GARBAGE\r\n\r\n');
        socket.on('data', () => undefined);
        socket.on('close', () => resolve());
      });
    });
    await sleep(30);
    expect((await fetch(`${sim.url}/_sim/health`)).status).toBe(200);
    expect((await stats()).jobsCreated).toEqual(before.jobsCreated);
  });

  it('supports HEAD on downloads', async () => {
    const v = (await (await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: AUTH, body: '{"prompt":"head [sim:ms=5]"}' })).json()) as { id: string };
    await sleep(20);
    const res = await fetch(`${sim.url}/v1/videos/${v.id}/content`, { method: 'HEAD', headers: AUTH });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(SAMPLE_MP4.length));
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });

  it('a retry during a [sim:slow] create replays the already-created job', async () => {
    const body = JSON.stringify({ prompt: 'concurrent [sim:slow=200]' });
    const headers = { ...AUTH, 'idempotency-key': 'same-key-slow' };
    const first = fetch(`${sim.url}/v1/videos`, { method: 'POST', headers, body });
    await sleep(50);
    const before = await stats();
    const second = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers, body });
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const a = (await (await first).json()) as { id: string };
    const b = (await second.json()) as { id: string };
    expect(b.id).toBe(a.id);
    expect((await stats()).jobsCreated.openai).toBe(before.jobsCreated.openai);
  });

  it('a request whose Idempotency-Key is still being handled gets 409', async () => {
    const body = '{"prompt":"in flight"}';
    const socket = net.connect(sim.port, '127.0.0.1');
    const response = new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (d: Buffer) => {
        text += d.toString();
        if (text.includes('"object":"video"')) resolve(text);
      });
    });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // Send the headers and only half of the body: the first request is now in flight.
    socket.write(
      `POST /v1/videos HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nIdempotency-Key: inflight-1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await sleep(30);
    const dup = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: { ...AUTH, 'idempotency-key': 'inflight-1' }, body });
    expect(dup.status).toBe(409);
    expect(((await dup.json()) as { error: { code: string } }).error.code).toBe('idempotency_key_in_use');
    socket.write(body.slice(5));
    expect(await response).toMatch(/^HTTP\/1\.1 200/);
    socket.destroy();
    const replay = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: { ...AUTH, 'idempotency-key': 'inflight-1' }, body });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });

  it('keeps up with 1000 jobs in flight polled concurrently', async () => {
    const s = await startSimulator({ jobMs: 300 });
    try {
      const ids = await Promise.all(
        Array.from({ length: 1000 }, async (_, i) => {
          const res = await fetch(`${s.url}/v1/videos`, { method: 'POST', headers: AUTH, body: JSON.stringify({ prompt: `load ${i}` }) });
          return ((await res.json()) as { id: string }).id;
        }),
      );
      expect(new Set(ids).size).toBe(1000);
      await sleep(350);
      const statuses = await Promise.all(
        ids.map(async (id) => ((await (await fetch(`${s.url}/v1/videos/${id}`, { headers: AUTH })).json()) as { status: string }).status),
      );
      expect(statuses.every((st) => st === 'completed')).toBe(true);
    } finally {
      await s.close();
    }
  });
});

describe('job model (unit)', () => {
  it('derives status and a monotonic ease-out progress from the clock', () => {
    const job = newJob({
      makeId: () => 'j',
      flavor: 'openai',
      model: 'sora-2',
      prompt: 'p',
      now: 1000,
      defaultJobMs: 1000,
      markers: parseMarkers(''),
      idempotencyKey: null,
      size: '720x1280',
    });
    expect(statusAt(job, 1000)).toBe('queued');
    expect(progressAt(job, 1050)).toBe(0);
    expect(statusAt(job, 1200)).toBe('in_progress');
    let last = -1;
    for (let t = 1000; t < 2000; t += 7) {
      const p = progressAt(job, t);
      expect(p).toBeGreaterThanOrEqual(last);
      expect(p).toBeLessThanOrEqual(99);
      last = p;
    }
    // ease-out: more than half done at the middle of the running phase
    expect(progressAt(job, 1550)).toBeGreaterThan(50);
    expect(statusAt(job, 2000)).toBe('completed');
    expect(progressAt(job, 2000)).toBe(100);
    const failed = newJob({
      makeId: () => 'f',
      flavor: 'veo',
      model: 'veo-2',
      prompt: 'p',
      now: 0,
      defaultJobMs: 100,
      markers: parseMarkers('[sim:fail]'),
      idempotencyKey: null,
      size: '16:9',
    });
    expect(statusAt(failed, 100)).toBe('failed');
    expect(progressAt(failed, 100)).toBeLessThan(100);
    const instant = newJob({
      makeId: () => 'i',
      flavor: 'veo',
      model: 'veo-2',
      prompt: 'p',
      now: 0,
      defaultJobMs: 0,
      markers: parseMarkers(''),
      idempotencyKey: null,
      size: '16:9',
    });
    expect(statusAt(instant, 0)).toBe('completed');
  });
});

describe('assets', () => {
  it('embeds a faststart MP4 and real images', () => {
    expect(looksLikeMp4(SAMPLE_MP4)).toBe(true);
    expect(SAMPLE_MP4.length).toBeLessThan(20 * 1024);
    // +faststart: the moov box comes before mdat.
    const moov = SAMPLE_MP4.indexOf('moov');
    const mdat = SAMPLE_MP4.indexOf('mdat');
    expect(moov).toBeGreaterThan(0);
    expect(moov).toBeLessThan(mdat);
    expect(SAMPLE_MP4.includes('avc1')).toBe(true);
    expect(sniffImage(THUMBNAIL_PNG)).toBe('image/png');
    expect(sniffImage(PROFILE_PNG)).toBe('image/png');
    expect(sniffImage(SPRITESHEET_JPEG)).toBe('image/jpeg');
    expect(sniffImage(Buffer.from('RIFF0000WEBPVP8 '))).toBe('image/webp');
    expect(sniffImage(Buffer.from('GIF89a......'))).toBe('image/gif');
    expect(sniffImage(Buffer.from('hello world'))).toBeNull();
  });
});
