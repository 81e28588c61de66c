import type { Pool, Client } from 'pg';
import type { SqlAdapter } from './index.js';

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

/** A `pg.Pool` (recommended) or `pg.Client` as a baton store. */
export function postgresStore(client: Pool | Client, options?: PostgresStoreOptions): SqlAdapter;
