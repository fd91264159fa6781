/** What the Responses API tests share. */
import type { TextChannel } from '../../src/config/channels';

/** The event types of a streamed answer of one message with `deltas` text deltas, in order. */
export function messageEventTypes(deltas: number): string[] {
  return [
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.content_part.added',
    ...Array<string>(deltas).fill('response.output_text.delta'),
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    'response.completed',
  ];
}

/** An `openai-responses` channel named `sim` on the simulator at `simUrl`, serving o3-pro. */
export function simResponsesChannel(simUrl: string): TextChannel {
  return {
    name: 'sim',
    type: 'openai-responses',
    baseUrl: `${simUrl}/v1`,
    apiKey: 'k',
    models: { 'o3-pro': 'o3-pro' },
    priority: 0,
    weight: 1,
    simulated: true,
  };
}
