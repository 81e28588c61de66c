import type { Client } from 'cassandra-driver';
import type { CqlAdapter } from './index.js';

/** Options of a Cassandra store. */
export interface CassandraStoreOptions {
  /** The keyspace (default `baton`). */
  keyspace?: string;
  /** The lock table (default `baton_locks`, as the Rust stores and the `baton` command). */
  table?: string;
  /** The replication map of a keyspace baton creates (CQL map text; default SimpleStrategy, 1). */
  replication?: string;
  /** Create the keyspace and table if missing (default true). */
  create?: boolean;
}

/** A `cassandra-driver` Client as a baton store. */
export function cassandraStore(client: Client, options?: CassandraStoreOptions): CqlAdapter;
