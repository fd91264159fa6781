/**
 * The console's SSE reader (console/src/sse.ts): how a streamed answer's bytes, cut anywhere by
 * the network, become events, and which text each event of the two streaming formats adds.
 */
import { readSse, textOf, type SseEvent } from '../../console/src/sse';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
}

async function collect(chunks: string[]): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of readSse(streamOf(chunks))) out.push(e);
  return out;
}

test('frames cut across chunks, CRLF line ends, comments and multi-line data', async () => {
  const text = 'event: message_start\r\ndata: {"a":1}\r\n\r\n: keep-alive\n\ndata: line one\ndata: line two\n\nevent: ping\ndata: {}\n\n';
  const whole = await collect([text]);
  // Every split point gives the same events: a frame is only read once its blank line arrived.
  for (let i = 1; i < text.length; i += 1) expect(await collect([text.slice(0, i), text.slice(i)])).toEqual(whole);
  expect(whole).toEqual([
    { event: 'message_start', data: '{"a":1}' },
    { event: 'message', data: 'line one\nline two' },
    { event: 'ping', data: '{}' },
  ]);
});

test('a last frame without its blank line is still read; a multi-byte character split between chunks survives', async () => {
  const bytes = new TextEncoder().encode('data: é\n\ndata: end');
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes.slice(0, 7)); // inside the two bytes of é
      controller.enqueue(bytes.slice(7));
      controller.close();
    },
  });
  const out: SseEvent[] = [];
  for await (const e of readSse(stream)) out.push(e);
  expect(out).toEqual([
    { event: 'message', data: 'é' },
    { event: 'message', data: 'end' },
  ]);
});

test('the text of messages and chat-completions events, their ends and their errors', () => {
  expect(textOf({ event: 'content_block_delta', data: '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}' })).toEqual({
    text: 'Hi',
  });
  expect(textOf({ event: 'content_block_delta', data: '{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{"}}' })).toEqual({});
  expect(textOf({ event: 'message_stop', data: '{"type":"message_stop"}' })).toEqual({ done: true });
  expect(textOf({ event: 'error', data: '{"type":"error","error":{"type":"api_error","message":"stream idle"}}' })).toEqual({ error: 'stream idle' });
  expect(textOf({ event: 'message', data: '{"choices":[{"delta":{"content":"Hel"}}]}' })).toEqual({ text: 'Hel' });
  expect(textOf({ event: 'message', data: '{"choices":[],"usage":{"prompt_tokens":3}}' })).toEqual({});
  expect(textOf({ event: 'message', data: '{"error":{"message":"upstream broke off"}}' })).toEqual({ error: 'upstream broke off' });
  expect(textOf({ event: 'message', data: '[DONE]' })).toEqual({ done: true });
  expect(textOf({ event: 'message', data: 'not json' })).toEqual({});
});

test('textOf: the Responses API stream', () => {
  expect(textOf({ event: 'response.output_text.delta', data: '{"type":"response.output_text.delta","sequence_number":4,"delta":"Hi"}' })).toEqual({
    text: 'Hi',
  });
  expect(textOf({ event: 'response.created', data: '{"type":"response.created","sequence_number":0,"response":{"id":"resp_1"}}' })).toEqual({});
  expect(textOf({ event: 'response.reasoning_summary_text.delta', data: '{"type":"response.reasoning_summary_text.delta","delta":"hmm"}' })).toEqual({});
  expect(textOf({ event: 'response.completed', data: '{"type":"response.completed","response":{}}' })).toEqual({ done: true });
  expect(textOf({ event: 'error', data: '{"type":"error","code":"upstream_stream_broken","message":"gone quiet"}' })).toEqual({ error: 'gone quiet' });
});
