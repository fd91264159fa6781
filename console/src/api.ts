/**
 * Every request the console makes goes through here: same-origin fetch with the session cookie
 * (the browser sends it; the page never sees it), the CSRF token on every non-GET request, and
 * errors turned into ApiError with the gateway's message. The CSRF token lives in this module's
 * memory only: a reload fetches it again from GET /console/api/session.
 */

export type Role = 'key' | 'admin';

export interface Session {
  object: 'console.session';
  role: Role;
  key: { id: string; name: string; key_hint: string } | null;
  csrf_token: string;
  expires_at: number;
  temporal_ui_url: string | null;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null,
  ) {
    super(message);
  }
}

let csrfToken: string | null = null;

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as multipart/form-data (the browser sets the boundary). */
  form?: FormData;
  signal?: AbortSignal;
}

/** The fetch call itself, with the CSRF header on anything that changes state. */
export function send(path: string, options: RequestOptions = {}): Promise<Response> {
  const method = options.method ?? (options.json !== undefined || options.form ? 'POST' : 'GET');
  const headers: Record<string, string> = {};
  let body: BodyInit | undefined;
  if (options.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.form) {
    body = options.form;
  }
  if (method !== 'GET' && csrfToken !== null) headers['X-CSRF-Token'] = csrfToken;
  return fetch(path, { method, headers, body, credentials: 'same-origin', signal: options.signal });
}

/** Both error shapes the gateway speaks: OpenAI's `{error:{message,code}}` and Anthropic's `{type:'error',error:{type,message}}`. */
export async function errorOf(res: Response): Promise<ApiError> {
  let message = `${res.status} ${res.statusText}`;
  let code: string | null = null;
  try {
    const body: unknown = await res.json();
    if (isRecord(body) && isRecord(body.error)) {
      if (typeof body.error.message === 'string') message = body.error.message;
      if (typeof body.error.code === 'string') code = body.error.code;
      else if (typeof body.error.type === 'string') code = body.error.type;
    }
  } catch {
    // not JSON: the status line says enough
  }
  return new ApiError(res.status, message, code);
}

export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const res = await send(path, options);
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as T;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A query string from the defined, non-empty values. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
