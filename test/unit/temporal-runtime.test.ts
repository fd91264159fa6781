/**
 * How the Temporal SDK's own log lines are levelled in the gateway's log (src/temporal/runtime.ts):
 * as the SDK levels them, but for a worker's failed goodbye to a server that is stopping too.
 */
import { sdkLevel } from '../../src/temporal/runtime';

test("a worker's ShutdownWorker call failing as the server stops too is logged at info, not as a warning", () => {
  const message = 'shutdown_worker rpc errored during worker shutdown: Status { code: Cancelled, message: "operation was canceled" }';
  expect(sdkLevel('WARN', message)).toBe('info');
});

test('every other SDK line keeps its own level', () => {
  expect(sdkLevel('WARN', 'Workflow task failed')).toBe('warn');
  expect(sdkLevel('ERROR', 'shutdown_worker rpc errored during worker shutdown: Internal')).toBe('error');
  expect(sdkLevel('INFO', 'Worker state changed')).toBe('info');
  expect(sdkLevel('DEBUG', 'poll')).toBe('debug');
  expect(sdkLevel('TRACE', 'poll')).toBe('trace');
});
