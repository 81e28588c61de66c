// Shared locks and semaphores (issue 43) on every store (memory; PostgreSQL through pg;
// Cassandra through cassandra-driver) with the strategies that have them (bakery, column
// prefix): readers together and a writer shut out, a semaphore's permits as Locks, and every
// error a user meets (bad permits, unique insert, one name used in two modes, bad names).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Lock, Semaphore, BatonError, TimedOutError, NotOwnerError, InvalidOptionError, InvalidNameError,
} from 'baton-locks';
import { targetsClosedAfter, fresh, asyncDispose } from './support.mjs';

const MODAL = /** @type {const} */ (['bakery', 'column-prefix']);

/** Asserts `e` is a BatonError of `Class` whose message matches `pattern`. */
function isBaton(/** @type {any} */ e, /** @type {any} */ Class, /** @type {RegExp} */ pattern = /./) {
  assert.ok(e instanceof Class, `expected ${Class.name}, got ${e?.constructor?.name}: ${e?.message}`);
  assert.ok(e instanceof BatonError);
  assert.equal(e.code, Class.code);
  assert.match(e.message, pattern);
  return true;
}

for (const target of targetsClosedAfter()) {
  describe(target.name, { skip: target.skip }, () => {
    for (const strategy of MODAL) {
      const client = (/** @type {object} */ options = {}) => target.locker({ strategy, timeout: 300, ...options });

      describe(strategy, { concurrency: true, timeout: 60_000 }, () => {
        test('readers share; an exclusive try is busy while they hold; a writer shuts readers out', async () => {
          const [a, b, c] = [client(), client(), client()];
          const name = fresh('catalog');
          const r1 = await a.lock(name, { mode: 'shared' });
          const r2 = await b.lock(name, { mode: 'shared' });
          assert.ok(r1 instanceof Lock && r1.held && r2.held);
          assert.equal(r1.mode, 'shared');
          assert.equal(r2.mode, 'shared');
          assert.notEqual(r1.token, r2.token);
          assert.equal(await c.tryLock(name), null);
          assert.equal(await c.tryLock(name, { mode: 'exclusive' }), null);
          await assert.rejects(c.lock(name, { timeout: 50 }), (e) => isBaton(e, TimedOutError));
          const r3 = await c.tryLock(name, { mode: 'shared' });
          assert.ok(r3 && r3.mode === 'shared');
          await r3.release();
          await assert.rejects(r3.release(), (e) => isBaton(e, NotOwnerError)); // twice
          await r1.release();
          await r2.release();
          const writer = await c.lock(name);
          assert.equal(writer.mode, 'exclusive');
          assert.equal(await a.tryLock(name, { mode: 'shared' }), null);
          await writer.release();
          const read = await a.withLock(name, async (_signal, lock) => lock.mode, { mode: 'shared' });
          assert.equal(read, 'shared');
        });

        test('a shared Lock is released by await using', async () => {
          const [a, b] = [client(), client()];
          const name = fresh('using');
          {
            const lock = await a.lock(name, { mode: 'shared' });
            await lock[asyncDispose]();
            await lock[asyncDispose](); // nothing after a release
          }
          const w = await b.tryLock(name);
          assert.ok(w);
          await w.release();
        });

        test('a semaphore of 3 admits 3; a 4th try is null; a release gives one back', async () => {
          const [a, b] = [client(), client()];
          const name = fresh('encoders');
          const sem = a.semaphore(name, 3);
          assert.ok(sem instanceof Semaphore);
          assert.equal(sem.name, name);
          assert.equal(sem.permits, 3);
          const other = b.semaphore(name, 3n);
          const p1 = await sem.acquire();
          const p2 = await sem.acquire({ timeout: 1_000 });
          const p3 = await other.tryAcquire();
          assert.ok(p3);
          for (const p of [p1, p2, p3]) assert.equal(p.mode, 'counted(3)');
          assert.equal(await sem.tryAcquire(), null);
          assert.equal(await other.tryAcquire({ ttl: 5_000 }), null);
          await assert.rejects(sem.acquire({ timeout: 50 }), (e) => isBaton(e, TimedOutError));
          await p2.release();
          const p4 = await other.tryAcquire();
          assert.ok(p4 && p4.held);
          await assert.rejects(p2.release(), (e) => isBaton(e, NotOwnerError)); // released twice
          for (const p of [p1, p3, p4]) await p.release();
          // With every permit back, three at once again.
          const again = await Promise.all([sem.acquire(), sem.acquire(), other.acquire()]);
          for (const p of again) await p.release();
        });

        test('withPermit and await using give the permit back; permits bound the holders', async () => {
          const locker = client({ timeout: 30_000 });
          const sem = locker.semaphore(fresh('pool'), 2);
          let inside = 0;
          let most = 0;
          await Promise.all(Array.from({ length: 6 }, () => sem.withPermit(async (signal, permit) => {
            assert.ok(signal instanceof AbortSignal && permit.held);
            inside += 1;
            most = Math.max(most, inside);
            await new Promise((r) => setTimeout(r, 10));
            inside -= 1;
          })));
          assert.ok(most >= 1 && most <= 2, `at most 2 at once, saw ${most}`); // 2 unless contention spaced them
          await assert.rejects(sem.withPermit(async () => { throw new Error('mine'); }), /mine/);
          const p = await sem.acquire();
          await p[asyncDispose]();
          const [x, y] = [await sem.tryAcquire(), await sem.tryAcquire()];
          assert.ok(x && y, 'every permit came back');
          await x.release();
          await y.release();
        });

        test('two sizes on one name, or a semaphore and a lock: InvalidOptionError naming both', async () => {
          const [a, b] = [client(), client()];
          const name = fresh('mixed');
          const three = await a.semaphore(name, 3).acquire();
          await assert.rejects(b.semaphore(name, 4).acquire(), (e) => isBaton(e, InvalidOptionError, /counted\(3\)[^]*counted\(4\)|counted\(4\)[^]*counted\(3\)/));
          await assert.rejects(b.semaphore(name, 4).tryAcquire(), (e) => isBaton(e, InvalidOptionError));
          await assert.rejects(b.tryLock(name, { mode: 'shared' }), (e) => isBaton(e, InvalidOptionError, /counted\(3\)/));
          await assert.rejects(b.tryLock(name), (e) => isBaton(e, InvalidOptionError, /counted\(3\)/));
          await three.release();
          const shared = await a.lock(name, { mode: 'shared' });
          await assert.rejects(b.semaphore(name, 3).acquire(), (e) => isBaton(e, InvalidOptionError, /shared/));
          await shared.release();
        });

        test('getAndLock and insertAndLock take the lock exclusive only', async () => {
          const a = client();
          await assert.rejects(a.getAndLock(fresh('obj'), /** @type {any} */ ({ mode: 'shared' })), (e) => isBaton(e, InvalidOptionError, /exclusive/));
          const o = await a.getAndLock(fresh('obj'), /** @type {any} */ ({ mode: 'exclusive' }));
          await o.unlock();
        });

        test('permits out of range or not an integer: InvalidOptionError from semaphore()', () => {
          const a = client();
          for (const bad of [0, -1, 10_001, 2 ** 70, -(2 ** 70), 0n, 10_001n, 2n ** 70n, -(2n ** 70n)]) {
            assert.throws(() => a.semaphore(fresh('bad'), /** @type {any} */ (bad)), (e) => isBaton(e, InvalidOptionError, /permits/), String(bad));
          }
          for (const bad of [1.5, NaN, Infinity, '3', null, undefined, {}, true]) {
            assert.throws(() => a.semaphore(fresh('bad'), /** @type {any} */ (bad)), (e) => isBaton(e, InvalidOptionError, /integer/), String(bad));
          }
          assert.equal(a.semaphore(fresh('one'), 1).permits, 1);
          assert.equal(a.semaphore(fresh('most'), 10_000).permits, 10_000);
        });

        test('bad modes and options: InvalidOptionError', async () => {
          const a = client();
          for (const mode of ['counted(3)', 'SHARED', 'read', 1, null]) {
            await assert.rejects(a.lock(fresh('mode'), /** @type {any} */ ({ mode })), (e) => isBaton(e, InvalidOptionError, /mode/));
          }
          // A semaphore's mode is its own.
          await assert.rejects(a.semaphore(fresh('sem'), 2).acquire(/** @type {any} */ ({ mode: 'shared' })), (e) => isBaton(e, InvalidOptionError, /mode/));
        });

        test('bad names: InvalidNameError, from semaphore() at once and from a shared lock', async () => {
          const a = client();
          for (const name of ['', 'a\0b', 'x'.repeat(1 << 20), 'bad-\uD800', 42, null, new Uint8Array([0x61])]) {
            assert.throws(() => a.semaphore(/** @type {any} */ (name), 3), (e) => isBaton(e, InvalidNameError));
            await assert.rejects(a.lock(/** @type {any} */ (name), { mode: 'shared' }), (e) => isBaton(e, InvalidNameError));
          }
          for (const name of [fresh('ünïcode-名前'), fresh('x'.repeat(200))]) {
            const permit = await a.semaphore(name, 2).acquire();
            assert.equal(permit.name, name);
            await permit.release();
          }
        });
      });
    }

    test('unique insert has no shared locks or semaphores: InvalidOptionError', async () => {
      const a = target.locker({ strategy: 'unique-insert', timeout: 300 });
      await assert.rejects(a.lock(fresh('unique'), { mode: 'shared' }), (e) => isBaton(e, InvalidOptionError, /bakery|column/));
      await assert.rejects(a.tryLock(fresh('unique'), { mode: 'shared' }), (e) => isBaton(e, InvalidOptionError));
      assert.throws(() => a.semaphore(fresh('unique'), 3), (e) => isBaton(e, InvalidOptionError, /bakery|column/));
      const plain = await a.lock(fresh('unique'), { mode: 'exclusive' });
      assert.equal(plain.mode, 'exclusive');
      await plain.release();
    });
  });
}
