/**
 * The Redis token bucket against the local Redis on 127.0.0.1:6379 (started when it is down):
 * two limiters, standing for two API replicas, share one bucket per key; and the limiter fails
 * open, fast and quietly, when Redis is dead, stalled or restarted. Every run uses its own key
 * prefix, so reruns and parallel runs never share a bucket.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import Redis from 'ioredis';
import pino, { type Logger } from 'pino';
import { RedisRateLimiter } from '../../src/limits/redis-rate-limiter';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `gw:rl:test:${process.pid}:${Date.now()}:`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function ping(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    disconnectTimeout: 100, // else a failed attempt holds jest's exit for 2 s
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** The shared Redis the tests use; started as a daemon when it is down. */
async function ensureRedis(): Promise<string> {
  if (await ping(REDIS_URL)) return REDIS_URL;
  const port = new URL(REDIS_URL).port || '6379';
  try {
    // Loopback only, and no snapshots: a dump.rdb would land in the working tree.
    const args = ['--port', port, '--bind', '127.0.0.1', '--save', '', '--daemonize', 'yes'];
    execFileSync('redis-server', args, { stdio: 'ignore', timeout: 10_000 });
  } catch {
    // already starting, or not startable: the reachability check below decides
  }
  for (let i = 0; i < 40; i++) {
    if (await ping(REDIS_URL)) return REDIS_URL;
    await sleep(250);
  }
  throw new Error(`Redis is not reachable at ${REDIS_URL} and could not be started`);
}

/** A logger whose lines the test can read. */
function capturingLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const raw: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void raw.push(line) });
  return { logger, lines: () => raw.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** A throwaway redis-server (no persistence), so restarting it disturbs no one else. */
async function privateRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  for (let i = 0; i < 40; i++) {
    if (await ping(`redis://127.0.0.1:${port}`)) return child;
    await sleep(100);
  }
  child.kill();
  throw new Error('private redis-server did not start');
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/**
 * Speaks just enough RESP to let ioredis connect and become ready, then never answers a script:
 * a Redis that is up but stalled.
 */
function stalledRedis(): { server: net.Server; close: () => Promise<void> } {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (;;) {
        const parsed = parseCommand(buffered);
        if (!parsed) return;
        buffered = buffered.slice(parsed.length);
        const name = parsed.args[0]?.toLowerCase();
        if (name === 'evalsha' || name === 'eval') continue;
        if (name === 'info') socket.write('$11\r\nloading:0\r\n\r\n');
        else socket.write('+OK\r\n');
      }
    });
    socket.on('error', () => undefined);
  });
  const close = async (): Promise<void> => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
  return { server, close };
}

/** One RESP array of bulk strings from the start of `input`, or null when it is incomplete. */
function parseCommand(input: string): { args: string[]; length: number } | null {
  const header = /^\*(\d+)\r\n/.exec(input);
  if (!header?.[1]) return null;
  let at = header[0].length;
  const args: string[] = [];
  for (let i = 0; i < Number(header[1]); i++) {
    const bulk = /^\$(\d+)\r\n/.exec(input.slice(at));
    if (!bulk?.[1]) return null;
    const start = at + bulk[0].length;
    const end = start + Number(bulk[1]);
    if (input.length < end + 2) return null;
    args.push(input.slice(start, end));
    at = end + 2;
  }
  return { args, length: at };
}

describe('RedisRateLimiter', () => {
  let url: string;
  let admin: Redis;
  const opened: RedisRateLimiter[] = [];

  function limiter(target: string, logger: Logger = pino({ level: 'silent' })): RedisRateLimiter {
    const created = new RedisRateLimiter(target, logger, { prefix: PREFIX });
    opened.push(created);
    return created;
  }

  beforeAll(async () => {
    url = await ensureRedis();
    admin = new Redis(url);
  }, 30_000);

  afterAll(async () => {
    await Promise.all(opened.map((l) => l.close()));
    const keys = await admin.keys(`${PREFIX}*`);
    if (keys.length > 0) await admin.del(...keys);
    await admin.quit();
  });

  it('two replicas draw from one bucket per key', async () => {
    const a = limiter(url);
    const b = limiter(url);
    expect(a.kind).toBe('redis');
    expect(await a.ready()).toBe(true);
    expect(await b.ready()).toBe(true);

    const decisions = [];
    for (let i = 0; i < 11; i++) decisions.push(await (i % 2 === 0 ? a : b).take('shared', 10));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect(decisions.slice(0, 10).map((d) => d.remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    const refused = decisions[10];
    expect(refused).toMatchObject({ allowed: false, limit: 10, remaining: 0 });
    expect(refused?.retryAfterSeconds).toBeGreaterThan(0);
    expect(refused?.retryAfterSeconds).toBeLessThanOrEqual(6); // one token per 6 s at 10 rpm
    expect(refused?.resetSeconds).toBeLessThanOrEqual(60);

    // The bucket lives under the configured prefix and expires on its own.
    const ttl = await admin.pttl(`${PREFIX}shared`);
    expect(ttl).toBeGreaterThan(60_000);
    expect(ttl).toBeLessThanOrEqual(120_000);

    // Other keys have their own buckets.
    expect((await b.take('other', 10)).allowed).toBe(true);
  });

  it('spends each token once under concurrent takes from both replicas', async () => {
    const a = limiter(url);
    const b = limiter(url);
    await Promise.all([a.ready(), b.ready()]);
    const decisions = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? a : b).take('race', 20)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(20);
  });

  it('refills on the Redis clock', async () => {
    const a = limiter(url);
    await a.ready();
    // 600 rpm: a token every 100 ms. Drain it (tokens trickle in while the burst runs).
    const burst = await Promise.all(Array.from({ length: 600 }, () => a.take('refill', 600)));
    expect(burst.every((d) => d.allowed)).toBe(true);
    let refused = await a.take('refill', 600);
    for (let i = 0; i < 50 && refused.allowed; i++) refused = await a.take('refill', 600);
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 1 });
    // 250 ms later: 2.5 tokens on top of the < 1 left, so 2 or 3 more, never all 5. A loaded
    // machine stretches the wait: a token per 100 ms of it, plus the one under way, at most.
    const refusedAt = Date.now();
    await sleep(250);
    let allowed = 0;
    for (let i = 0; i < 5; i++) if ((await a.take('refill', 600)).allowed) allowed++;
    const waitedMs = Date.now() - refusedAt;
    expect(allowed).toBeGreaterThanOrEqual(2);
    expect(allowed).toBeLessThanOrEqual(Math.min(5, Math.floor(waitedMs / 100) + 1));
  });

  it('fails open at once, and warns once, when Redis is unreachable', async () => {
    const { logger, lines } = capturingLogger();
    const dead = limiter('redis://127.0.0.1:1', logger);
    const started = Date.now();
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await dead.take('dead', 2));
    expect(Date.now() - started).toBeLessThan(1_000);
    // Decided in-process instead: still a limit, not a free pass.
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, false, false]);
    await sleep(300); // let reconnect attempts fail too
    await dead.take('dead', 2);
    expect(lines()).toHaveLength(1);
    expect(lines()[0]).toMatchObject({ level: 40, msg: 'rate limiter: Redis unavailable, limiting in-process' });
  });

  it('fails open within the command timeout when Redis stalls', async () => {
    const { server, close } = stalledRedis();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    try {
      const { logger, lines } = capturingLogger();
      const stalled = limiter(`redis://127.0.0.1:${address.port}`, logger);
      expect(await stalled.ready()).toBe(true);
      let started = Date.now();
      expect((await stalled.take('stall', 5)).allowed).toBe(true);
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(lines()).toHaveLength(1);
      // Later calls skip the stalled server instead of each waiting out the timeout.
      started = Date.now();
      expect((await stalled.take('stall', 5)).allowed).toBe(true);
      expect(Date.now() - started).toBeLessThan(100);
      await stalled.close();
    } finally {
      await close();
    }
  });

  it('loads its script on a fresh Redis and goes back to sharing after a restart', async () => {
    const port = await freePort();
    const target = `redis://127.0.0.1:${port}`;
    let server = await privateRedis(port);
    try {
      const a = limiter(target);
      const b = limiter(target);
      await Promise.all([a.ready(), b.ready()]);
      // The first call meets NOSCRIPT and loads the script.
      expect((await a.take('restart', 3)).remaining).toBe(2);
      expect((await b.take('restart', 3)).remaining).toBe(1);

      await stop(server);
      expect((await a.take('restart', 3)).allowed).toBe(true); // in-process meanwhile

      server = await privateRedis(port);
      expect(await a.ready(10_000)).toBe(true);
      expect(await b.ready(10_000)).toBe(true);
      // Restarted without persistence: empty script cache and a new, full, shared bucket.
      expect((await a.take('restart', 3)).remaining).toBe(2);
      expect((await b.take('restart', 3)).remaining).toBe(1);
      await Promise.all([a.close(), b.close()]);
    } finally {
      await stop(server);
    }
  }, 30_000);
});
