import type { Db } from './db';

/**
 * Ordered, append-only. Each runs once, inside a transaction holding an advisory lock,
 * so replicas starting together against one PostgreSQL do not race.
 */
const MIGRATIONS: readonly { id: number; name: string; sql: string }[] = [
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
];

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
      await tx.query(m.sql);
      await tx.query('insert into schema_migrations (id, name) values ($1, $2)', [m.id, m.name]);
      applied.push(m.id);
    }
    return applied;
  });
}
