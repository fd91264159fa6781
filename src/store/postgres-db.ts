import pg from 'pg';
import type { Db, Sql } from './db';

export async function openPostgresDb(url: string, maxConnections = 10): Promise<Db> {
  // Idle connections are kept for minutes, not pg's default 10 s: a burst of creates after a
  // quiet spell should not first pay for opening a connection (and a server backend) each.
  const pool = new pg.Pool({
    connectionString: url,
    max: maxConnections,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 300_000,
    // Named statements (see Sql.query) still get a plan for their actual parameters: the generic
    // plan PostgreSQL otherwise switches to after five runs of the charge statement grew slower
    // with every run on one connection (0.4 -> 1.5 ms of server CPU over 6,000 charges). A SET
    // before the connection is first used, not a startup option (which PgBouncer refuses); a
    // server that does not know the setting (before PostgreSQL 12) just keeps its default.
    onConnect: async (client) => {
      await client.query('set plan_cache_mode = force_custom_plan').catch(() => undefined);
    },
  });
  // An idle client dropped by the server must not take the process down.
  pool.on('error', () => undefined);
  // A few connections opened up front (and checked), so the first burst does not open them all.
  await Promise.all(Array.from({ length: Math.min(4, maxConnections) }, () => pool.query('select 1')));
  const listeners: pg.Client[] = [];
  const asSql = (q: pg.Pool | pg.PoolClient): Sql => ({
    async query<R extends object>(text: string, params: readonly unknown[] = [], prepareAs?: string) {
      const result = prepareAs ? await q.query<R>({ name: prepareAs, text, values: [...params] }) : await q.query<R>(text, [...params]);
      return result.rows;
    },
  });
  return {
    kind: 'postgres',
    ...asSql(pool),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('begin');
        const result = await fn(asSql(client));
        await client.query('commit');
        return result;
      } catch (err) {
        await client.query('rollback').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    async listen(channel, onNotify) {
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => undefined);
      await client.connect();
      client.on('notification', (n) => {
        if (n.channel === channel) onNotify(n.payload ?? '');
      });
      await client.query(`listen ${pg.escapeIdentifier(channel)}`);
      listeners.push(client);
    },
    async close() {
      await Promise.all(listeners.map((c) => c.end().catch(() => undefined)));
      await pool.end();
    },
  };
}
