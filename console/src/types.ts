import type { WebhookDeliveryAnswer, WebhookEndpointAnswer } from '../../src/api/views/webhooks';
/** The gateway's answers the console reads (docs/api.md), as far as the pages use them. */

export interface List<T> {
  object: 'list';
  data: T[];
  first_id?: string | null;
  last_id?: string | null;
  has_more?: boolean;
}

export interface Billing {
  key_id: string;
  unlimited: boolean;
  balance: number | null;
  granted: number;
  spent: number;
  rate_limit_rpm: number | null;
  max_concurrent_tasks: number | null;
  tasks_in_flight: number;
  max_text_in_flight: number | null;
  text_in_flight: number;
  held: number;
}

export interface SpendBucket {
  start: number;
  model: string;
  spent: number;
  count: number;
}

export interface Spend {
  object: 'billing.spend';
  granularity: 'day' | 'hour';
  since: number;
  until: number;
  data: SpendBucket[];
}

export type LedgerKind = 'grant' | 'charge' | 'refund' | 'usage';

export interface LedgerEntry {
  id: string;
  kind: LedgerKind;
  amount: number;
  ref: string;
  reason: string;
  model: string | null;
  created_at: number;
}

export interface UsageTotals {
  model: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_creation_tokens: number;
  cache_read_tokens: number;
}

export interface UsageRecord {
  id: string;
  request_id: string;
  model: string;
  channel: string;
  endpoint: string;
  streamed: boolean;
  outcome: string;
  input_tokens: number;
  output_tokens: number;
  created_at: number;
}

export interface Usage {
  object: 'usage';
  totals: UsageTotals[];
  recent: UsageRecord[];
}

export type TaskStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'queued';

export interface VideoItem {
  id: string;
  /** Absent from the vidgen shape of GET /v1/videos/{id}. */
  model?: string;
  status: TaskStatus;
  progress: number;
  created_at: number;
  completed_at: number | null;
  seconds?: number | string | null;
  size?: string | null;
  video_url: string | null;
  error: { code: string; message: string } | null;
  cost?: number;
  key_id?: string;
  temporal_ui_url?: string | null;
  /** Operators' list only: the channel that took the job, the provider's id of it, and the channels its submit left. */
  channel?: string | null;
  upstream_job_id?: string | null;
  failovers?: { from: string; to: string; reason: string; at: number }[];
}

export interface TimelineEvent {
  at: number;
  event: string;
  detail: string | null;
}

export interface Timeline {
  object: 'video.timeline';
  id: string;
  data: TimelineEvent[];
}

export interface Character {
  id: string;
  username: string;
  permalink?: string;
  profile_picture_url: string | null;
}

export interface ModelEntry {
  id: string;
  owned_by: string;
  endpoints?: string[];
}

export interface AdminKey {
  id: string;
  name: string;
  key_hint: string;
  created_at: number;
  unlimited: boolean;
  rate_limit_rpm: number | null;
  max_concurrent_tasks: number | null;
  max_text_in_flight: number | null;
  revoked_at?: number | null;
  balance?: number | null;
  spent?: number;
}

export interface CreatedKey {
  id: string;
  name: string;
  key: string;
  balance: number | null;
}

export interface ChannelError {
  at: number;
  message: string;
}

export interface Channel {
  name: string;
  type: string;
  kind: 'text' | 'video';
  models: string[];
  priority: number;
  weight: number;
  simulated: boolean;
  /** Text: resting after failures in a row. Video: failing = a retryable failure within 5 minutes. */
  state: 'healthy' | 'resting' | 'failing';
  resting_until: number | null;
  /** The figures of text channels only (this process proxies them); null for video channels. */
  consecutive_failures: number | null;
  served: number | null;
  /** Text: since the process started. Video: within the last 24 hours (recorded by the worker). */
  failed: number;
  failovers: number | null;
  cooldowns: number | null;
  last_error: string | null;
  recent_errors: ChannelError[];
}

export interface AuditReport {
  object: 'ledger_audit';
  keys: number;
  entries: number;
  tasks: number;
  mismatches: { key_id: string; problem: string; ref?: string; expected?: number; actual?: number }[];
}

/** The server's own answer types (src/api/views/webhooks.ts): PUT and rotate add `secret` (shown once). */
export type WebhookEndpoint = WebhookEndpointAnswer & { secret?: string | null };
export type WebhookDelivery = WebhookDeliveryAnswer;
