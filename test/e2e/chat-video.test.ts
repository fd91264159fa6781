/**
 * Video through chat completions (spec 4.10, 6), driven by the official openai SDK:
 * task_id first, progress lines that only rise, video_url last, [DONE]; failures say why;
 * a client that disconnects ends its stream, not the task.
 */
import OpenAI from 'openai';
import { call, waitForTerminal } from '../support/client';
import { startGateway, type Gateway } from '../support/stack';

let gw: Gateway;
let key: string;
let openai: OpenAI;

beforeAll(async () => {
  gw = await startGateway({ env: { STREAM_POLL_MS: '100' } });
  key = await gw.issueKey('chat');
  openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
}, 120_000);

async function collect(prompt: string, model = 'motion-2') {
  const stream = await openai.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: prompt }] });
  const contents: string[] = [];
  const finishReasons: (string | null)[] = [];
  for await (const chunk of stream) {
    expect(chunk.object).toBe('chat.completion.chunk');
    expect(chunk.model).toBe(model);
    const choice = chunk.choices[0]!;
    if (choice.delta.content) contents.push(choice.delta.content);
    finishReasons.push(choice.finish_reason);
  }
  return { contents, finishReasons };
}

test('stream: task_id first, rising progress without repeats, video_url last, then [DONE]', async () => {
  const { contents, finishReasons } = await collect('a sailing ship [sim:ms=1500]');
  expect(contents[0]).toMatch(/^task_id: motion-2:\d+-[a-z0-9]+\n$/);
  const progress = contents.filter((c) => c.startsWith('progress: ')).map((c) => Number(/^progress: (\d+)%\n$/.exec(c)?.[1]));
  expect(progress.length).toBeGreaterThanOrEqual(2);
  for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThan(progress[i - 1]!);
  expect(progress[progress.length - 1]).toBe(100);
  const last = contents[contents.length - 1]!;
  expect(last).toMatch(/^video_url: http:\/\/.+\/files\/videos\/motion-2\/.+\.mp4\?expires=\d+&signature=.+\n$/);
  expect((await fetch(last.slice('video_url: '.length).trim())).status).toBe(200);
  expect(finishReasons[finishReasons.length - 1]).toBe('stop');
  expect(finishReasons.slice(0, -1).every((r) => r === null)).toBe(true);
});

test('stream of a failed task ends with a delta that says why, a finish_reason, then [DONE]', async () => {
  const { contents, finishReasons } = await collect('doomed [sim:fail] [sim:ms=300]', 'motion-2-pro');
  expect(contents[contents.length - 1]).toMatch(/^failed: .+\n$/);
  expect(contents.some((c) => c.startsWith('video_url'))).toBe(false);
  expect(finishReasons[finishReasons.length - 1]).toBe('stop');
});

test('the raw stream is SSE data lines ending with data: [DONE]', async () => {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'motion-2', stream: true, messages: [{ role: 'user', content: 'raw [sim:ms=300]' }] }),
  });
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const text = await res.text();
  const events = text.split('\n\n').filter((e) => e.trim() !== '');
  expect(events[events.length - 1]).toBe('data: [DONE]');
  for (const e of events.slice(0, -1)) expect(() => JSON.parse(e.replace(/^data: /, ''))).not.toThrow();
});

test('a client that disconnects halfway ends its stream; the task completes anyway', async () => {
  const stream = await openai.chat.completions.create({ model: 'motion-2', stream: true, messages: [{ role: 'user', content: 'walk away [sim:ms=2500]' }] });
  let taskId = '';
  for await (const chunk of stream) {
    const content = chunk.choices[0]?.delta.content ?? '';
    if (content.startsWith('task_id: ')) taskId = content.slice('task_id: '.length).trim();
    if (content.startsWith('progress: ')) break; // leaves the loop: the SDK aborts the request
  }
  expect(taskId).toMatch(/^motion-2:/);
  const { final } = await waitForTerminal(gw.url, key, taskId);
  expect(final.status).toBe('completed');
  const health = await fetch(`${gw.url}/healthz`);
  expect(health.status).toBe(200);
});

test('stream: false answers once the task ends, with the same lines in one message', async () => {
  const completion = await openai.chat.completions.create({
    model: 'motion-2',
    messages: [
      { role: 'system', content: 'ignored' },
      { role: 'user', content: 'in one go [sim:ms=400]' },
    ],
  });
  expect(completion.object).toBe('chat.completion');
  const content = completion.choices[0]!.message.content!;
  expect(content).toMatch(/^task_id: motion-2:\S+\n(progress: \d+%\n)+video_url: \S+\n$/);
  expect(completion.choices[0]!.finish_reason).toBe('stop');
});

test('bad input: no user text, a non-motion model, an empty messages array, more than one choice', async () => {
  const post = (json: unknown) => call<{ error: { param: string | null } }>(`${gw.url}/v1/chat/completions`, { key, json });
  const noUser = await post({ model: 'motion-2', messages: [{ role: 'system', content: 'x' }] });
  expect(noUser.status).toBe(400);
  expect(noUser.body.error.param).toBe('messages');
  const vidgen = await post({ model: 'vidgen3', messages: [{ role: 'user', content: 'x' }] });
  expect(vidgen.status).toBe(400);
  expect(vidgen.body.error.param).toBe('model');
  expect((await post({ model: 'motion-2', messages: [] })).status).toBe(400);
  // Three choices would be three videos: refused before any charge, not answered with one.
  const several = await post({ model: 'motion-2', n: 3, messages: [{ role: 'user', content: 'x' }] });
  expect(several.status).toBe(400);
  expect(several.body.error.param).toBe('n');
  await expect(openai.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
});
