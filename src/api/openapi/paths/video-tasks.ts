import { videoCreateBody } from '../../schemas/video-task-create';
import { requestSchema } from '../json-schema';
import { KEY_BEARER } from '../security';
import { errors, HEADERS, IDEMPOTENCY_KEY, JSON_BODY_400, KEY_ERRORS, keyedJson } from '../responses';
import type { ErrorStatus } from '../responses';
import type { RouteDoc } from '../types';

/** What every create of a paid task may answer besides its own validation (task-request.ts, idempotency.ts). */
export const CREATE_ERRORS = {
  ...KEY_ERRORS,
  402: "The key's balance does not cover the task (`insufficient_quota`).",
  409: 'A request with this Idempotency-Key is still running (`idempotency_key_in_use`, Retry-After), or its task is no longer readable (`idempotency_key_expired`).',
  422: 'This Idempotency-Key was used for a different request (`idempotency_key_reused`).',
  429: "Over the key's rate_limit_rpm (`rate_limit_exceeded`), or its max_concurrent_tasks tasks (videos and background responses) are in flight (`too_many_tasks`).",
  503: 'Temporal is unreachable (`temporal_unavailable`); nothing was charged.',
} satisfies Partial<Record<ErrorStatus, string>>;

/** The read of a task: Temporal answers it. */
export const READ_ERRORS = {
  ...KEY_ERRORS,
  503: 'Temporal is unreachable (`temporal_unavailable`).',
} satisfies Partial<Record<ErrorStatus, string>>;

const MODEL_RULES =
  "Beyond the schema, per model (docs/api.md): the model must exist and be served on this endpoint (`model_not_found`, `unsupported_model`), by some channel (`model_not_available`); motion-only parameters on a vidgen model and `aspect_ratio` on a motion model are 400 `unsupported_parameter`; motion models need `images` (may be empty) and an allowed `duration`; at most the model's number of images, each an http(s) or data: URL of a PNG, JPEG, WEBP or GIF; `@username` mentions must name the key's characters (`unknown_character`, at most 10).";

/** The JSON family (routes/video-tasks.ts, spec 4.1, 4.2). */
export function videoTaskRoutes(): RouteDoc[] {
  return [
    {
      method: 'post',
      path: '/v1/video/create',
      operation: {
        operationId: 'createVideoTask',
        summary: 'Create a video task (JSON)',
        description: MODEL_RULES,
        tags: ['Video tasks'],
        security: KEY_BEARER,
        parameters: [IDEMPOTENCY_KEY],
        requestBody: {
          required: true,
          description: 'At most MAX_JSON_BODY_BYTES (20 MiB).',
          content: { 'application/json': { schema: requestSchema(videoCreateBody) } },
        },
        responses: {
          '200': keyedJson('The task, as it starts.', 'VideoTaskCreated', { 'idempotent-replayed': HEADERS.idempotentReplayed }),
          ...errors({
            ...CREATE_ERRORS,
            400: `${JSON_BODY_400}; a parameter is invalid, missing or unknown (\`param\` names it), or a model rule refuses it.`,
            413: 'The body, or a data: image, is over its limit (`request_too_large`).',
          }),
        },
      },
    },
    {
      method: 'get',
      path: '/v1/video/query',
      operation: {
        operationId: 'getVideoTask',
        summary: 'Read a task (spec 2.1 shape), whichever endpoint made it',
        tags: ['Video tasks'],
        security: KEY_BEARER,
        parameters: [{ name: 'id', in: 'query', required: true, description: 'The task id.', schema: { type: 'string', minLength: 1 } }],
        responses: {
          '200': keyedJson('The task.', 'VideoTask'),
          ...errors({
            ...READ_ERRORS,
            400: 'No `id`, or more than one (`missing_required_parameter`).',
            404: "No task of this key with that id (another key's task answers the same).",
          }),
        },
      },
    },
  ];
}
