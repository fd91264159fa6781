import { z } from 'zod';
import type { OpenAiErrorBody } from '../../errors';
import type { AnthropicErrorBody } from '../../middleware/anthropic-errors';
import { describes } from '../describes';

/** Every error outside /v1/messages (errors.ts): `param` names the offending parameter, `code` is machine-readable. */
export const openAiError = describes<OpenAiErrorBody>()(
  z.object({
    error: z.object({
      message: z.string(),
      type: z.string().meta({ description: 'invalid_request_error, insufficient_quota, rate_limit_error, upstream_error, server_error, ...' }),
      param: z.string().nullable(),
      code: z.string().nullable(),
    }),
  }),
);

/** Every error the gateway itself raises on /v1/messages and /v1/messages/count_tokens, in Anthropic's shape. */
export const anthropicError = describes<AnthropicErrorBody>()(
  z.object({
    type: z.literal('error'),
    error: z.object({
      type: z.string().meta({
        description:
          'invalid_request_error, authentication_error, billing_error, not_found_error, request_too_large, rate_limit_error, api_error, overloaded_error',
      }),
      message: z.string(),
    }),
    request_id: z.string(),
  }),
);
