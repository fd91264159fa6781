/**
 * enhance_prompt: the pass-through default, and the chat-model enhancer against a local
 * OpenAI-compatible chat-completions stand-in that records what it was sent.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chatModelEnhancer, passThroughEnhancer } from '../../src/activities/prompt-enhancer';
import { UpstreamError } from '../../src/providers/http';

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  contentType: string | undefined;
  body: unknown;
}

interface Answer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

let server: http.Server;
let base: string;
let seen: Seen[] = [];
let answer: Answer;

const completion = (content: string | null): Answer => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1700000000,
    model: 'rewriter-1',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  }),
});

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // keep the raw text: the assertions on it will fail
      }
      seen.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, contentType: req.headers['content-type'], body });
      res.writeHead(answer.status, answer.headers ?? { 'content-type': 'application/json' });
      res.end(answer.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

beforeEach(() => {
  seen = [];
  answer = completion('unused');
});

/** The rejection of a promise, which must be an UpstreamError. */
async function upstreamError(promise: Promise<unknown>): Promise<UpstreamError> {
  let thrown: unknown;
  try {
    await promise;
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(UpstreamError);
  return thrown as UpstreamError;
}

describe('passThroughEnhancer', () => {
  test('returns the prompt unchanged and says it is a pass-through', async () => {
    expect(passThroughEnhancer.kind).toBe('pass-through');
    await expect(passThroughEnhancer.enhance('un chat sur un toit, la nuit')).resolves.toBe('un chat sur un toit, la nuit');
    await expect(passThroughEnhancer.enhance('  spaced  ')).resolves.toBe('  spaced  ');
  });
});

describe('chatModelEnhancer', () => {
  test('POSTs a chat completion with the key, the model, a system instruction and the prompt; returns the rewrite', async () => {
    answer = completion('  A cat on a rooftop at night, slow dolly-in, moonlight rim lighting.\n');
    const enhancer = chatModelEnhancer(`${base}/`, 'enh-secret', 'rewriter-1', 5000);
    expect(enhancer.kind).toBe('model');

    const result = await enhancer.enhance('un chat sur un toit, la nuit');
    expect(result).toBe('A cat on a rooftop at night, slow dolly-in, moonlight rim lighting.');

    expect(seen).toHaveLength(1);
    const request = seen[0]!;
    expect(request.method).toBe('POST');
    // The trailing slash of the base URL does not double up.
    expect(request.url).toBe('/v1/chat/completions');
    expect(request.authorization).toBe('Bearer enh-secret');
    expect(request.contentType).toBe('application/json');
    const body = request.body as { model: string; messages: { role: string; content: string }[] };
    expect(Object.keys(body).sort()).toEqual(['messages', 'model']);
    expect(body.model).toBe('rewriter-1');
    expect(body.messages).toHaveLength(2);
    expect(body.messages[0]?.role).toBe('system');
    expect(body.messages[0]?.content).toMatch(/English/);
    expect(body.messages[0]?.content).toMatch(/prompt/);
    expect(body.messages[1]).toEqual({ role: 'user', content: 'un chat sur un toit, la nuit' });
  });

  test('a base URL with a path prefix keeps it', async () => {
    answer = completion('rewritten');
    await expect(chatModelEnhancer(`${base}/proxy/openai`, 'k', 'm', 5000).enhance('p')).resolves.toBe('rewritten');
    expect(seen.map((s) => s.url)).toEqual(['/proxy/openai/v1/chat/completions']);
  });

  test.each<[string, string | null]>([
    ['an empty answer', ''],
    ['a whitespace-only answer', ' \n\t '],
    ['a null content', null],
  ])('%s falls back to the original prompt', async (_what, content) => {
    answer = completion(content);
    await expect(chatModelEnhancer(base, 'k', 'm', 5000).enhance('keep me as I am')).resolves.toBe('keep me as I am');
    expect(seen).toHaveLength(1);
  });

  test('HTTP 500 rejects with a retryable UpstreamError carrying the status and the reason', async () => {
    answer = { status: 500, body: JSON.stringify({ error: { message: 'the model is overloaded', type: 'server_error' } }) };
    const err = await upstreamError(chatModelEnhancer(base, 'k', 'm', 5000).enhance('a prompt'));
    expect(err.kind).toBe('retryable');
    expect(err.status).toBe(500);
    expect(err.message).toBe('prompt enhancer: HTTP 500: the model is overloaded');
  });

  test('HTTP 429 with Retry-After is retryable and carries the delay', async () => {
    answer = { status: 429, headers: { 'content-type': 'application/json', 'retry-after': '7' }, body: JSON.stringify({ error: { message: 'slow down' } }) };
    const err = await upstreamError(chatModelEnhancer(base, 'k', 'm', 5000).enhance('a prompt'));
    expect(err.kind).toBe('retryable');
    expect(err.status).toBe(429);
    expect(err.retryAfterMs).toBe(7000);
  });

  test('HTTP 400 rejects with a rejected UpstreamError carrying the reason', async () => {
    answer = { status: 400, body: JSON.stringify({ error: { message: "The model 'm' does not exist", type: 'invalid_request_error' } }) };
    const err = await upstreamError(chatModelEnhancer(base, 'k', 'm', 5000).enhance('a prompt'));
    expect(err.kind).toBe('rejected');
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/HTTP 400: The model 'm' does not exist/);
  });

  test('a 200 that is not a chat completion is a retryable UpstreamError, not the prompt', async () => {
    answer = { status: 200, body: JSON.stringify({ choices: [] }) };
    const shape = await upstreamError(chatModelEnhancer(base, 'k', 'm', 5000).enhance('a prompt'));
    expect(shape.kind).toBe('retryable');
    expect(shape.message).toMatch(/unexpected response shape/);

    answer = { status: 200, headers: { 'content-type': 'text/html' }, body: '<html>gateway</html>' };
    const notJson = await upstreamError(chatModelEnhancer(base, 'k', 'm', 5000).enhance('a prompt'));
    expect(notJson.kind).toBe('retryable');
    expect(notJson.message).toMatch(/not JSON/);
  });

  test('an unreachable endpoint is a retryable UpstreamError', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const err = await upstreamError(chatModelEnhancer(`http://127.0.0.1:${port}`, 'k', 'm', 5000).enhance('a prompt'));
    expect(err.kind).toBe('retryable');
    expect(err.message).toMatch(/connection failed/);
  });
});
