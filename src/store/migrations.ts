import type { Db } from './db';

/**
 * Ordered, append-only. Each runs once, inside a transaction holding an advisory lock,
 * so replicas starting together against one PostgreSQL do not race.
 */
/** Each statement apart: both drivers prepare parameterised queries, one statement at a time. */
const MIGRATIONS: readonly { id: number; name: string; sql: string | readonly string[] }[] = [
  {
    id: 1,
    name: 'api keys',
    sql: `
      create table api_keys (
        id text primary key,
        name text not null,
        key_hash text not null unique,
        key_hint text not null,
        created_at timestamptz not null default now(),
        revoked_at timestamptz
      );`,
  },
  {
    id: 2,
    name: 'text usage',
    sql: [
      `
      create table usage_records (
        id text primary key,
        request_id text not null,
        key_id text not null,
        model text not null,
        channel text not null,
        endpoint text not null,
        streamed boolean not null,
        outcome text not null,
        input_tokens bigint not null,
        output_tokens bigint not null,
        cache_creation_tokens bigint not null,
        cache_read_tokens bigint not null,
        created_at timestamptz not null default now()
      )`,
      'create index usage_records_by_key on usage_records (key_id, created_at)',
    ],
  },
  {
    id: 3,
    name: 'billing',
    sql: [
      // balance is kept for every key (an unlimited key's goes negative: what it has spent),
      // so "balance = sum of its ledger" holds for all keys and the audit has no special case.
      'alter table api_keys add column limited boolean not null default false',
      'alter table api_keys add column balance bigint not null default 0',
      'alter table api_keys add column rate_limit_rpm integer',
      'alter table api_keys add column max_concurrent_tasks integer',
      // One row per movement. (kind, ref) is unique: a task is charged once and refunded once
      // however often an activity retries, because the second insert finds the first.
      `create table ledger_entries (
        id bigserial primary key,
        key_id text not null references api_keys (id),
        kind text not null check (kind in ('grant', 'charge', 'refund', 'usage')),
        amount bigint not null,
        ref text not null,
        reason text not null,
        model text,
        created_at timestamptz not null default now(),
        unique (kind, ref)
      )`,
      'create index ledger_entries_by_key on ledger_entries (key_id, id)',
      // A paid task's billing state: what makes "tasks in flight" countable and lets the
      // reconciler find a charge whose task never started.
      `create table billed_tasks (
        task_id text primary key,
        key_id text not null references api_keys (id),
        kind text not null check (kind in ('video', 'character')),
        model text not null,
        amount bigint not null,
        state text not null check (state in ('running', 'completed', 'refunded')),
        created_at timestamptz not null default now(),
        settled_at timestamptz
      )`,
      "create index billed_tasks_running on billed_tasks (key_id) where state = 'running'",
    ],
  },
  {
    id: 4,
    name: 'tasks in flight counter, priced usage records',
    sql: [
      // On the key's row, so the charge checks it under the row lock it already takes (a
      // count of billed_tasks would read a snapshot older than the lock).
      'alter table api_keys add column tasks_in_flight integer not null default 0',
      `update api_keys k set tasks_in_flight =
         (select count(*) from billed_tasks t where t.key_id = k.id and t.kind = 'video' and t.state = 'running')`,
      // A usage record is its own ledger entry (kind usage, ref = its id, amount = -price):
      // one row per answered request instead of two, on the hottest write path.
      'alter table usage_records add column price bigint not null default 0',
    ],
  },
  {
    id: 5,
    name: 'key rows leave room for updates',
    // Every charge and settle updates its key's row, so one busy key collects dead row versions
    // fast. With half of each page free, PostgreSQL prunes them in place on the next visit
    // (heap-only-tuple pruning starts once free space drops below the fill factor) instead of
    // letting the chain grow until autovacuum comes round.
    sql: 'alter table api_keys set (fillfactor = 50)',
  },
  {
    id: 6,
    name: 'when the reconciler next looks at a running charge',
    // Null: due once the start window has passed. A start the API saw succeed, and a task
    // the reconciler found running, push it out, so healthy tasks cost Temporal no reads.
    sql: 'alter table billed_tasks add column next_check_at timestamptz',
  },
  {
    id: 7,
    name: 'text holds',
    sql: [
      // What text requests in flight have reserved: a video charge or another text request may
      // spend only balance - held. Kept apart from balance, so balance stays the sum of its ledger.
      'alter table api_keys add column held bigint not null default 0',
      // Text requests in flight, checked against the key's cap under the row lock the hold takes.
      'alter table api_keys add column text_in_flight integer not null default 0',
      // Null: the gateway's default (TEXT_MAX_IN_FLIGHT_PER_KEY).
      'alter table api_keys add column max_text_in_flight integer',
      // One row per text request in flight: its worst-case price, and which gateway process holds
      // it, so the holds of a process that died are found and settled by another.
      `create table text_holds (
        id text primary key,
        key_id text not null references api_keys (id),
        instance_id text not null,
        request_id text not null,
        model text not null,
        endpoint text not null,
        streamed boolean not null,
        amount bigint not null,
        created_at timestamptz not null default now()
      )`,
      'create index text_holds_by_instance on text_holds (instance_id)',
      // Every API process while it runs: a row whose seen_at stops moving belongs to a dead one.
      `create table gateway_instances (
        id text primary key,
        started_at timestamptz not null default now(),
        seen_at timestamptz not null default now()
      )`,
    ],
  },
  {
    id: 8,
    name: 'charge lifecycle: charged, started (claimed by its workflow), completed, refunded',
    sql: [
      'alter table billed_tasks drop constraint billed_tasks_state_check',
      // A charge of the old 'running' state may or may not have a workflow: it is 'charged', which
      // both a workflow of before the claim step and the reconciler know how to settle.
      "update billed_tasks set state = 'charged' where state = 'running'",
      "alter table billed_tasks add constraint billed_tasks_state_check check (state in ('charged', 'started', 'completed', 'refunded'))",
      'drop index billed_tasks_running',
      "create index billed_tasks_live on billed_tasks (key_id) where state in ('charged', 'started')",
    ],
  },
  {
    id: 9,
    name: 'idempotency keys of creates',
    sql: [
      // One row per (key, Idempotency-Key) for 24 hours: the request's fingerprint and the ids
      // its create made (task, character), so a repeat answers the same task and charges once.
      `create table idempotency_keys (
        key_id text not null references api_keys (id),
        idempotency_key text not null,
        fingerprint text not null,
        ids jsonb not null,
        state text not null check (state in ('pending', 'done')),
        lease_until timestamptz not null,
        created_at timestamptz not null default now(),
        primary key (key_id, idempotency_key)
      )`,
      'create index idempotency_keys_by_age on idempotency_keys (created_at)',
    ],
  },
  {
    id: 10,
    name: "a key's video tasks in creation order (GET /v1/videos)",
    sql: 'create index billed_tasks_by_key_created on billed_tasks (key_id, created_at, task_id)',
  },
  {
    id: 11,
    name: 'deleted video tasks (DELETE /v1/videos/{id})',
    // The gateway's own mark, read by every read path: Temporal deletes a workflow execution
    // asynchronously (it stays describable for a while), and retention keeps a closed one for days.
    sql: `
      create table deleted_tasks (
        task_id text primary key,
        key_id text not null references api_keys (id),
        deleted_at timestamptz not null default now()
      )`,
  },
  {
    id: 12,
    name: 'console sessions (issue 21)',
    sql: [
      // Only the session id's sha256 is stored: a copy of the table signs nobody in. key_id is
      // null for an operator's session; a key's session dies with the key (checked on read).
      `create table console_sessions (
        id_hash text primary key,
        role text not null check (role in ('key', 'admin')),
        key_id text references api_keys (id),
        csrf_token text not null,
        created_at timestamptz not null default now(),
        last_seen_at timestamptz not null default now()
      )`,
      // The sweep deletes by idle age.
      'create index console_sessions_by_last_seen on console_sessions (last_seen_at)',
    ],
  },
  {
    id: 13,
    name: 'video channel errors (GET /admin/channels)',
    // Written by the worker, which calls the video providers, and read by any API process: the
    // operator's view of a video channel's health outlives and crosses processes. Kept 24 hours.
    sql: [
      `create table channel_errors (
        id bigserial primary key,
        channel text not null,
        retryable boolean not null,
        message text not null,
        at timestamptz not null default now()
      )`,
      'create index channel_errors_by_channel on channel_errors (channel, id)',
    ],
  },
  {
    id: 14,
    name: 'responses of the Responses API (POST /v1/responses)',
    // The gateway issues its own response ids: a client never sees the upstream's, so a response
    // stays its owner's (read by key) and pinned to the channel that holds it upstream.
    sql: [
      `create table responses (
        id text primary key,
        key_id text not null references api_keys (id),
        model text not null,
        channel text not null,
        upstream_id text,
        background boolean not null,
        status text not null check (status in ('queued', 'in_progress', 'completed', 'failed', 'cancelled', 'incomplete')),
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        deleted boolean not null default false,
        response jsonb
      )`,
      'create index responses_by_key_created on responses (key_id, created_at)',
    ],
  },
  {
    id: 15,
    name: 'completion webhooks: endpoints and secrets per key, events, delivery attempts',
    sql: [
      // The signing secret must be usable for HMAC, so it is stored as is (like the URL signing
      // secret in the data directory); the previous one stays valid until previous_expires_at.
      `create table webhook_endpoints (
        key_id text primary key references api_keys (id),
        url text,
        secret text not null,
        previous_secret text,
        previous_expires_at timestamptz,
        updated_at timestamptz not null default now()
      )`,
      // One row per terminal task or response: the id is deterministic (subject, id, outcome), so
      // an announce that runs twice finds the first row. The body is fixed when the event is made.
      `create table webhook_events (
        id text primary key,
        key_id text not null references api_keys (id),
        type text not null,
        subject_id text not null,
        url text not null,
        payload jsonb not null,
        state text not null check (state in ('pending', 'delivered', 'failed')),
        created_at timestamptz not null default now(),
        finished_at timestamptz
      )`,
      'create index webhook_events_by_key on webhook_events (key_id, created_at, id)',
      `create table webhook_attempts (
        id bigserial primary key,
        event_id text not null references webhook_events (id),
        attempt integer not null,
        at timestamptz not null default now(),
        http_status integer,
        error text,
        duration_ms integer not null
      )`,
      'create index webhook_attempts_by_event on webhook_attempts (event_id, id)',
    ],
  },
  {
    id: 16,
    name: 'background responses are paid tasks: their hold is a charge (billed_tasks kind response)',
    sql: [
      'alter table billed_tasks drop constraint billed_tasks_kind_check',
      "alter table billed_tasks add constraint billed_tasks_kind_check check (kind in ('video', 'character', 'response'))",
    ],
  },
  {
    id: 17,
    name: "background responses hold a slot of the key's max_concurrent_tasks, like video tasks",
    sql: [
      // The counter is recounted from the live charges: the responses running now take their slots.
      `update api_keys k set tasks_in_flight =
         (select count(*) from billed_tasks t where t.key_id = k.id and t.kind in ('video', 'response') and t.state in ('charged', 'started'))`,
    ],
  },
  {
    id: 18,
    name: "text leases: credits and in-flight slots of a key that one API process sets aside for its text requests' holds",
    sql: [
      // Counted in api_keys.held and text_in_flight like the holds of text_holds; the process's
      // settlement journal says which requests it holds from it (billing/text-leases.ts).
      `create table text_leases (
        instance_id text not null,
        key_id text not null references api_keys (id),
        amount bigint not null check (amount >= 0),
        slots integer not null check (slots >= 0),
        primary key (instance_id, key_id)
      )`,
    ],
  },
  {
    id: 19,
    name: "task views: each video task's state as its workflow last published it, so a status read need not ask Temporal (tasks/task-views.ts)",
    sql: [
      `create table task_views (
        task_id text primary key,
        state jsonb not null,
        seq bigint not null,
        job_status text check (job_status in ('pending', 'processing')),
        job_progress integer not null default 0,
        fresh_until timestamptz not null
      )`,
      // The prune of views past their lease (BillingReconciler's pass) reads by it.
      'create index task_views_by_lease on task_views (fresh_until)',
    ],
  },
  {
    id: 20,
    name: 'character views: each finished character as its workflow returned it, so a read, a mention or a list need not ask Temporal (tasks/character-views.ts)',
    sql: [
      `create table character_views (
        character_id text primary key,
        state jsonb not null,
        created_at timestamptz not null
      )`,
      // The prune of views past the retention (BillingReconciler's pass) reads by it.
      'create index character_views_by_age on character_views (created_at)',
    ],
  },
];

export const MIGRATION_IDS: readonly number[] = MIGRATIONS.map((m) => m.id);

const LOCK_ID = 727_001;

export async function migrate(db: Db): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [LOCK_ID]);
    await tx.query('create table if not exists schema_migrations (id integer primary key, name text not null, applied_at timestamptz not null default now())');
    const done = new Set((await tx.query<{ id: number }>('select id from schema_migrations')).map((r) => r.id));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.id)) continue;
      for (const statement of typeof m.sql === 'string' ? [m.sql] : m.sql) await tx.query(statement);
      await tx.query('insert into schema_migrations (id, name) values ($1, $2)', [m.id, m.name]);
      applied.push(m.id);
    }
    return applied;
  });
}
