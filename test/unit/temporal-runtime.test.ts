/**
 * How the Temporal SDK's own log lines are levelled in the gateway's log (src/temporal/runtime.ts):
 * as the SDK levels them, but for a worker's failed goodbye to a server that is stopping too, and
 * for what it warns of once the process stops without Temporal.
 */
import { sdkLevel, stopQuietly } from '../../src/temporal/runtime';

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

// Last in this file: stopQuietly() is for the rest of the process.
test('once the process stops without Temporal, its warnings about that absence are logged at info; errors stay errors', () => {
  const retried = 'gRPC call record_activity_task_heartbeat retried 5 times';
  expect(sdkLevel('WARN', retried)).toBe('warn');
  stopQuietly();
  expect(sdkLevel('WARN', retried)).toBe('info');
  expect(sdkLevel('ERROR', 'Workflow task failed')).toBe('error');
});
