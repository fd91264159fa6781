import { isStreamEnded, recordEvents, sseOf } from '../../src/responses/record-events';

const base = { id: 'resp_1', object: 'response', created_at: 1, model: 'o3-pro', background: true, usage: null, error: null };
const output = [
  { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thinking' }] },
  { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] },
  { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'lookup', arguments: '{"q":1}', status: 'completed' },
];
const usage = { input_tokens: 1, output_tokens: 2, total_tokens: 3 };

const types = (r: Record<string, unknown>) => recordEvents(r).map((e) => e.type);

describe('a stored response as its event stream', () => {
  test('queued: created and queued; running: in_progress too; nothing produced in them', () => {
    expect(types({ ...base, status: 'queued', output: [] })).toEqual(['response.created', 'response.queued']);
    const running = recordEvents({ ...base, status: 'in_progress', output: [] });
    expect(running.map((e) => e.type)).toEqual(['response.created', 'response.queued', 'response.in_progress']);
    expect(running[2]!.data).toMatchObject({ type: 'response.in_progress', sequence_number: 2, response: { status: 'in_progress', output: [], usage: null } });
  });

  test('completed: every item with its parts and deltas, then response.completed with the whole response; numbered from 0', () => {
    const events = recordEvents({ ...base, status: 'completed', output, usage });
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.queued',
      'response.in_progress',
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_e, i) => i));
    expect(events[11]!.data).toMatchObject({ output_index: 1, item_id: 'msg_1', content_index: 0, delta: 'Hello' });
    expect(events[16]!.data).toMatchObject({ output_index: 2, item_id: 'fc_1', delta: '{"q":1}' });
    expect(events.at(-1)!.data).toMatchObject({ response: { status: 'completed', usage, output } });
  });

  test('the stream of a running response is a prefix of its finished one: a reader resuming by sequence number misses nothing', () => {
    const running = recordEvents({ ...base, status: 'in_progress', output: [] });
    const done = recordEvents({ ...base, status: 'completed', output, usage });
    expect(done.slice(0, running.length)).toEqual(
      running.map((e) => expect.objectContaining({ type: e.type, data: expect.objectContaining({ sequence_number: e.data.sequence_number }) })),
    );
  });

  test.each([
    ['failed', 'response.failed'],
    ['cancelled', 'response.failed'],
    ['incomplete', 'response.incomplete'],
  ])('%s ends with %s carrying the response as it ended', (status, final) => {
    const response = { ...base, status, output: [] };
    expect(types(response).at(-1)).toBe(final);
    expect(recordEvents(response).at(-1)!.data.response).toEqual(response);
    expect(isStreamEnded(response)).toBe(true);
  });

  test('SSE: the event name and its JSON', () => {
    expect(sseOf({ type: 'response.queued', data: { a: 1 } })).toBe('event: response.queued\ndata: {"a":1}\n\n');
    expect(isStreamEnded({ status: 'in_progress' })).toBe(false);
  });
});
