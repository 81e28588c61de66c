import type { SqlAdapter } from './index.js';

// What the adapter calls on `pg`'s objects, described structurally so that these declarations
// need neither `pg`'s types (@types/pg) nor Node's: a `pg.Pool` or `pg.Client` (typed by
// @types/pg or not) fits them as it is.

/** A statement as the adapter gives it to `query`: positional values, rows as arrays or not. */
export interface PgQuery {
  text: string;
  values?: (string | number | null)[];
  rowMode?: 'array';
}

/** What the adapter reads of a result. */
export interface PgResult {
  rows: unknown[];
  rowCount: number | null;
}

/** What the adapter uses of a connection: `pg.Client`, or a `pg.PoolClient` from a pool. */
export interface PgClientLike {
  query(query: PgQuery): Promise<PgResult>;
  query(text: string): Promise<unknown>;
  /**
   * `pg.Client`'s, as an EventEmitter's: the adapter listens to 'error' while the connection is
   * in its use (from a pool, until it gives it back; a single client, only while one of its
   * statements or transactions runs), since pg emits a broken connection's error there when no
   * statement is out, and Node ends a process whose 'error' nobody listens to. A client without
   * them is used as it is.
   */
  on?(event: 'error', listener: (err: Error) => void): unknown;
  removeListener?(event: 'error', listener: (err: Error) => void): unknown;
}

/** A connection checked out of a pool, given back with `release` (an error discards it). */
export interface PgPoolClientLike extends PgClientLike {
  release(err?: Error | boolean): void;
}

/** What the adapter uses of a `pg.Pool`: a connection of its own for each statement or transaction. */
export interface PgPoolLike {
  query(query: PgQuery): Promise<PgResult>;
  /**
   * The adapter passes a callback, `(err, client) => void`, which `pg.Pool` calls at once as it
   * hands the connection over (so that the adapter listens to its errors from then on); a pool
   * that ignores it and returns a promise works too.
   */
  connect(): Promise<PgPoolClientLike>;
  /** How a pool is told from a client. */
  readonly totalCount: number;
}

/** Options of a PostgreSQL store. */
export interface PostgresStoreOptions {
  /** The lock table (default `baton_locks`, as the Rust stores and the `baton` command). */
  table?: string;
  /** Create the table if it is missing (default true). */
  create?: boolean;
  /**
   * The layout of a table this store creates (default `'one-row'`); an existing table keeps
   * its own. `'one-row'` is faster uncontended; versions of baton before it cannot share such
   * a table, so `'two-rows'` makes a table they can (baton's docs/sql-store.md, "The lock table").
   */
  layout?: 'one-row' | 'two-rows';
}

/**
 * A `pg.Pool` (recommended) or `pg.Client` as a baton store. Give the pool a
 * `connectionTimeoutMillis` (at most the Locker's `commandTimeout`): without it, a server that
 * accepts connections and never answers leaves the pool's connection attempts pending for
 * ever, and `pool.end()` with them. A pool without one gets a warning
 * (`process.emitWarning`, code `BATON_PG_NO_CONNECTION_TIMEOUT`), once per process.
 */
export function postgresStore(client: PgPoolLike | PgClientLike, options?: PostgresStoreOptions): SqlAdapter;
