import pino, { type Logger } from 'pino';

/**
 * Log lines wait this long at most before they are written: the lines of that time go out in
 * one write (a trip through the thread pool each), not one per request. Lines still waiting
 * when the process exits are written then; a kill -9 loses at most this much of the log.
 */
const LOG_FLUSH_MS = 50;
/** ... or until this many bytes wait, whichever comes first. */
const LOG_BUFFER_BYTES = 8 * 1024;

/** Keys whose values never reach a log line, at the top of a logged object. */
const SECRET_KEYS: ReadonlySet<string> = new Set(['authorization', 'apiKey', 'api_key', 'key', 'prompt', 'headers']);
/** ... and one level down (`{ req: { headers } }`, `{ body: { prompt } }`). */
const NESTED_SECRET_KEYS = ['authorization', 'apiKey', 'prompt', 'headers'] as const;
const CENSOR = '[redacted]';

/**
 * pino JSON logs on stdout. Secrets never reach a log line: request logging records method,
 * route path, status and ids only (no headers, no bodies, no query strings), and `redacted` is a
 * second net for any object logged that carries them. A child's bindings are ids only (request,
 * trace, component): they are not looked at.
 */
export function createLogger(level: string, name = 'gateway', destination: pino.DestinationStream = bufferedStdout()): Logger {
  return pino({ name, level, formatters: { log: redacted } }, destination);
}

/**
 * The logged object with the values of secret keys replaced, at its top and one level down in
 * plain objects; the caller's objects are copied, never changed. pino's own `redact` does the
 * same with paths, but its wildcards ('*.prompt') doubled the cost of every line, the access
 * line of each request included.
 */
export function redacted(obj: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | null = null;
  for (const key in obj) {
    if (SECRET_KEYS.has(key)) {
      (out ??= { ...obj })[key] = CENSOR;
      continue;
    }
    const value = obj[key];
    if (value === null || typeof value !== 'object' || !isPlain(value)) continue;
    let inner: Record<string, unknown> | null = null;
    for (const nested of NESTED_SECRET_KEYS) if (nested in value) (inner ??= { ...(value as Record<string, unknown>) })[nested] = CENSOR;
    if (inner) (out ??= { ...obj })[key] = inner;
  }
  return out ?? obj;
}

/** A literal object (not an Error, a Buffer or an array, which their serializers render). */
function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * stdout, written asynchronously (a slow reader never blocks the event loop) and in batches: an
 * access line per request was a write through the thread pool per request, 4-5 % of the API's CPU
 * at 150-600 requests/s on the development VM. pino writes what still waits when the process exits.
 */
function bufferedStdout(): pino.DestinationStream {
  return pino.destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_MS });
}

export type { Logger };
