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
   * its own. `'two-rows'` is for a new table that versions of baton before the one-row layout
   * must share (README, "The lock table").
   */
  layout?: 'one-row' | 'two-rows';
}

/** A `pg.Pool` (recommended) or `pg.Client` as a baton store. */
export function postgresStore(client: Pool | Client, options?: PostgresStoreOptions): SqlAdapter;
