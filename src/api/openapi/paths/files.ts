import { OPEN } from '../security';
import { binary, errors, HEADERS } from '../responses';
import type { MediaType, Parameter, RouteDoc } from '../types';

/** The stored files' types (routes/files.ts, by extension). */
const FILE_TYPES = ['video/mp4', 'image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/octet-stream'];

export const RANGE: Parameter = {
  name: 'Range',
  in: 'header',
  required: false,
  description:
    'One range, `bytes=a-b`, `bytes=a-` or `bytes=-n`: answered 206 with Content-Range, or 416 when the file cannot satisfy it. Several ranges, another unit or a Range that does not parse is ignored: 200 with the whole file.',
  schema: { type: 'string' },
};

export function fileContent(): Record<string, MediaType> {
  return Object.fromEntries(FILE_TYPES.map((type) => [type, { schema: binary(type) }]));
}

const byteHeaders = {
  'x-request-id': HEADERS.requestId,
  'accept-ranges': { description: '`bytes`.', schema: { type: 'string', const: 'bytes' } },
  'content-length': { description: 'The bytes in this answer.', schema: { type: 'integer' } },
};

/** A file's bytes, whole (200) or one range (206). */
export function fileResponses(what: string) {
  return {
    '200': { description: `${what}, whole.`, headers: byteHeaders, content: fileContent() },
    '206': {
      description: `One range of ${what}.`,
      headers: { ...byteHeaders, 'content-range': { description: '`bytes a-b/size`.', schema: { type: 'string' } } },
      content: fileContent(),
    },
  };
}

export function fileRoutes(): RouteDoc[] {
  return [
    {
      method: 'get',
      path: '/files/{path}',
      operation: {
        operationId: 'getFile',
        summary: 'A stored file, by the signed link a task answered with',
        description:
          'The links of `video_url` and `profile_picture_url`: HMAC-signed and valid for VIDEO_URL_TTL_SECONDS; every read of a task gives a fresh one. No key: the signature is the credential.',
        tags: ['Files'],
        security: OPEN,
        parameters: [
          {
            name: 'path',
            in: 'path',
            required: true,
            description: 'The storage key, e.g. `videos/<model>/<id>.mp4`; it spans several path segments.',
            schema: { type: 'string' },
          },
          { name: 'expires', in: 'query', required: true, description: 'Unix time the link expires (part of the signed link).', schema: { type: 'string' } },
          { name: 'signature', in: 'query', required: true, description: 'The signature (part of the signed link).', schema: { type: 'string' } },
          RANGE,
        ],
        responses: {
          ...fileResponses('The file'),
          ...errors({
            403: 'The link has expired (`link_expired`) or its signature does not match (`invalid_signature`).',
            404: 'The file no longer exists.',
            416: 'The range starts past the end of the file (`invalid_range`); Content-Range gives the size.',
          }),
        },
      },
    },
  ];
}
