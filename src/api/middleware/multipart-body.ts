import fs from 'node:fs';
import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import type { GatewayState } from '../context';
import { InvalidRequestError, PayloadTooLargeError } from '../errors';

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
 * multipart/form-data with size limits; a field or file given twice is a 400 rather than a
 * silent pick. Temporary upload files are removed when the request ends, whatever happened.
 */
export function multipartBody(maxFileBytes: number): Middleware<GatewayState>[] {
  const requireMultipart: Middleware<GatewayState> = async (ctx, next) => {
    if (!ctx.is('multipart/form-data')) {
      throw new InvalidRequestError(`Content-Type must be multipart/form-data (got ${ctx.get('content-type') || 'none'}).`, null, 'unsupported_content_type');
    }
    await next();
  };
  const parse = koaBody({
    multipart: true,
    json: false,
    urlencoded: false,
    text: false,
    formidable: { maxFileSize: maxFileBytes, maxFiles: 4, maxFields: 40, maxFieldsSize: 1024 * 1024, allowEmptyFiles: false },
    onError: (err: Error & { httpCode?: number }) => {
      if (err.httpCode === 413) throw new PayloadTooLargeError(maxFileBytes);
      throw new InvalidRequestError(`Malformed multipart/form-data body: ${err.message}`, null, 'invalid_multipart');
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
