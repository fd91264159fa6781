import { z } from 'zod';
import { readJson, upstreamFetch } from '../providers/http';

/**
 * enhance_prompt: rewrites a video prompt (translating it to English when needed) through
 * an OpenAI-compatible chat model when PROMPT_ENHANCER_* is configured. With none configured
 * it is a documented pass-through: enhanced_prompt equals the prompt.
 */
export interface PromptEnhancer {
  readonly kind: 'model' | 'pass-through';
  enhance(prompt: string): Promise<string>;
}

export const passThroughEnhancer: PromptEnhancer = { kind: 'pass-through', enhance: async (prompt) => prompt };

const INSTRUCTION =
  'You rewrite prompts for a text-to-video model. Translate the prompt to English if it is in another language, ' +
  'keep every subject, action and constraint, add concrete visual detail (camera, lighting, motion), and answer ' +
  'with the rewritten prompt only.';

const chatResponse = z.object({
  choices: z.array(z.object({ message: z.object({ content: z.string().nullable() }) })).min(1),
});

export function chatModelEnhancer(baseUrl: string, apiKey: string, model: string, timeoutMs: number): PromptEnhancer {
  return {
    kind: 'model',
    async enhance(prompt) {
      const res = await upstreamFetch(
        'prompt enhancer',
        `${baseUrl.replace(/\/+$/, '')}/v1/chat/completions`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model,
            messages: [
              { role: 'system', content: INSTRUCTION },
              { role: 'user', content: prompt },
            ],
          }),
        },
        timeoutMs,
        'prompt-enhancer',
      );
      const text = (await readJson('prompt enhancer', res, chatResponse)).choices[0]?.message.content?.trim();
      return text || prompt;
    },
  };
}
