import { videosCreateFields } from '../../schemas/video-object-create';
import { videosRemixBody } from '../../schemas/video-object-remix';
import { videoContentQuery, videoListQuery } from '../../schemas/video-list-query';
import { ref } from '../components';
import { queryParameters, requestSchema } from '../json-schema';
import { KEY_BEARER } from '../security';
import { binary, errors, HEADERS, IDEMPOTENCY_KEY, JSON_BODY_400, keyedJson, pathId } from '../responses';
import type { JsonSchema, RouteDoc } from '../types';
import { RANGE } from './files';
import { CREATE_ERRORS, READ_ERRORS } from './video-tasks';

const IMAGE_TYPES = 'image/png, image/jpeg, image/webp, image/gif';

/** The form of POST /v1/videos: its fields' schema, plus the one file part, input_reference. */
function videosCreateForm(): JsonSchema {
  const fields = requestSchema(videosCreateFields);
  const properties = fields.properties as Record<string, JsonSchema>;
  return {
    ...fields,
    properties: {
      ...properties,
      input_reference: {
        ...binary('application/octet-stream'),
        description:
          'An image file (PNG, JPEG, WEBP or GIF, judged by its bytes), at most FETCH_MAX_BYTES: required for vidgen_3_1 models, optional for motion.',
      },
    },
  };
}

const videoId = pathId('The task id, from any create endpoint.');

const FORM_RULES =
  "Every field is a string: booleans are 'true'/'false', `metadata` and `character_create` JSON objects as strings (at most 16,384 characters, 64 levels). Beyond the schema, per model family (docs/api.md): `seconds` and `size` must be the model's; motion-only fields on vidgen_3_1 are 400 `unsupported_parameter`; vidgen_3_1 needs `input_reference`; at most one of `character_url` and `character_from_task`, which `character_timestamps` and `character_create` need.";

/** The /v1/videos family (routes/video-objects.ts, spec 4.3-4.7). */
export function videoObjectRoutes(): RouteDoc[] {
  return [
    {
      method: 'post',
      path: '/v1/videos',
      operation: {
        operationId: 'createVideo',
        summary: "Create a video (multipart/form-data; what the OpenAI SDK's videos.create sends)",
        description: FORM_RULES,
        tags: ['Videos'],
        security: KEY_BEARER,
        parameters: [IDEMPOTENCY_KEY],
        requestBody: {
          required: true,
          content: { 'multipart/form-data': { schema: videosCreateForm(), encoding: { input_reference: { contentType: IMAGE_TYPES } } } },
        },
        responses: {
          '200': keyedJson('The video, as it starts.', 'VideoCreated', { 'idempotent-replayed': HEADERS.idempotentReplayed }),
          ...errors({
            ...CREATE_ERRORS,
            400: 'Content-Type is not multipart/form-data (`unsupported_content_type`), the body is compressed (`unsupported_content_encoding`), the form is malformed (`invalid_multipart`), a field is given twice, invalid, missing or unknown, the file is not an image (`invalid_image`), or a model rule refuses it.',
            404: '`character_from_task` names no task of this key.',
            409: `${CREATE_ERRORS[409]} Also a \`character_from_task\` that has not completed (\`invalid_task_state\`).`,
            413: 'The files are over FETCH_MAX_BYTES together, or the form has over 40 fields, 1 MiB of text fields or 4 files (`request_too_large`; the message names the limit).',
            502: 'The provider failed to make the character to save (`upstream_failed`).',
            504: 'The character to save is still being made (`timeout`); read it later.',
          }),
        },
      },
    },
    {
      method: 'get',
      path: '/v1/videos',
      operation: {
        operationId: 'listVideos',
        summary: "The key's video tasks of every family, a cursor page (what videos.list() reads)",
        tags: ['Videos'],
        security: KEY_BEARER,
        parameters: queryParameters(videoListQuery, { after: 'The id of the last video of the previous page (`last_id`).' }),
        responses: {
          '200': keyedJson('One page; it may hold fewer than `limit` items while `has_more` is true.', 'VideoList'),
          ...errors({ ...READ_ERRORS, 400: "A bad query parameter, or an `after` that is not one of the key's videos (`invalid_cursor`)." }),
        },
      },
    },
    {
      method: 'get',
      path: '/v1/videos/{id}',
      operation: {
        operationId: 'getVideo',
        summary: "Read a video, in its model family's shape (spec 2.2)",
        tags: ['Videos'],
        security: KEY_BEARER,
        parameters: [videoId],
        responses: { '200': keyedJson('The video.', 'Video'), ...errors({ ...READ_ERRORS, 404: 'No task of this key with that id.' }) },
      },
    },
    {
      method: 'delete',
      path: '/v1/videos/{id}',
      operation: {
        operationId: 'deleteVideo',
        summary: "Delete a video (what the OpenAI SDK's videos.delete() sends)",
        description:
          'A running task is cancelled: its charge refunded once, its provider job cancelled where the provider allows, its workflow ended as cancelled. A finished task loses its stored files (its charge stands). Afterwards every read of the id, in every family, is 404.',
        tags: ['Videos'],
        security: KEY_BEARER,
        parameters: [videoId],
        responses: {
          '200': keyedJson('The deleted object.', 'VideoDeleted'),
          ...errors({ ...READ_ERRORS, 404: 'No task of this key with that id, or it was already deleted.' }),
        },
      },
    },
    {
      method: 'get',
      path: '/v1/videos/{id}/timeline',
      operation: {
        operationId: 'getVideoTimeline',
        summary: 'What happened to a task: created, charged, failover, submitted, processing, stored, completed / failed / cancelled, refunded',
        description:
          "Derived from the task's workflow history (readable with the worker down) and its ledger entries, oldest first. `detail` says the credits of a charge or refund, why a task failed, or which channel a failover left for which (`<from> -> <to>: <last error>`).",
        tags: ['Videos'],
        security: KEY_BEARER,
        parameters: [videoId],
        responses: { '200': keyedJson("The task's events.", 'VideoTimeline'), ...errors({ ...READ_ERRORS, 404: 'No task of this key with that id.' }) },
      },
    },
    {
      method: 'get',
      path: '/v1/videos/{id}/content',
      operation: {
        operationId: 'getVideoContent',
        summary: "A completed video's link (JSON) or its bytes",
        description:
          "The bytes (video/mp4) when `Accept` prefers a binary type (`application/binary`, which the OpenAI SDK's downloadContent() sends, `application/octet-stream` or `video/mp4`), or when `variant` is given without `application/json` in `Accept`; otherwise the JSON of spec 4.6. Only `variant=video` is stored.",
        tags: ['Videos'],
        security: KEY_BEARER,
        parameters: [videoId, ...queryParameters(videoContentQuery), RANGE],
        responses: {
          '200': {
            description: 'The link (JSON), or the whole file.',
            headers: { 'x-request-id': HEADERS.requestId, ...HEADERS.rateLimit },
            content: { 'application/json': { schema: ref('VideoContent') }, 'video/mp4': { schema: binary('video/mp4') } },
          },
          '206': {
            description: 'One range of the file (with Content-Range).',
            headers: { 'x-request-id': HEADERS.requestId, 'content-range': { description: '`bytes a-b/size`.', schema: { type: 'string' } } },
            content: { 'video/mp4': { schema: binary('video/mp4') } },
          },
          ...errors({
            ...READ_ERRORS,
            400: 'A `variant` other than video, thumbnail or spritesheet.',
            404: 'No task of this key with that id, or a variant the gateway does not store (`variant_not_available`).',
            409: 'The video is not completed (`video_not_ready`: status and progress in the message) or failed (`video_failed`: the reason).',
            416: 'The range starts past the end of the file (`invalid_range`).',
          }),
        },
      },
    },
    {
      method: 'post',
      path: '/v1/videos/{id}/remix',
      operation: {
        operationId: 'remixVideo',
        summary: 'Remix a completed motion video: a new task on the provider that made it',
        tags: ['Videos'],
        security: KEY_BEARER,
        parameters: [videoId, IDEMPOTENCY_KEY],
        requestBody: { required: true, description: 'At most 64 KiB.', content: { 'application/json': { schema: requestSchema(videosRemixBody) } } },
        responses: {
          '200': keyedJson('The remix, as it starts.', 'VideoRemix', { 'idempotent-replayed': HEADERS.idempotentReplayed }),
          ...errors({
            ...CREATE_ERRORS,
            400: `${JSON_BODY_400}; an invalid or unknown parameter; a vidgen source (\`unsupported_model\`).`,
            404: 'No task of this key with that id.',
            409: `${CREATE_ERRORS[409]} Also a source that is not completed (\`invalid_video_state\`).`,
            413: 'The body is over 64 KiB.',
          }),
        },
      },
    },
  ];
}
