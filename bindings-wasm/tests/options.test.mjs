// Options as the README's table and index.d.ts document them: every documented spelling of
// `consistency` is accepted, and `failOnStaleLock` (column prefix only) makes a stale entry of
// another owner (one kept past its lease by `cellTtl`) a StaleLockError instead of something
// to delete. And the holder a wait timed
// out on is named in its TimedOutError, on every strategy and store.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Locker, MemoryStore, BatonError, StaleLockError, TimedOutError, InvalidOptionError, errorClass,
} from 'baton-locks';
import { STRATEGIES, targetsClosedAfter, fresh, until, entries } from './support.mjs';

/** A matcher for assert.throws / rejects: an error of `Class`, with its code and kind. */
const is = (/** @type {typeof BatonError} */ Class, /** @type {string} */ what) => (/** @type {any} */ e) => {
  assert.ok(e instanceof Class, `${what}: expected ${Class.name} (code ${Class.code}), got ${e?.constructor?.name} ${e?.code}: ${e?.message}`);
  assert.ok(e instanceof BatonError);
  assert.equal(e.code, Class.code, what);
  assert.equal(e.kind, Class.kind, what);
  assert.equal(errorClass(e.code), Class);
  return true;
};

describe('consistency: every documented spelling', () => {
  // index.d.ts's Consistency, as the README's options table lists them.
  const documented = ['one', 'quorum', 'local_quorum', 'each_quorum', 'all', 'localQuorum', 'eachQuorum'];
  for (const consistency of documented) {
    test(`'${consistency}' is accepted`, async () => {
      const locker = new Locker(new MemoryStore(), { consistency });
      await (await locker.lock(fresh('consistency'))).release();
    });
  }
  test('an unknown level is InvalidOptionError, naming the spellings', () => {
    assert.throws(() => new Locker(new MemoryStore(), { consistency: 'most' }), (e) => {
      is(InvalidOptionError, 'consistency most')(e);
      assert.match(/** @type {Error} */ (e).message, /local_quorum/);
      return true;
    });
  });
});

describe('failOnStaleLock (column prefix)', () => {
  /**
   * A column-prefix entry of `name` whose holder went away without releasing it: taken
   * without keep-alive, a short TTL and a long cell TTL (without which the store drops the
   * entry as its lease ends), and left until the store lists it as stale. The caller keeps the
   * Lock referenced to the end (a collected Lock is released).
   */
  async function staleEntry(/** @type {MemoryStore} */ store, /** @type {string} */ name) {
    const gone = new Locker(store, { strategy: 'column-prefix', keepAlive: false });
    const lock = await gone.lock(name, { ttl: 50, cellTtl: 60_000 });
    const [entry] = await until('the entry is stale', async () => {
      const found = await entries(gone, name);
      return found.length === 1 && found[0]?.state === 'stale' && found;
    }, { limit: 5_000 });
    assert.equal(entry?.owner, lock.owner);
    assert.equal(lock.held, false);
    return lock;
  }

  test('per lock: lock(name, { failOnStaleLock: true }) rejects with StaleLockError (5)', async () => {
    const store = new MemoryStore();
    const name = fresh('stale');
    const gone = await staleEntry(store, name);
    const locker = new Locker(store, { strategy: 'column-prefix' });
    await assert.rejects(locker.lock(name, { failOnStaleLock: true, timeout: 5_000 }), (e) => {
      is(StaleLockError, 'failOnStaleLock')(e);
      assert.equal(/** @type {any} */ (e).lock, name);
      return true;
    });
    // The stale entry is left where it was, for an operator to look at.
    assert.deepEqual((await entries(locker, name)).map((e) => [e.owner, e.state]), [[gone.owner, 'stale']]);
    // Without the option (the default), the stale entry is deleted and the lock taken.
    const lock = await locker.lock(name, { timeout: 5_000 });
    assert.equal(lock.held, true);
    await lock.release();
    assert.equal(gone.held, false);
  });

  test('as the locker\'s default: new Locker(store, { failOnStaleLock: true })', async () => {
    const store = new MemoryStore();
    const name = fresh('stale');
    const gone = await staleEntry(store, name);
    const locker = new Locker(store, { strategy: 'column-prefix', failOnStaleLock: true });
    await assert.rejects(locker.lock(name, { timeout: 5_000 }), is(StaleLockError, 'the locker\'s failOnStaleLock'));
    // A lock may turn it off.
    const lock = await locker.lock(name, { failOnStaleLock: false, timeout: 5_000 });
    await lock.release();
    assert.equal(gone.held, false);
  });

  test('other strategies refuse it and cellTtl; a non-boolean is InvalidOptionError', async () => {
    const store = new MemoryStore();
    assert.throws(() => new Locker(store, { strategy: 'unique-insert', failOnStaleLock: true }), is(InvalidOptionError, 'unique insert'));
    assert.throws(() => new Locker(store, { strategy: 'bakery', failOnStaleLock: true }), is(InvalidOptionError, 'bakery'));
    assert.throws(() => new Locker(store, { strategy: 'column-prefix', failOnStaleLock: /** @type {any} */ ('yes') }), is(InvalidOptionError, 'a string'));
    await assert.rejects(new Locker(store).lock(fresh('stale'), { failOnStaleLock: true }), is(InvalidOptionError, 'per lock, unique insert'));
    await assert.rejects(new Locker(store, { strategy: 'column-prefix' }).lock(fresh('stale'), { failOnStaleLock: /** @type {any} */ (1) }), is(InvalidOptionError, 'per lock, a number'));
    await assert.rejects(new Locker(store).lock(fresh('stale'), { cellTtl: 60_000 }), is(InvalidOptionError, 'cellTtl, unique insert'));
    await assert.rejects(new Locker(store, { strategy: 'column-prefix' }).lock(fresh('stale'), { ttl: 2_000, cellTtl: 1_000 }), is(InvalidOptionError, 'cellTtl below the ttl'));
    // false is the default, so it is refused nowhere.
    await (await new Locker(store, { failOnStaleLock: false }).lock(fresh('stale'))).release();
  });
});

describe('TimedOutError names the holder', () => {
  for (const target of targetsClosedAfter()) {
    describe(target.name, { skip: target.skip }, () => {
      for (const strategy of STRATEGIES) {
        test(strategy, { timeout: 60_000 }, async () => {
          const [a, b] = [target.locker({ strategy }), target.locker({ strategy })];
          const name = fresh('holder');
          const held = await a.lock(name);
          try {
            await assert.rejects(b.lock(name, { timeout: 300 }), (e) => {
              is(TimedOutError, `${strategy}: the wait`)(e);
              assert.equal(/** @type {any} */ (e).lock, name);
              assert.equal(/** @type {any} */ (e).holder, held.owner, `${strategy}: the TimedOutError's holder`);
              return true;
            });
          } finally {
            await held.release();
          }
        });
      }
    });
  }
});
