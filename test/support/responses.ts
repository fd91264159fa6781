/** What the Responses API tests share. */

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
