import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Logger } from 'pino';
import { SEARCH_ATTRIBUTES } from './search-attributes';

/**
 * Against an external cluster (TEMPORAL_ADDRESS) the gateway registers its own search
 * attributes at start-up, so a deployment needs no manual `temporal operator` step.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string, logger: Logger): Promise<void> {
  const existing = await connection.withDeadline(Date.now() + 5000, () => connection.operatorService.listSearchAttributes({ namespace }));
  const known = new Set([...Object.keys(existing.customAttributes ?? {}), ...Object.keys(existing.systemAttributes ?? {})]);
  const missing = SEARCH_ATTRIBUTES.filter((sa) => !known.has(sa.name));
  if (missing.length === 0) return;
  const searchAttributes: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const sa of missing) searchAttributes[sa.name] = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  await connection.withDeadline(Date.now() + 10_000, () => connection.operatorService.addSearchAttributes({ namespace, searchAttributes }));
  logger.info({ added: missing.map((sa) => sa.name) }, 'registered search attributes');
}
