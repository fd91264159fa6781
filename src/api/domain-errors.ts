/**
 * The one place where the domain's errors (tasks/task-errors.ts) become HTTP: a status, a
 * type and a code, which each protocol's middleware then renders in its own shape.
 */
import {
  TaskChargeRefunded,
  TaskInputRejected,
  TaskNotAffordable,
  TaskServiceUnavailable,
  TaskStoreUnavailable,
  StillRunning,
  TooManyTasks,
  UpstreamFailed,
} from '../tasks/task-errors';
import { HoldNotRecorded } from '../billing/text-leases';
import { GatewayError, InsufficientQuotaError, InvalidRequestError, RateLimitedError, ServiceUnavailableError } from './errors';

export function fromDomainError(err: unknown): GatewayError | null {
  if (err instanceof TaskServiceUnavailable) return new ServiceUnavailableError(err.message, 'temporal_unavailable');
  if (err instanceof TaskStoreUnavailable) return new ServiceUnavailableError(err.message, 'store_unavailable');
  if (err instanceof TaskInputRejected) return new InvalidRequestError(err.message, err.param, err.code);
  if (err instanceof TaskChargeRefunded) return new GatewayError(409, 'invalid_request_error', err.message, null, 'charge_refunded');
  if (err instanceof UpstreamFailed) return new GatewayError(502, 'upstream_error', err.message, null, 'upstream_failed');
  if (err instanceof StillRunning) return new GatewayError(504, 'server_error', err.message, null, 'timeout');
  if (err instanceof TaskNotAffordable) return new InsufficientQuotaError(err.message);
  if (err instanceof HoldNotRecorded) return new ServiceUnavailableError(err.message, 'billing_unavailable');
  if (err instanceof TooManyTasks) return new RateLimitedError(err.message, err.retryAfterSeconds, 'too_many_tasks');
  return null;
}
