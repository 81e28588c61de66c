// Compiled with `tsc --strict` against the installed package: its declarations must describe
// the API a TypeScript user writes against. Not run. The `lib` is ES2022 alone: `await using`
// below takes its types from @types/node (as a Node project's do), and pg's from @types/pg,
// whose Pool and Client must fit postgresStore's structural types. (tests/bare: a project with
// neither.)

import pg from 'pg';
import cassandra from 'cassandra-driver';
import {
  Locker, MemoryStore, Lock, BatonError, LostError, TimedOutError, CancelledError, errorClass,
  LockedObject, Versioned, VersionMismatchError, ObjectNotFoundError, AlreadyExistsError, type ObjectValue,
  Semaphore, type LockMode, type LockOptions, type Locks,
  type LockInfo, type SqlAdapter, type CqlAdapter, type LockerOptions, type StatementAccess,
} from 'baton-locks';
import { postgresStore } from 'baton-locks/postgres';
import { cassandraStore } from 'baton-locks/cassandra';

export async function typed(): Promise<bigint> {
  const options: LockerOptions = { strategy: 'bakery', ttl: 10_000, timeout: Infinity, keepAlive: true };
  const memory = new Locker(new MemoryStore(), options);
  const pool = new pg.Pool({ connectionString: 'postgres://localhost/app', connectionTimeoutMillis: 5_000 });
  const sql: SqlAdapter = postgresStore(pool, { table: 'baton_locks' });
  const single: SqlAdapter = postgresStore(new pg.Client({ connectionString: 'postgres://localhost/app' }));
  void single;
  const prefix = new Locker(new MemoryStore(), { strategy: 'column-prefix', failOnStaleLock: true, consistency: 'localQuorum' });
  await (await prefix.lock('stale', { failOnStaleLock: false, cellTtl: 60_000 })).release();
  const onPostgres = new Locker(sql);
  // A wrapper that counts writes by what each statement is, never by its text.
  let writes = 0;
  const counted: SqlAdapter = {
    ...sql,
    query: (text, params, about: { statement: string; access: StatementAccess }) => {
      if (about.access === 'write') writes += 1;
      return sql.query(text, params, about);
    },
    transaction: (statements) => {
      writes += statements.filter((s) => s.access === 'write').length;
      return sql.transaction(statements);
    },
  };
  new Locker(counted);
  const cql: CqlAdapter = cassandraStore(new cassandra.Client({ contactPoints: ['127.0.0.1'], localDataCenter: 'datacenter1' }));
  const tracedCql: CqlAdapter = {
    ...cql,
    execute: (text, values, o) => {
      const name: string = o.statement;
      if (o.access !== 'read') console.log(name);
      return cql.execute(text, values, o);
    },
  };
  new Locker(tracedCql);
  void writes;
  const client = new cassandra.Client({ contactPoints: ['127.0.0.1'], localDataCenter: 'datacenter1' });
  const onCassandra = new Locker(cassandraStore(client, { keyspace: 'baton' }), { consistency: 'quorum' });

  const controller = new AbortController();
  const lock: Lock = await memory.lock('job', { timeout: 1_000, signal: controller.signal });
  const token: bigint = lock.token;
  const remaining: number = lock.remaining;
  const held: boolean = lock.held;
  const signal: AbortSignal = lock.signal;
  lock.check();
  await lock.release();

  const maybe: Lock | null = await onPostgres.tryLock('job');
  await maybe?.release();

  const total: number = await onCassandra.withLock('job', async (s: AbortSignal, l: Lock) => {
    s.throwIfAborted();
    return Number(l.token) + 1;
  });

  {
    await using scoped = await memory.lock('scoped');
    void scoped.token;
  }

  const infos: LockInfo[] = await memory.locks();
  const first: bigint | null | undefined = infos[0]?.token;
  const purged: { name: string; cell: string }[] = await memory.purge();
  await memory.forceRelease('job');

  try {
    await memory.lock('busy', { timeout: 0 });
  } catch (e) {
    if (e instanceof TimedOutError || e instanceof CancelledError || e instanceof LostError) {
      const code: number = e.code;
      const kind: string = e.kind;
      const lockName: string | null = e.lock;
      void [code, kind, lockName];
    } else if (e instanceof BatonError) {
      const Class = errorClass(e.code);
      void Class?.kind;
    }
  }
  void [remaining, held, signal, total, first, purged];
  return token;
}

// Objects (seed 002): values in as bytes or text, out as bytes; versions as bigints.
export async function objects(locker: Locker): Promise<bigint> {
  const inserted: bigint = await locker.insert('GOOG', '1053.00');
  const bytes: ObjectValue = new Uint8Array([0, 255]);
  await locker.insert('raw', Buffer.from('buffer'));
  const read: Versioned | null = await locker.get('GOOG');
  if (read !== null) {
    const value: Uint8Array = read.value;
    const text: string = read.text;
    const next: bigint = await locker.updateOptimistic('GOOG', bytes, read.version);
    await locker.updateOptimistic('GOOG', text, Number(next));
    void value;
  }
  try {
    await locker.updateOptimistic('GOOG', 'x', 1n);
  } catch (e) {
    if (e instanceof VersionMismatchError || e instanceof ObjectNotFoundError || e instanceof AlreadyExistsError) {
      const code: number = e.code;
      void code;
    }
  }
  await locker.remove('raw');
  {
    await using quote = await locker.getAndLock('GOOG', { timeout: 5_000, ttl: 30_000 });
    const held: LockedObject = quote;
    const value: Uint8Array | null = held.value;
    const text: string | null = held.text;
    const version: bigint = held.version;
    const token: bigint = held.lock.token;
    const again: Uint8Array | null = await held.getLocked();
    const retained: bigint = await held.updateLockedAndRetain('1053.10');
    await held.lockRefresh();
    const released: bigint = await held.updateLockedAndRelease(new Uint8Array([1]));
    void [value, text, version, token, again, retained, released];
  }
  const made: LockedObject = await locker.insertAndLock('new', 'v', { timeout: 0 });
  const v: bigint = await made.insertLocked('w');
  await made.removeLocked();
  await made.unlock();
  return inserted + v;
}

// Shared locks and semaphores (issue 43): a mode in the lock options, a permit as a Lock.
export async function modes(locker: Locker): Promise<LockMode> {
  const reader: Lock = await locker.lock('catalog', { mode: 'shared', timeout: 1_000 });
  const options: LockOptions = { mode: 'exclusive' };
  const writer: Lock | null = await locker.tryLock('catalog', options);
  await writer?.release();
  await locker.withLock('catalog', (s: AbortSignal, l: Lock) => l.mode, { mode: 'shared' });
  // @ts-expect-error: a semaphore's permits are taken through locker.semaphore
  await locker.lock('catalog', { mode: 'counted(3)' });
  // @ts-expect-error: an object's lock is exclusive
  await locker.getAndLock('GOOG', { mode: 'shared' });
  const sem: Semaphore = locker.semaphore('encoders', 3);
  const wide: Semaphore = locker.semaphore('encoders-big', 3n);
  const name: string = sem.name;
  const permits: number = wide.permits;
  const permit: Lock = await sem.acquire({ timeout: 5_000, ttl: 30_000 });
  const mode: LockMode = permit.mode;
  await permit.release();
  const maybe: Lock | null = await sem.tryAcquire({ ttl: 30_000 });
  await maybe?.release();
  // @ts-expect-error: the semaphore's mode is its own
  await sem.acquire({ mode: 'shared' });
  const done: number = await sem.withPermit(async (s: AbortSignal, p: Lock) => Number(p.token));
  {
    await using scoped = await sem.acquire();
    void scoped.mode;
  }
  await reader.release();
  void [name, permits, done];
  return mode;
}

// Paths and several locks at once: a locker option, and lockAll's array of Locks.
export async function paths(store: MemoryStore): Promise<bigint> {
  const tree = new Locker(store, { strategy: 'bakery', paths: true });
  const options: LockerOptions = { strategy: 'column-prefix', paths: false };
  void options;
  const names: readonly string[] = ['app.db', 'app.cache'];
  const locks: Locks = await tree.lockAll(names, { timeout: 5_000, mode: 'shared', signal: new AbortController().signal });
  const firstLock: Lock | undefined = locks[0];
  await Promise.all(locks.map((l: Lock) => l.release()));
  {
    await using all = await tree.lockAll(['jobs.a', 'jobs.b']);
    const tokens: bigint[] = all.map((l) => l.token);
    void tokens;
  }
  // @ts-expect-error: names are an array
  await tree.lockAll('app');
  // @ts-expect-error: paths is a boolean
  new Locker(store, { paths: 'yes' });
  return firstLock?.token ?? 0n;
}
