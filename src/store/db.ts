/**
 * The database seam. Both stores speak PostgreSQL's SQL: the embedded default is PGlite
 * (PostgreSQL compiled to WebAssembly, nothing to install) and DATABASE_URL selects a real
 * PostgreSQL server, so one schema and one set of migrations serve both.
 */
export interface Sql {
  /**
   * `prepareAs` names a statement run on every request (a charge, a settle): PostgreSQL then
   * parses it once per connection instead of each time. The embedded store ignores it.
   */
  query<R extends object>(text: string, params?: readonly unknown[], prepareAs?: string): Promise<R[]>;
}

export interface Db extends Sql {
  readonly kind: 'embedded' | 'postgres';
  /** Runs fn in one transaction; it commits when fn resolves and rolls back when it throws. */
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
  /** Calls onNotify for each NOTIFY on the channel, from any process sharing the database. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<void>;
  close(): Promise<void>;
}
