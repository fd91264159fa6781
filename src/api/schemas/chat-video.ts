/**
 * POST /v1/chat/completions with a motion model (spec 4.10). The chat format's other
 * parameters (temperature, max_tokens, ...) are accepted and have no effect on a video; `n`
 * above 1 is a 400.
 */
import { z } from 'zod';
import { mentionedUsernames } from '../character-mentions';
import { InvalidRequestError } from '../errors';
import { MAX_PROMPT_CHARS } from './video-task-create';

const textPart = z.object({ type: z.literal('text'), text: z.string() });
const messageContent = z.union([z.string(), z.array(z.union([textPart, z.looseObject({ type: z.string() })]))]);

export const chatVideoBody = z.looseObject({
  model: z.string().min(1),
  messages: z
    .array(z.looseObject({ role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']), content: messageContent.nullable().optional() }))
    .min(1, 'messages must not be empty'),
  stream: z.boolean().optional(),
  // Several choices would be several paid videos: refused rather than silently one.
  n: z.number().int().min(1).max(1, 'only n = 1 is supported: one request makes one video').nullish(),
  /** The gateway's own: where the task's completion webhook goes (README "Completion webhooks"). */
  callback_url: z.string().min(1).max(2048).optional(),
});

export type ChatVideoBody = z.output<typeof chatVideoBody>;

/** The video prompt: the text of the last user message. */
export function promptOf(body: ChatVideoBody): string {
  for (let i = body.messages.length - 1; i >= 0; i--) {
    const message = body.messages[i];
    if (message.role !== 'user') continue;
    const content = message.content;
    const text =
      typeof content === 'string' ? content : (content ?? []).map((part) => ('text' in part && typeof part.text === 'string' ? part.text : '')).join('');
    const prompt = text.trim();
    if (!prompt) break;
    if (prompt.length > MAX_PROMPT_CHARS) throw new InvalidRequestError(`The prompt is longer than ${MAX_PROMPT_CHARS} characters.`, `messages[${i}].content`);
    mentionedUsernames(prompt, `messages[${i}].content`);
    return prompt;
  }
  throw new InvalidRequestError('The last user message must contain the video prompt as text.', 'messages', 'missing_prompt');
}
