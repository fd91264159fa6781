import { z } from 'zod';
import type { ModelEntry } from '../../routes/models';
import { describes } from '../describes';
import { unixSeconds } from './common';

/** GET /v1/models/{id}: OpenAI's model fields with Anthropic's alongside, so both SDKs read it. */
export const model = describes<ModelEntry>()(
  z.object({
    id: z.string(),
    object: z.literal('model'),
    created: unixSeconds,
    owned_by: z.string(),
    type: z.literal('model'),
    display_name: z.string(),
    created_at: z.string().meta({ description: 'RFC 3339 time.' }),
    endpoints: z.array(z.string()).meta({ description: 'The paths that serve the model.' }),
  }),
);

export const modelList = z.object({
  object: z.literal('list'),
  data: z.array(model),
  has_more: z.boolean(),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
});
