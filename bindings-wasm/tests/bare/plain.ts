// Compiled (never run) in a project without @types/pg and @types/node, whose `lib` has no
// esnext.disposable: what a user who never writes `await using` and types no `pg` needs.

import {
  Locker, MemoryStore, Lock, StaleLockError, TimedOutError, type Consistency, type LockerOptions,
  type LockedObject, type Versioned, VersionMismatchError,
} from 'baton-locks';
import { postgresStore, type PgPoolLike, type PgQuery, type PgResult } from 'baton-locks/postgres';

export async function plain(): Promise<bigint> {
  const consistencies: Consistency[] = ['one', 'quorum', 'local_quorum', 'each_quorum', 'all', 'localQuorum', 'eachQuorum'];
  const options: LockerOptions = { strategy: 'column-prefix', failOnStaleLock: true, consistency: 'local_quorum' };
  const memory = new Locker(new MemoryStore(), options);
  const lock: Lock = await memory.lock('job', { timeout: 1_000, failOnStaleLock: false, cellTtl: 60_000 });
  await lock.release();

  // Anything shaped as the part of a pg.Pool the adapter uses.
  const answer = async (_query: PgQuery | string): Promise<PgResult> => ({ rows: [], rowCount: 0 });
  const pool: PgPoolLike = {
    totalCount: 0,
    query: answer,
    connect: async () => ({ query: answer, release: () => {} }),
  };
  const onPostgres = new Locker(postgresStore(pool, { table: 'baton_locks' }));
  try {
    await onPostgres.lock('job', { timeout: 0 });
  } catch (e) {
    if (e instanceof TimedOutError || e instanceof StaleLockError) void e.holder;
  }
  // Objects: Uint8Array from lib ES2022 alone (no Buffer here).
  const read: Versioned | null = await memory.get('GOOG');
  try {
    await memory.updateOptimistic('GOOG', new Uint8Array([1]), read?.version ?? 0n);
  } catch (e) {
    if (e instanceof VersionMismatchError) void e.code;
  }
  const quote: LockedObject = await memory.getAndLock('GOOG');
  const value: Uint8Array | null = quote.value;
  await quote.updateLockedAndRelease('1053.26');
  void [consistencies, value];
  return lock.token;
}
