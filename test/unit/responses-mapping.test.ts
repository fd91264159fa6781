/**
 * The Responses API mapping, pure: usage as billed, the gateway's ids in place of the upstream's
 * (non-streamed answers and stream events), the upstream body of a continued response, and the
 * hold's output ceiling from max_output_tokens.
 */
import { outputTokenCeiling, needsResponsesOutputCap, inputTokenCeiling, TEXT_CEILING } from '../../src/billing/text-ceiling';
import { ResponsesStreamTap, toTextUsage, usageOfResponse } from '../../src/providers/openai-responses/mapping';
import { protocolForRequest } from '../../src/providers/openai-responses/protocol';
import { isTerminalStatus } from '../../src/providers/openai-responses/schemas';

const upstream = (extra: Record<string, unknown> = {}) => ({
  id: 'resp_upstream',
  object: 'response',
  created_at: 1,
  status: 'completed',
  model: 'o3-pro-2025-06-10',
  output: [{ type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'hi', annotations: [] }] }],
  usage: {
    input_tokens: 100,
    input_tokens_details: { cached_tokens: 40 },
    output_tokens: 30,
    output_tokens_details: { reasoning_tokens: 20 },
    total_tokens: 130,
  },
  previous_response_id: 'resp_upstream_prev',
  vendor_field: 'kept',
  ...extra,
});
const ids = { id: 'resp_gateway', previousResponseId: 'resp_gateway_prev' };

test('usage: cached input billed apart, reasoning tokens inside output', () => {
  expect(toTextUsage(upstream().usage)).toEqual({ inputTokens: 60, outputTokens: 30, cacheCreationTokens: 0, cacheReadTokens: 40 });
  expect(usageOfResponse(upstream())).toEqual({ inputTokens: 60, outputTokens: 30, cacheCreationTokens: 0, cacheReadTokens: 40 });
  expect(usageOfResponse(upstream({ usage: null }))).toBeNull();
  expect(usageOfResponse({ error: { message: 'x' } })).toBeNull();
});

test('terminal statuses', () => {
  expect(['queued', 'in_progress'].map((s) => isTerminalStatus(s as 'queued'))).toEqual([false, false]);
  expect(['completed', 'failed', 'cancelled', 'incomplete'].every((s) => isTerminalStatus(s as 'completed'))).toBe(true);
});

describe('protocolForRequest', () => {
  test('the upstream body: the channel model, and previous_response_id under the upstream id', () => {
    const { protocol } = protocolForRequest({ ids, upstreamPreviousId: 'resp_upstream_prev', model: 'o3-pro' });
    expect(protocol.upstreamBody({ model: 'o3-pro', input: 'x', previous_response_id: 'resp_gateway_prev' }, 'o3-pro-2025-06-10')).toEqual({
      model: 'o3-pro-2025-06-10',
      input: 'x',
      previous_response_id: 'resp_upstream_prev',
    });
  });

  test('a non-streamed answer gets the gateway ids and model; other fields stay; the outcome names the upstream id', () => {
    const { protocol, outcome } = protocolForRequest({ ids, upstreamPreviousId: 'resp_upstream_prev', model: 'o3-pro' });
    const mapped = JSON.parse(protocol.mapAnswer!(Buffer.from(JSON.stringify(upstream()))).toString('utf8')) as Record<string, unknown>;
    expect(mapped).toMatchObject({ id: 'resp_gateway', previous_response_id: 'resp_gateway_prev', model: 'o3-pro', vendor_field: 'kept' });
    expect(outcome()).toMatchObject({ upstreamId: 'resp_upstream', response: { id: 'resp_gateway' } });
    // Not a Response: relayed as it is.
    expect(protocol.mapAnswer!(Buffer.from('not json')).toString()).toBe('not json');
  });

  test('the stream tap: Response events re-encoded with the gateway ids, the rest forwarded, usage from the final event', () => {
    const { protocol, outcome } = protocolForRequest({ ids, upstreamPreviousId: null, model: 'o3-pro' });
    const tap = protocol.tap(true) as ResponsesStreamTap;
    expect(tap.dropsEvents).toBe(true);
    const created = tap.onEvent(
      'response.created',
      JSON.stringify({ type: 'response.created', sequence_number: 0, response: upstream({ status: 'in_progress', usage: null }) }),
    );
    expect(typeof created).toBe('string');
    const [eventLine, dataLine] = (created as string).split('\n');
    expect(eventLine).toBe('event: response.created');
    expect(JSON.parse(dataLine!.slice(6))).toMatchObject({ type: 'response.created', sequence_number: 0, response: { id: 'resp_gateway', model: 'o3-pro' } });
    expect(tap.upstreamId).toBe('resp_upstream');
    expect(tap.ended).toBe(false);
    expect(
      tap.onEvent('response.output_text.delta', JSON.stringify({ type: 'response.output_text.delta', sequence_number: 1, item_id: 'msg_1', delta: 'héllo' })),
    ).toBe(true);
    expect(tap.relayedOutputBytes).toBe(Buffer.byteLength('héllo'));
    const done = tap.onEvent('response.completed', JSON.stringify({ type: 'response.completed', sequence_number: 2, response: upstream() }));
    expect(JSON.parse((done as string).split('\n')[1]!.slice(6))).toMatchObject({ response: { id: 'resp_gateway', status: 'completed' } });
    expect(tap.ended).toBe(true);
    expect(tap.errored).toBe(false);
    expect(tap.usage).toEqual({ inputTokens: 60, outputTokens: 30, cacheCreationTokens: 0, cacheReadTokens: 40 });
    expect(outcome()).toMatchObject({ upstreamId: 'resp_upstream', response: { id: 'resp_gateway', status: 'completed' } });
    // A break-off continues the numbering.
    expect(tap.breakOff('gone')).toBe(
      `event: error\ndata: ${JSON.stringify({ type: 'error', code: 'upstream_stream_broken', message: 'gone', param: null, sequence_number: 3 })}\n\n`,
    );
  });

  test('an error event or response.failed ends the stream as errored', () => {
    const a = new ResponsesStreamTap(ids, 'o3-pro');
    expect(a.onEvent('error', JSON.stringify({ type: 'error', code: 'server_error', message: 'boom', param: null, sequence_number: 4 }))).toBe(true);
    expect([a.ended, a.errored]).toEqual([true, true]);
    const b = new ResponsesStreamTap(ids, 'o3-pro');
    b.onEvent('response.failed', JSON.stringify({ type: 'response.failed', sequence_number: 5, response: upstream({ status: 'failed', usage: null }) }));
    expect([b.ended, b.errored]).toEqual([true, true]);
  });
});

describe('the hold of a responses request', () => {
  const shape = (body: Record<string, unknown>) => ({ endpoint: 'responses' as const, body, bodyBytes: 1000 });
  test('output: max_output_tokens, else the cap', () => {
    expect(outputTokenCeiling(shape({ max_output_tokens: 500 }), 4096)).toBe(500);
    expect(outputTokenCeiling(shape({}), 4096)).toBe(4096);
    expect(needsResponsesOutputCap({})).toBe(true);
    expect(needsResponsesOutputCap({ max_output_tokens: 64 })).toBe(false);
  });
  test('input: images and files among the input items count', () => {
    const input = [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'x' },
          { type: 'input_image', image_url: 'https://x.test/a.png' },
          { type: 'input_file', file_id: 'file_1' },
        ],
      },
    ];
    expect(inputTokenCeiling(shape({ input }))).toBe(
      1000 + TEXT_CEILING.FRAMING_TOKENS + TEXT_CEILING.IMAGE_TOKENS + TEXT_CEILING.PDF_URL_PAGES * TEXT_CEILING.PDF_PAGE_TOKENS,
    );
  });
});

test('the hold of a continued response adds the conversation the provider replays', () => {
  const shape = { endpoint: 'responses' as const, body: { input: 'x' }, bodyBytes: 1000 };
  expect(inputTokenCeiling({ ...shape, contextTokens: 12_345 }) - inputTokenCeiling(shape)).toBe(12_345);
});
