/**
 * Sql.query's `prepareAs`: on PostgreSQL a named statement is parsed once per connection and
 * still planned for its actual parameters (plan_cache_mode); the embedded store runs it like
 * any other statement.
 */
import { embeddedStore, postgresStore, type OpenedStore } from '../support/stores';

describe('PostgreSQL (one connection, so every statement below shares its session)', () => {
  let opened: OpenedStore;
  beforeAll(async () => {
    opened = await postgresStore(1);
  }, 60_000);
  afterAll(async () => opened?.cleanup());

  test('a named statement is prepared once in the session and answers like an unnamed one', async () => {
    const text = 'select $1::int + 1 as n';
    expect(await opened.db.query(text, [1], 'test_add_one')).toEqual([{ n: 2 }]);
    expect(await opened.db.query(text, [41], 'test_add_one')).toEqual([{ n: 42 }]);
    expect(await opened.db.query('select $1::int * 2 as n', [21])).toEqual([{ n: 42 }]);
    const prepared = await opened.db.query<{ name: string }>('select name from pg_prepared_statements order by name');
    expect(prepared.map((p) => p.name)).toEqual(['test_add_one']);
  });

  test('named statements get a plan for their parameters, never the generic one', async () => {
    expect(await opened.db.query('show plan_cache_mode')).toEqual([{ plan_cache_mode: 'force_custom_plan' }]);
  });
});

test('the embedded store ignores the name', async () => {
  const opened = await embeddedStore();
  try {
    expect(await opened.db.query('select $1::int + 1 as n', [1], 'test_add_one')).toEqual([{ n: 2 }]);
    expect(await opened.db.query('select $1::int + 1 as n', [2], 'test_add_one')).toEqual([{ n: 3 }]);
  } finally {
    await opened.cleanup();
  }
});
