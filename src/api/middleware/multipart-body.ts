import fs from 'node:fs';
import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import type { GatewayState } from '../context';
import { InvalidRequestError, PayloadTooLargeError } from '../errors';
import { requireIdentityEncoding } from './body-encoding';

export interface UploadedFile {
  path: string;
  size: number;
  declaredType: string | null;
}

export interface MultipartForm {
  fields: Record<string, string>;
  files: Record<string, UploadedFile>;
}

/**
 * What one form may hold besides its files' bytes: far above any form of the API (ten-odd
 * fields, one file), low enough that a form cannot cost the gateway more than a JSON body.
 */
export const FORM_LIMITS = { maxFiles: 4, maxFields: 40, maxFieldsBytes: 1024 * 1024 } as const;

/** formidable's codes for the limits a form can pass (formidable/src/FormidableError.js). */
const FORMIDABLE = {
  maxFieldsSizeExceeded: 1006,
  maxFieldsExceeded: 1007,
  biggerThanTotalMaxFileSize: 1009,
  noEmptyFiles: 1010,
  maxFilesExceeded: 1015,
  biggerThanMaxFileSize: 1016,
  cannotCreateDir: 1018,
} as const;

/**
 * The client's error for a form formidable refused, naming the limit it passed; a failure of
 * the gateway's own (no upload folder) is rethrown, to be answered as the gateway's error.
 */
export function formError(err: Error & { code?: unknown; httpCode?: number }, maxFileBytes: number): Error {
  switch (err.code) {
    case FORMIDABLE.maxFieldsExceeded:
      return new PayloadTooLargeError(`The form has more than ${FORM_LIMITS.maxFields} fields.`);
    case FORMIDABLE.maxFieldsSizeExceeded:
      return new PayloadTooLargeError(`The form's text fields exceed ${FORM_LIMITS.maxFieldsBytes} bytes in all.`);
    case FORMIDABLE.maxFilesExceeded:
      return new PayloadTooLargeError(`The form has more than ${FORM_LIMITS.maxFiles} files.`);
    // formidable bounds the files' sum by the one file's limit, and checks the sum first.
    case FORMIDABLE.biggerThanMaxFileSize:
    case FORMIDABLE.biggerThanTotalMaxFileSize:
      return new PayloadTooLargeError(`The form's files exceed the limit of ${maxFileBytes} bytes (all its files together).`);
    case FORMIDABLE.noEmptyFiles:
      return new InvalidRequestError('An uploaded file is empty.', null, 'invalid_multipart');
    case FORMIDABLE.cannotCreateDir:
      return err;
  }
  if (err.httpCode === 413) return new PayloadTooLargeError(maxFileBytes);
  return new InvalidRequestError(`Malformed multipart/form-data body: ${err.message}`, null, 'invalid_multipart');
}

/**
 * multipart/form-data with size limits; a field or file given twice is a 400 rather than a
 * silent pick. Temporary upload files are removed when the request ends, whatever happened.
 */
export function multipartBody(maxFileBytes: number): Middleware<GatewayState>[] {
  const requireMultipart: Middleware<GatewayState> = async (ctx, next) => {
    if (!ctx.is('multipart/form-data')) {
      throw new InvalidRequestError(`Content-Type must be multipart/form-data (got ${ctx.get('content-type') || 'none'}).`, null, 'unsupported_content_type');
    }
    requireIdentityEncoding(ctx);
    await next();
  };
  const parse = koaBody({
    multipart: true,
    json: false,
    urlencoded: false,
    text: false,
    formidable: {
      maxFileSize: maxFileBytes,
      maxFiles: FORM_LIMITS.maxFiles,
      maxFields: FORM_LIMITS.maxFields,
      maxFieldsSize: FORM_LIMITS.maxFieldsBytes,
      allowEmptyFiles: false,
    },
    onError: (err: Error & { code?: unknown; httpCode?: number }) => {
      throw formError(err, maxFileBytes);
    },
  }) as unknown as Middleware<GatewayState>;
  const cleanup: Middleware<GatewayState> = async (ctx, next) => {
    try {
      await next();
    } finally {
      for (const file of Object.values(ctx.request.files ?? {}).flat()) fs.rm(file.filepath, { force: true }, () => undefined);
    }
  };
  return [requireMultipart, cleanup, parse];
}

/** The parsed form, with one value per name. */
export function readForm(body: unknown, files: Record<string, unknown> | undefined): MultipartForm {
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries((body ?? {}) as Record<string, unknown>)) {
    if (Array.isArray(value)) throw new InvalidRequestError(`'${name}' was given more than once.`, name);
    fields[name] = String(value);
  }
  const out: Record<string, UploadedFile> = {};
  for (const [name, value] of Object.entries(files ?? {})) {
    if (Array.isArray(value)) throw new InvalidRequestError(`'${name}' was given more than once.`, name);
    const file = value as { filepath: string; size: number; mimetype?: string | null };
    out[name] = { path: file.filepath, size: file.size, declaredType: file.mimetype ?? null };
  }
  return { fields, files: out };
}
