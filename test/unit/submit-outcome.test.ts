/**
 * The classification of a failed submit attempt (src/providers/submit-outcome.ts), from errors
 * made by the real upstream fetch against tiny local servers: refused connections and error
 * answers surely made no job; a connection cut after the request was sent, a timeout, an
 * unreadable 2xx or a gateway timeout may have; a 4xx is a rejection.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { readJson, upstreamFetch, UpstreamError } from '../../src/providers/http';
import { submitOutcome } from '../../src/providers/submit-outcome';

/** The error one POST to `url` ends with (through readJson, as a submit reads its answer). */
async function failureOf(url: string, timeoutMs = 5000): Promise<unknown> {
  try {
    const res = await upstreamFetch('videos create', url, { method: 'POST', body: 'prompt=x' }, timeoutMs, 'test-channel');
    await readJson('videos create', res, z.object({ id: z.string() }));
  } catch (err) {
    return err;
  }
  throw new Error('the submit did not fail');
}

let server: http.Server;
let base: string;
const sockets = new Set<net.Socket>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    // The whole request is read first: every failure below comes after the provider had it.
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '';
      if (path === '/reset') return req.socket.destroy();
      if (path === '/hang') return; // never answers
      if (path === '/not-json') return res.writeHead(200, { 'content-type': 'application/json' }).end('<html>');
      if (path === '/wrong-shape') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"queued"}');
      const status = Number(path.slice(1));
      res.writeHead(status, { 'content-type': 'application/json', 'retry-after': '2' }).end(JSON.stringify({ error: { message: `status ${status}` } }));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => server.close(resolve));
});

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('surely not accepted', () => {
  test('connection refused: the request never left', async () => {
    const err = await failureOf(`http://127.0.0.1:${await closedPort()}/v1/videos`);
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).networkCode).toBe('ECONNREFUSED');
    expect(submitOutcome(err)).toBe('not_accepted');
  });

  test('a name that does not resolve', async () => {
    const err = await failureOf('http://no-such-host.invalid/v1/videos');
    expect(submitOutcome(err)).toBe('not_accepted');
  });

  test.each([429, 500, 503])('the provider answered %i', async (status) => {
    const err = await failureOf(`${base}/${status}`);
    expect(err).toMatchObject({ kind: 'retryable', status });
    expect(submitOutcome(err)).toBe('not_accepted');
  });
});

describe('outcome unknown', () => {
  test('the connection is cut after the request was sent', async () => {
    const err = await failureOf(`${base}/reset`);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(submitOutcome(err)).toBe('unknown');
  });

  test('no answer before the request timeout', async () => {
    const err = await failureOf(`${base}/hang`, 300);
    expect((err as UpstreamError).networkCode).toBe('TimeoutError');
    expect(submitOutcome(err)).toBe('unknown');
  });

  test.each(['/not-json', '/wrong-shape'])('a 2xx answer that cannot be read (%s)', async (path) => {
    const err = await failureOf(`${base}${path}`);
    expect(err).toMatchObject({ kind: 'retryable', status: 200 });
    expect(submitOutcome(err)).toBe('unknown');
  });

  test.each([502, 504, 409])('an answer that may come from a proxy or a keyed create still running (%i)', async (status) => {
    const err = await failureOf(`${base}/${status}`);
    expect(submitOutcome(err)).toBe('unknown');
  });

  test('anything that is not an upstream error', () => {
    expect(submitOutcome(new Error('boom'))).toBe('unknown');
    expect(submitOutcome(new UpstreamError('video download: empty body', 'retryable'))).toBe('unknown');
  });
});

test.each([400, 404, 422])('a %i is a rejection: no failover, the task fails', async (status) => {
  const err = await failureOf(`${base}/${status}`);
  expect(err).toMatchObject({ kind: 'rejected', status });
  expect(submitOutcome(err)).toBe('rejected');
});
