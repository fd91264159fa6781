/**
 * What the official SDKs read beyond the body, on the real stack: the `request-id` of every
 * /v1/messages answer (the Anthropic SDK's `_request_id`), messages.countTokens(), and OpenAI's
 * `openai-processing-ms` and `x-ratelimit-*` on chat completions, and the gateway's own
 * `x-gateway-overhead-ms` on every proxied text answer. The rate-limit headers describe the key's
 * own limit at the gateway, never the upstream account's.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGateway, type Gateway } from '../support/stack';

let gw: Gateway;
let key: string;
let anthropic: Anthropic;
let openai: OpenAI;

beforeAll(async () => {
  gw = await startGateway();
  key = await gw.issueKey('sdk-headers', { rate_limit_rpm: 600 });
  anthropic = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
  openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
}, 120_000);

const hello = [{ role: 'user' as const, content: 'Hello there, count me' }];

test('a successful message carries request-id, which the SDK reads as _request_id', async () => {
  const { data, response } = await anthropic.messages.create({ model: 'cm-sonnet-4.5', max_tokens: 32, messages: hello }).withResponse();
  expect(response.headers.get('request-id')).toMatch(/^req_[0-9a-f]{32}$/);
  expect(data.type).toBe('message');
  const message = await anthropic.messages.create({ model: 'cm-sonnet-4.5', max_tokens: 32, messages: hello });
  expect(message._request_id).toMatch(/^req_[0-9a-f]{32}$/);

  const stream = await anthropic.messages.create({ model: 'cm-sonnet-4.5', max_tokens: 32, messages: hello, stream: true }).withResponse();
  expect(stream.response.headers.get('request-id')).toMatch(/^req_/);
  for await (const event of stream.data) void event;

  // The key's own limit, in Anthropic's names too.
  expect(response.headers.get('anthropic-ratelimit-requests-limit')).toBe('600');
  expect(Number(response.headers.get('anthropic-ratelimit-requests-remaining'))).toBeLessThan(600);
  expect(Date.parse(response.headers.get('anthropic-ratelimit-requests-reset') ?? '')).toBeGreaterThan(Date.now() - 1000);

  // And a failure still carries it, in the header and the body.
  const failed = await anthropic.messages.create({ model: 'cm-sonnet-4.5', max_tokens: 0, messages: hello }).catch((e: unknown) => e);
  expect(failed).toBeInstanceOf(Anthropic.BadRequestError);
  expect((failed as InstanceType<typeof Anthropic.BadRequestError>).requestID).toMatch(/^req_/);
});

test('messages.countTokens() is answered by the native channel, free, with the same checks as messages', async () => {
  const before = (await (await fetch(`${gw.url}/v1/billing`, { headers: { authorization: `Bearer ${key}` } })).json()) as Record<string, unknown>;
  const counted = await anthropic.messages.countTokens({ model: 'cm-sonnet-4.5', messages: hello, system: 'be brief' });
  expect(counted.input_tokens).toBeGreaterThan(0);
  const longer = await anthropic.messages.countTokens({ model: 'cm-sonnet-4.5', messages: [{ role: 'user', content: 'Hello there, count me '.repeat(50) }] });
  expect(longer.input_tokens).toBeGreaterThan(counted.input_tokens);
  const after = (await (await fetch(`${gw.url}/v1/billing`, { headers: { authorization: `Bearer ${key}` } })).json()) as Record<string, unknown>;
  expect(after).toEqual(before);

  await expect(anthropic.messages.countTokens({ model: 'cm-sonnet-4.5', messages: [] })).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  await expect(anthropic.messages.countTokens({ model: 'gpt-4o-mini', messages: hello })).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  await expect(
    new Anthropic({ apiKey: 'sk-ant-foreign', baseURL: gw.url, maxRetries: 0 }).messages.countTokens({ model: 'cm-sonnet-4.5', messages: hello }),
  ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
});

test("chat completions carry openai-processing-ms and the key's x-ratelimit-* headers", async () => {
  const { response } = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: hello }).withResponse();
  // A number of milliseconds, present (Number(null) would pass a >= 0 check).
  expect(response.headers.get('openai-processing-ms')).toMatch(/^\d+$/);
  expect(response.headers.get('x-ratelimit-limit-requests')).toBe('600');
  expect(Number(response.headers.get('x-ratelimit-remaining-requests'))).toBeLessThan(600);
  expect(response.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+s$/);

  const streamed = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: hello, stream: true }).withResponse();
  expect(streamed.response.headers.get('openai-processing-ms')).toMatch(/^\d+$/);
  for await (const chunk of streamed.data) void chunk;
});

test('x-gateway-overhead-ms is the time to the answer less the waits on the provider, on both protocols, plain and streamed', async () => {
  const overhead = (headers: Headers): number => {
    const value = headers.get('x-gateway-overhead-ms');
    expect(value).toMatch(/^\d+\.\d{2}$/);
    return Number(value);
  };
  // The provider takes 400 ms to answer: the whole answer's time holds it, the gateway's share does not.
  const slow = [{ role: 'user' as const, content: 'take your time [sim:slow=400]' }];
  const plain = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: slow }).withResponse();
  expect(Number(plain.response.headers.get('openai-processing-ms'))).toBeGreaterThanOrEqual(400);
  expect(overhead(plain.response.headers)).toBeLessThan(200);

  const streamed = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: slow, stream: true }).withResponse();
  expect(overhead(streamed.response.headers)).toBeLessThan(200);
  for await (const chunk of streamed.data) void chunk;

  const message = await anthropic.messages.create({ model: 'cm-sonnet-4.5', max_tokens: 32, messages: slow }).withResponse();
  expect(overhead(message.response.headers)).toBeLessThan(200);
  const messageStream = await anthropic.messages.create({ model: 'cm-sonnet-4.5', max_tokens: 32, messages: hello, stream: true }).withResponse();
  expect(overhead(messageStream.response.headers)).toBeGreaterThanOrEqual(0);
  for await (const event of messageStream.data) void event;
});
