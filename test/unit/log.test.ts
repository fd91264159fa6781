/**
 * The gateway's logger (src/log.ts): secrets never reach a line, at the top of a logged object
 * or one level down; the caller's objects are left as they were.
 */
import { createLogger, redacted } from '../../src/log';

function capture(): { lines: () => Record<string, unknown>[]; logger: ReturnType<typeof createLogger> } {
  const written: string[] = [];
  const logger = createLogger('info', 'test', { write: (s: string) => written.push(s) });
  return { logger, lines: () => written.map((s) => JSON.parse(s) as Record<string, unknown>) };
}

test('secret keys are censored at the top and one level down; everything else is written as it is', () => {
  const { logger, lines } = capture();
  const req = { method: 'POST', headers: { authorization: 'Bearer sk-live' } };
  const body = { model: 'gpt-4o-mini', prompt: 'a private prompt' };
  logger.info({ authorization: 'Bearer sk-top', apiKey: 'sk-a', api_key: 'sk-b', key: 'sk-c', prompt: 'p', headers: { x: 1 }, req, body, n: 3 }, 'hello');
  const [line] = lines();
  expect(line).toMatchObject({
    authorization: '[redacted]',
    apiKey: '[redacted]',
    api_key: '[redacted]',
    key: '[redacted]',
    prompt: '[redacted]',
    headers: '[redacted]',
    req: { method: 'POST', headers: '[redacted]' },
    body: { model: 'gpt-4o-mini', prompt: '[redacted]' },
    n: 3,
    msg: 'hello',
  });
  expect(JSON.stringify(line)).not.toMatch(/sk-|private prompt/);
  // The caller's objects are not changed.
  expect(req.headers.authorization).toBe('Bearer sk-live');
  expect(body.prompt).toBe('a private prompt');
});

test("a child's lines are censored too, and errors keep their message and stack", () => {
  const { logger, lines } = capture();
  const child = logger.child({ requestId: 'req_1' });
  child.error({ err: new Error('it broke'), upstream: { authorization: 'Bearer sk-up' } }, 'failed');
  const [line] = lines();
  expect(line).toMatchObject({ requestId: 'req_1', upstream: { authorization: '[redacted]' }, msg: 'failed' });
  expect(line.err).toMatchObject({ message: 'it broke', stack: expect.stringContaining('it broke') });
});

test('an object without secrets is logged as it is, not copied', () => {
  const access = { method: 'POST', path: '/v1/chat/completions', status: 200, ms: 1.2, keyId: 'key_1' };
  expect(redacted(access)).toBe(access);
});
