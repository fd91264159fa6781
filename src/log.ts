import pino, { type Logger } from 'pino';

/**
 * pino JSON logs. Secrets never reach a log line: request logging records method, route
 * path, status and ids only (no headers, no bodies, no query strings), and the redaction
 * below is a second net for any object that carries them.
 */
export function createLogger(level: string, name = 'gateway'): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: ['authorization', 'apiKey', 'api_key', 'key', 'prompt', 'headers', 'req.headers', '*.authorization', '*.apiKey', '*.prompt'],
      censor: '[redacted]',
    },
  });
}

export type { Logger };
