import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Search attributes let operators filter runs in the Web UI (for example
 * `GatewayOwner = "key_..." AND GatewayStatus = "failed"`). Workflow-safe module.
 */
export const SA_MODEL = defineSearchAttributeKey('GatewayModel', SearchAttributeType.KEYWORD);
export const SA_OWNER = defineSearchAttributeKey('GatewayOwner', SearchAttributeType.KEYWORD);
export const SA_STATUS = defineSearchAttributeKey('GatewayStatus', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [SA_MODEL, SA_OWNER, SA_STATUS] as const;
