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
  /**
   * Names are dot-separated paths: a lock on `app.cache` also conflicts with `app` and with
   * `app.cache.users` (when either side is exclusive), not with `app.db` or `apple`. Bakery or
   * column prefix only (InvalidOptionError on unique insert); every user of a tree must turn
   * it on. `a..b`, `a.`, `.a` and names with `|` are InvalidNameError; objects are refused
   * (InvalidOptionError). Default false.
   */
  paths?: boolean;
}

/**
 * What `lockAll` resolves to: the locks in the order taken; `await using` releases them all,
 * last taken first.
 */
export type Locks = Lock[] & { [Symbol.asyncDispose](): Promise<void> };

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
  /**
   * `'shared'`: one of any number of readers, never beside a writer (bakery or column prefix
   * only: InvalidOptionError on unique insert); default `'exclusive'`. Semaphores:
   * `locker.semaphore(name, permits)`.
   */
  mode?: 'exclusive' | 'shared';
}

/** What a lock is held as: a semaphore's permit is `counted(N)`, N its permits. */
export type LockMode = 'exclusive' | 'shared' | `counted(${number})`;

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
  /** The layout of a table this store creates: `'one-row'` (the default) or `'two-rows'` (for a table that versions of baton before its database's one-row layout share). */
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
  /**
   * Acquires every name of `names`, all or nothing, in baton's one global order (`foo`,
   * `foo.bar`, `foo.bar.woof`, `foo.baz`): no two callers deadlock. `timeout` is the budget
   * of the whole call; on any error every lock already taken is released before it rejects.
   * InvalidOptionError for no names, a name twice, or (paths) a path with one of its ancestors.
   */
  lockAll(names: readonly string[], options?: LockOptions): Promise<Locks>;
  /** Runs `critical` holding `name`, and releases the lock whatever it does. */
  withLock<T>(name: string, critical: (signal: AbortSignal, lock: Lock) => T | Promise<T>, options?: LockOptions): Promise<T>;
  /**
   * A semaphore of `permits` (an integer from 1 to 10000) on `name`: at most `permits` holders
   * at once, across every process on the store (bakery or column prefix only). Throws
   * InvalidOptionError for bad permits or a unique-insert locker, InvalidNameError for a bad
   * name. Every user of the name must give the same permits.
   */
  semaphore(name: string, permits: number | bigint): Semaphore;
  /** Every live lock entry in the store. */
  locks(): Promise<LockInfo[]>;
  /** Removes expired entries (of `name`, or of every lock). */
  purge(name?: string): Promise<{ name: string; cell: string }[]>;
  /** Breaks `name`'s lock whoever holds it (an operator's call). */
  forceRelease(name: string): Promise<LockInfo[]>;

  /** Reads object `name` (its lock is not looked at): value and version, or null when there is none. */
  get(name: string): Promise<Versioned | null>;
  /** Inserts object `name`; its version. AlreadyExistsError when it exists, BusyError while its lock is held. */
  insert(name: string, value: ObjectValue): Promise<bigint>;
  /**
   * Replaces object `name`'s value if it is still at `version`; the new version.
   * VersionMismatchError when someone wrote it since, ObjectNotFoundError when it is gone,
   * BusyError while its lock is held (nothing is written then).
   */
  updateOptimistic(name: string, value: ObjectValue, version: bigint | number): Promise<bigint>;
  /** Removes object `name`. ObjectNotFoundError when there is none, BusyError while its lock is held. */
  remove(name: string): Promise<void>;
  /** Locks `name` (waiting as `lock` does) and reads its object. */
  getAndLock(name: string, options?: Omit<LockOptions, 'mode'>): Promise<LockedObject>;
  /** Locks `name` and inserts its object, keeping the lock. AlreadyExistsError when it exists (the lock is then released). */
  insertAndLock(name: string, value: ObjectValue, options?: Omit<LockOptions, 'mode'>): Promise<LockedObject>;
}

/**
 * An object's value as given: bytes (a `Uint8Array`, which a Node `Buffer` is), or a string,
 * stored as its UTF-8. Values are always read back as `Uint8Array`.
 */
export type ObjectValue = Uint8Array | string;

/** An object's value and version, as `locker.get` read them. */
export class Versioned {
  private constructor();
  /** The value's bytes. */
  readonly value: Uint8Array;
  /** Grows by one on every write of the object (removals included). */
  readonly version: bigint;
  /** The value decoded as UTF-8 (bytes that are not UTF-8 become U+FFFD). */
  readonly text: string;
}

/**
 * A locked object (ScaleOut StateServer's LockTicket): the object as last read or written,
 * and the calls only its lock's holder makes. Each write applies only if this holder still
 * holds the lock when the store applies it (LostError otherwise, and nothing is written).
 */
export class LockedObject {
  private constructor();
  /** The object's name (its lock's). */
  readonly name: string;
  /** The lock: `token`, `held`, `signal`, `remaining`, `owner`. */
  readonly lock: Lock;
  /** The value as last read or written, or null when there is no object. */
  readonly value: Uint8Array | null;
  /** The version as last read or written (0n: never written). */
  readonly version: bigint;
  /** The value decoded as UTF-8, or null. */
  readonly text: string | null;
  /** Reads the object again and renews the lock; its value (null: none). */
  getLocked(): Promise<Uint8Array | null>;
  /** Writes `value`, keeping the lock (renewed); the new version. ObjectNotFoundError when there is no object. */
  updateLockedAndRetain(value: ObjectValue): Promise<bigint>;
  /** Writes `value` and releases the lock; the new version. On an error the lock stays held. */
  updateLockedAndRelease(value: ObjectValue): Promise<bigint>;
  /** Inserts the object (AlreadyExistsError when it exists), keeping the lock; its version. */
  insertLocked(value: ObjectValue): Promise<bigint>;
  /** Removes the object and releases the lock. */
  removeLocked(): Promise<void>;
  /** Renews the lock now: LostError if it was lost, NotOwnerError after a release. */
  lockRefresh(): Promise<void>;
  /** Releases the lock without writing: LostError if it was lost, NotOwnerError when released already. */
  unlock(): Promise<void>;
  /** `await using`: releases unless released already. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A semaphore shared by every process on the store. Each permit is a {@link Lock} (mode
 * `counted(N)`), given back as a lock is: `release()` or `await using`. An acquire that finds
 * the name used with another size, or as a lock, rejects with InvalidOptionError.
 */
export class Semaphore {
  private constructor();
  /** The name its permits are taken on. */
  readonly name: string;
  /** How many holders it admits at once. */
  readonly permits: number;
  /** Takes a permit, waiting up to the timeout (TimedOutError). */
  acquire(options?: Omit<LockOptions, 'mode'>): Promise<Lock>;
  /** One attempt: a permit, or null when all are taken. */
  tryAcquire(options?: Omit<LockOptions, 'mode' | 'timeout'>): Promise<Lock | null>;
  /** Runs `critical` holding a permit, and gives it back whatever it does. */
  withPermit<T>(critical: (signal: AbortSignal, permit: Lock) => T | Promise<T>, options?: Omit<LockOptions, 'mode'>): Promise<T>;
}

/** A held lock; its lease is renewed in the background until it is released. */
export class Lock {
  private constructor();
  readonly name: string;
  /** What it is held as: `'exclusive'`, `'shared'` or `'counted(N)'` (a semaphore's permit). */
  readonly mode: LockMode;
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
