export * from './errors.js';

declare global {
  // `Symbol.asyncDispose`, as @types/node and lib "esnext.disposable" declare it (the same
  // declaration merges with theirs): so that these declarations compile with any `lib`,
  // for instance "ES2022" alone. `await using` itself needs TypeScript 5.2+.
  interface SymbolConstructor {
    readonly asyncDispose: unique symbol;
  }
}

/** The package's version. */
export const version: string;

/** How a lock is taken: see the README's table of strategies. */
export type Strategy = 'unique-insert' | 'bakery' | 'column-prefix';

/**
 * Cassandra's plain consistency of the locks' reads and writes. The snake_case names are the
 * ones used across baton (store URLs, Python, C); the camelCase `'localQuorum'` and
 * `'eachQuorum'` (the adapter contract's spelling) are accepted as aliases.
 */
export type Consistency = 'one' | 'quorum' | 'local_quorum' | 'each_quorum' | 'all' | 'localQuorum' | 'eachQuorum';

/** A locker's defaults. Durations are milliseconds. */
export interface LockerOptions {
  /** Default `"unique-insert"`. */
  strategy?: Strategy;
  /** The lease's time to live (renewed while held); default 60000. */
  ttl?: number;
  /** How long `lock()` waits; default 30000; `Infinity` waits for ever. */
  timeout?: number;
  /** Cassandra only; default `"quorum"`. */
  consistency?: Consistency;
  /** Renew the lease while the lock is held; default true. */
  keepAlive?: boolean;
  /** The machine name in owner ids (default: the adapter's, else `"js"`). */
  host?: string;
  /** How long one call to the store may take before it counts as timed out; default 10000. */
  commandTimeout?: number;
  /**
   * Column prefix only: reject with StaleLockError on finding another owner's stale lock
   * entry instead of deleting it; default false.
   */
  failOnStaleLock?: boolean;
}

/** One acquisition's options. */
export interface LockOptions {
  /** How long to wait (ms); `Infinity` waits for ever. */
  timeout?: number;
  /** The lease's time to live (ms). */
  ttl?: number;
  /** Aborting it stops the wait (CancelledError) and removes what the wait wrote. */
  signal?: AbortSignal;
  /** Column prefix only: reject with StaleLockError on another owner's stale entry (default: the locker's). */
  failOnStaleLock?: boolean;
  /**
   * Column prefix only: how long the store keeps the lock's entry (ms), at least its `ttl`
   * (the default). Past the lease's TTL and before this, the entry is stale: another
   * acquisition deletes it, or rejects with StaleLockError under `failOnStaleLock`.
   */
  cellTtl?: number;
}

/** An entry of the lock table, as operators see it. */
export interface LockInfo {
  name: string;
  strategy: Strategy;
  column: string;
  owner: string;
  state: 'held' | 'waiting' | 'entering' | 'stale' | 'contending';
  token: bigint | null;
  ticket: bigint | null;
  createdUnixMs: number | null;
  acquisition: bigint;
  value: string;
  /** Milliseconds until the entry expires, or null when it does not. */
  expiresIn: number | null;
}

/** A lock table in this module's memory: lockers on one MemoryStore exclude each other. */
export class MemoryStore {
  constructor();
}

/** What a SQL adapter is given and gives back: see the README, "Bring your own client". */
export interface SqlAdapter {
  readonly kind: 'sql';
  readonly dialect: 'postgres' | 'mysql' | 'sqlite';
  readonly table?: string;
  readonly create?: boolean;
  /** The layout of a table this store creates: `'one-row'` (PostgreSQL only, and its default) or `'two-rows'` (the default elsewhere). */
  readonly layout?: 'one-row' | 'two-rows';
  readonly host?: string;
  readonly description?: string;
  /** Runs one statement; `about` names it and says what it does (see {@link StatementAccess}). */
  query(sql: string, params: (string | number | bigint | null)[], about: { statement: string; access: StatementAccess }): Promise<{
    rows?: unknown[][];
    rowCount?: number | null;
    insertId?: number | bigint;
  }>;
  transaction(statements: { sql: string; params: (string | number | bigint | null)[]; statement: string; access: StatementAccess }[]): Promise<void>;
}

/**
 * What a statement given to an adapter does: `'read'` reads the lock table, `'write'` may
 * change its rows (a claim that does not apply included), `'schema'` reads or changes the
 * catalog, keyspace, table or its routines before any lock statement. With the statement's
 * name (`'claim'`, `'guarded-delete'`, `'insert-if-absent'`, `'columns'`, …), this is how a
 * wrapper around an adapter (a tracer, a metrics hook, a test that delays writes) recognises
 * a statement: never by its text, which differs between databases, table layouts and versions.
 */
export type StatementAccess = 'read' | 'write' | 'schema';

/** What a CQL adapter is given and gives back: see the README, "Bring your own client". */
export interface CqlAdapter {
  readonly kind: 'cql';
  readonly keyspace?: string;
  readonly table?: string;
  readonly replication?: string;
  readonly create?: boolean;
  readonly host?: string;
  readonly description?: string;
  execute(cql: string, values: (string | number | bigint)[], options: {
    consistency: string;
    serialConsistency?: string;
    idempotent: boolean;
    fetchSize?: number;
    pageState?: string;
    /** The statement's name (`'insert-if-absent'`, `'read-exact'`, `'columns'`, …). */
    statement: string;
    access: StatementAccess;
  }): Promise<{ columns?: string[]; rows?: unknown[][]; pageState?: string | null }>;
  /** A logged batch; conditional when `serialConsistency` is given, and then it resolves to its rows as `execute` does. */
  batch(statements: { query: string; params: (string | number | bigint)[]; statement: string; access: StatementAccess }[], options: {
    consistency: string;
    serialConsistency?: string;
    idempotent?: boolean;
    access: 'write';
  }): Promise<{ columns?: string[]; rows?: unknown[][]; pageState?: string | null } | void>;
}

/** A store, and the defaults of the locks taken on it. */
export class Locker {
  constructor(store: MemoryStore | SqlAdapter | CqlAdapter, options?: LockerOptions);
  /** Where the locks are kept. */
  readonly store: string;
  /** Acquires `name`, waiting up to the timeout. */
  lock(name: string, options?: LockOptions): Promise<Lock>;
  /** One attempt: the lock, or null if someone else holds it. */
  tryLock(name: string, options?: Omit<LockOptions, 'timeout'>): Promise<Lock | null>;
  /** Runs `critical` holding `name`, and releases the lock whatever it does. */
  withLock<T>(name: string, critical: (signal: AbortSignal, lock: Lock) => T | Promise<T>, options?: LockOptions): Promise<T>;
  /** Every live lock entry in the store. */
  locks(): Promise<LockInfo[]>;
  /** Removes expired entries (of `name`, or of every lock). */
  purge(name?: string): Promise<{ name: string; cell: string }[]>;
  /** Breaks `name`'s lock whoever holds it (an operator's call). */
  forceRelease(name: string): Promise<LockInfo[]>;
}

/** A held lock; its lease is renewed in the background until it is released. */
export class Lock {
  private constructor();
  readonly name: string;
  /** The fencing token: larger for every later holder of the name. */
  readonly token: bigint;
  /** The owner id written in the store (what `baton locks` shows). */
  readonly owner: string;
  /** Whether the lease is held now. */
  readonly held: boolean;
  /** Milliseconds left on the lease unless renewed (0 when not held). */
  readonly remaining: number;
  /** Aborts, with a LostError as its reason, when the lease is lost. */
  readonly signal: AbortSignal;
  /** Throws LostError if the lease is lost, NotOwnerError after a release. */
  check(): void;
  /** Releases the lock; rejects with LostError if it was lost, NotOwnerError when called again. */
  release(): Promise<void>;
  /** `await using`: releases unless released already. */
  [Symbol.asyncDispose](): Promise<void>;
}
