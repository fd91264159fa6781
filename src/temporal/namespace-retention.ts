import type { Connection } from '@temporalio/client';
import Long from 'long';
import type { Logger } from 'pino';

/**
 * Task state lives in Temporal, so the namespace's retention is how long a finished task
 * stays readable. The dev server creates its namespace with 24 h; the embedded gateway raises
 * it to TASK_RETENTION_DAYS. On an external cluster retention is the operator's call: the
 * gateway only warns when it is shorter.
 */
export async function ensureRetention(connection: Connection, namespace: string, days: number, mayUpdate: boolean, logger: Logger): Promise<void> {
  const wanted = days * 86_400;
  const described = await connection.withDeadline(Date.now() + 5000, () => connection.workflowService.describeNamespace({ namespace }));
  const current = Number(described.config?.workflowExecutionRetentionTtl?.seconds ?? 0);
  if (current >= wanted) return;
  if (!mayUpdate) {
    logger.warn(
      { namespace, retentionDays: current / 86_400, wantedDays: days },
      'namespace retention is shorter than TASK_RETENTION_DAYS: finished tasks become unreadable sooner',
    );
    return;
  }
  await connection.withDeadline(Date.now() + 5000, () =>
    connection.workflowService.updateNamespace({ namespace, config: { workflowExecutionRetentionTtl: { seconds: Long.fromNumber(wanted) } } }),
  );
  logger.info({ namespace, retentionDays: days }, 'namespace retention set');
}
