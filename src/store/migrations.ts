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
    sql: [`
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
];

export const MIGRATION_IDS: readonly number[] = MIGRATIONS.map((m) => m.id);

const LOCK_ID = 727_001;

export async function migrate(db: Db): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [LOCK_ID]);
    await tx.query(
      'create table if not exists schema_migrations (id integer primary key, name text not null, applied_at timestamptz not null default now())',
    );
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
