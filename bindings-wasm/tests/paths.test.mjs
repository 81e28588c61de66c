// Paths and several locks at once (issue 43) on every store (memory; PostgreSQL through pg;
// Cassandra through cassandra-driver) with the strategies that have them (bakery, column
// prefix): a path conflicts with its ancestors and descendants, not its siblings; bad paths,
// unique insert with paths and objects on paths are refused; lockAll takes its names in one
// order, all or nothing (a timeout or an abort leaves nothing held), and refuses what it
// cannot take. The order and the unwinding are the module's (Rust), not this package's JS.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Lock, BatonError, TimedOutError, CancelledError, InvalidOptionError, InvalidNameError, LostError,
} from 'baton-locks';
import { targetsClosedAfter, fresh, asyncDispose, until } from './support.mjs';

const MODAL = /** @type {const} */ (['bakery', 'column-prefix']);

/** Asserts `e` is a BatonError of `Class` whose message matches `pattern`. */
function isBaton(/** @type {any} */ e, /** @type {any} */ Class, /** @type {RegExp} */ pattern = /./) {
  assert.ok(e instanceof Class, `expected ${Class.name}, got ${e?.constructor?.name}: ${e?.message}`);
  assert.ok(e instanceof BatonError);
  assert.equal(e.code, Class.code);
  assert.match(e.message, pattern);
  return true;
}

/** Whether an exclusive lock on `name` can be had now (it is released again). */
async function free(/** @type {import('baton-locks').Locker} */ locker, /** @type {string} */ name) {
  const lock = await locker.tryLock(name);
  if (lock === null) return false;
  await lock.release();
  return true;
}

for (const target of targetsClosedAfter()) {
  describe(target.name, { skip: target.skip }, () => {
    for (const strategy of MODAL) {
      const tree = (/** @type {object} */ options = {}) => target.locker({ strategy, timeout: 300, paths: true, ...options });
      const flat = (/** @type {object} */ options = {}) => target.locker({ strategy, timeout: 300, ...options });

      describe(strategy, { concurrency: true, timeout: 60_000 }, () => {
        test('a path conflicts with its ancestors and descendants, not its siblings', async () => {
          const [a, b] = [tree(), tree()];
          const app = fresh('app');
          const cache = await a.lock(`${app}.cache`);
          assert.equal(cache.name, `${app}.cache`);
          assert.equal(await b.tryLock(app), null); // an ancestor
          assert.equal(await b.tryLock(app, { mode: 'shared' }), null);
          assert.equal(await b.tryLock(`${app}.cache`), null); // itself
          assert.equal(await b.tryLock(`${app}.cache.users`), null); // a descendant
          assert.equal(await b.tryLock(`${app}.cache.users.x`, { mode: 'shared' }), null);
          await assert.rejects(b.lock(`${app}.cache.users`, { timeout: 50 }), (e) => isBaton(e, TimedOutError));
          assert.ok(await free(b, `${app}.db`)); // a sibling
          assert.ok(await free(b, `${app}.cachex`)); // segments, not prefixes
          assert.ok(await free(b, `${app}le`)); // `apple` beside `app`
          await cache.release();
          assert.ok(await free(b, app));
          assert.ok(await free(b, `${app}.cache.users`));
        });

        test('shared paths share; a writer below or above a reader waits', async () => {
          const [a, b] = [tree(), tree()];
          const app = fresh('app');
          const root = await a.lock(app, { mode: 'shared' });
          const reader = await b.lock(`${app}.cache`, { mode: 'shared' });
          assert.equal(reader.mode, 'shared');
          assert.equal(await b.tryLock(`${app}.cache.users`), null);
          assert.equal(await a.tryLock(app), null);
          await reader.release();
          await root.release();
        });

        test('flat names see no tree', async () => {
          const a = flat();
          const app = fresh('app');
          const lock = await a.lock(`${app}.cache`);
          assert.ok(await free(a, app));
          assert.ok(await free(a, `${app}.cache.users`));
          await lock.release();
        });

        test('bad paths: InvalidNameError', async () => {
          const a = tree();
          for (const name of ['a..b', 'a.', '.a', 'a|b', '.', 'a.b.', Array(17).fill('s').join('.')]) {
            await assert.rejects(a.lock(name), (e) => isBaton(e, InvalidNameError, /path/));
            await assert.rejects(a.tryLock(name, { mode: 'shared' }), (e) => isBaton(e, InvalidNameError));
            await assert.rejects(a.lockAll([fresh('ok'), name]), (e) => isBaton(e, InvalidNameError));
          }
          const deep = [fresh('deep'), ...Array(15).fill('s')].join('.'); // 16 segments: the most
          const lock = await a.lock(deep);
          assert.equal(lock.name, deep);
          await lock.release();
        });

        test('objects are refused on paths: InvalidOptionError', async () => {
          const a = tree();
          const name = fresh('obj');
          await assert.rejects(a.getAndLock(name), (e) => isBaton(e, InvalidOptionError, /path/));
          await assert.rejects(a.insertAndLock(name, 'v'), (e) => isBaton(e, InvalidOptionError, /path/));
          await assert.rejects(a.get(name), (e) => isBaton(e, InvalidOptionError));
          await assert.rejects(a.insert(name, 'v'), (e) => isBaton(e, InvalidOptionError));
          await assert.rejects(a.updateOptimistic(name, 'v', 1n), (e) => isBaton(e, InvalidOptionError));
          await assert.rejects(a.remove(name), (e) => isBaton(e, InvalidOptionError));
          assert.ok(await free(a, name)); // nothing was left locked
        });

        test('lockAll takes flat names in one order, whatever order they are given in', async () => {
          const [a, b] = [flat(), flat()];
          const r = fresh('r');
          const given = [`${r}.b`, `${r}.a.x`, r, `${r}.a`];
          const locks = await a.lockAll(given);
          assert.ok(Array.isArray(locks) && locks.every((l) => l instanceof Lock && l.held && l.mode === 'exclusive'));
          assert.deepEqual(locks.map((l) => l.name), [r, `${r}.a`, `${r}.a.x`, `${r}.b`]);
          for (const name of given) assert.equal(await b.tryLock(name), null);
          await Promise.all(locks.map((l) => l.release()));
          for (const name of given) assert.ok(await free(b, name));
        });

        test('lockAll on paths: in path order, holding what each covers', async () => {
          const [a, b] = [tree(), tree()];
          const [r, s] = [fresh('r'), fresh('s')];
          const locks = await a.lockAll([s, `${r}.z`, `${r}.a.b`], { timeout: 2_000 });
          assert.deepEqual(locks.map((l) => l.name), [`${r}.a.b`, `${r}.z`, s]);
          assert.equal(await b.tryLock(r), null); // the common ancestor
          assert.equal(await b.tryLock(`${r}.a`), null);
          assert.ok(await free(b, `${r}.m`)); // a sibling of both
          await locks[asyncDispose]();
          assert.ok(locks.every((l) => !l.held));
          assert.ok(await free(b, r));
          assert.ok(await free(b, s));
        });

        test('lockAll shared: readers share, a writer waits', async () => {
          const [a, b] = [tree(), tree()];
          const r = fresh('r');
          const one = await a.lockAll([`${r}.a`, `${r}.b`], { mode: 'shared' });
          const two = await b.lockAll([`${r}.c`, `${r}.b`], { mode: 'shared' });
          assert.deepEqual([...one, ...two].map((l) => l.mode), ['shared', 'shared', 'shared', 'shared']);
          assert.equal(await b.tryLock(`${r}.b`), null);
          const root = await b.tryLock(r, { mode: 'shared' });
          assert.ok(root);
          await root.release();
          await one[asyncDispose]();
          await two[asyncDispose]();
          await one[asyncDispose](); // nothing after a release
        });

        test('await using releases every lock, last first', async () => {
          const [a, b] = [flat(), flat()];
          const names = [fresh('u'), fresh('v')];
          {
            const locks = await a.lockAll(names);
            assert.equal(Object.keys(locks).length, 2); // the disposer is not an element
            await locks[asyncDispose]();
          }
          for (const name of names) assert.ok(await free(b, name));
        });

        for (const busy of [0, 1, 2]) {
          test(`a timeout leaves nothing held (name ${busy} of 3 busy)`, async () => {
            const [a, b] = [flat(), flat()];
            const r = fresh('r');
            const names = [`${r}.a`, `${r}.b`, `${r}.c`];
            const blocker = await b.lock(names[busy]);
            const started = performance.now();
            await assert.rejects(a.lockAll([...names].reverse(), { timeout: 200 }), (e) => isBaton(e, TimedOutError));
            assert.ok(performance.now() - started < 5_000);
            for (const name of names) {
              if (name !== names[busy]) assert.ok(await free(b, name), `${name} was left held`);
            }
            await blocker.release();
            const locks = await a.lockAll(names, { timeout: 1_000 });
            assert.equal(locks.length, 3);
            await locks[asyncDispose]();
          });
        }

        test('the timeout is the budget of the whole call', async () => {
          const [a, b] = [tree(), tree()];
          const r = fresh('r');
          const blocker = await b.lock(`${r}.z.deep`); // a descendant of the last name
          const started = performance.now();
          await assert.rejects(a.lockAll([`${r}.z`, `${r}.a`, `${r}.m`], { timeout: 250 }), (e) => isBaton(e, TimedOutError));
          assert.ok(performance.now() - started < 5_000);
          assert.ok(await free(b, `${r}.a`));
          assert.ok(await free(b, `${r}.m`));
          await blocker.release();
        });

        test('an aborted signal stops lockAll and leaves nothing held', async () => {
          const [a, b] = [flat({ timeout: 30_000 }), flat()];
          const r = fresh('r');
          const blocker = await b.lock(`${r}.b`);
          const controller = new AbortController();
          const pending = a.lockAll([`${r}.b`, `${r}.a`], { signal: controller.signal });
          // Watched, not raced for: a tryLock here could take r.a before lockAll wrote it.
          await until('the first lock taken', async () => (await a.locks()).some((e) => e.name === `${r}.a` && e.state === 'held'));
          controller.abort(new Error('enough'));
          await assert.rejects(pending, (e) => isBaton(e, CancelledError));
          await until('the first lock released', () => free(b, `${r}.a`));
          await blocker.release();
          const before = new AbortController();
          before.abort();
          await assert.rejects(a.lockAll([`${r}.a`], { signal: before.signal }), (e) => isBaton(e, CancelledError));
          await assert.rejects(a.lockAll([`${r}.a`], /** @type {any} */ ({ signal: 'stop' })), (e) => isBaton(e, InvalidOptionError, /signal/));
        });

        test('lockAll does not deadlock against itself', async () => {
          const lockers = [flat({ timeout: 30_000 }), flat({ timeout: 30_000 }), flat({ timeout: 30_000 })];
          const r = fresh('r');
          const [x, y] = [`${r}.x`, `${r}.y`];
          await Promise.all(lockers.map(async (locker, i) => {
            for (let round = 0; round < 4; round++) {
              const locks = await locker.lockAll(i % 2 ? [y, x] : [x, y]);
              await locks[asyncDispose]();
            }
          }));
        });

        test('a lost lock does not keep the others held on disposal', async () => {
          const [a, b] = [flat(), flat()];
          const r = fresh('r');
          const locks = await a.lockAll([`${r}.a`, `${r}.b`]);
          await b.forceRelease(`${r}.b`); // released first on disposal: that release fails
          await locks[asyncDispose]().catch((e) => isBaton(e, LostError));
          assert.ok(!locks[0].held);
          assert.ok(await free(b, `${r}.a`));
        });

        test('what lockAll refuses: InvalidOptionError', async () => {
          const [f, t] = [flat(), tree()];
          for (const locker of [f, t]) {
            await assert.rejects(locker.lockAll([]), (e) => isBaton(e, InvalidOptionError, /at least one/));
            const name = fresh('twice');
            await assert.rejects(locker.lockAll([name, fresh('other'), name]), (e) => isBaton(e, InvalidOptionError, /twice|overlap/));
            assert.ok(await free(locker, name));
            for (const names of ['ab', null, undefined, 42, { 0: 'a', length: 1 }]) {
              await assert.rejects(locker.lockAll(/** @type {any} */ (names)), (e) => isBaton(e, InvalidOptionError, /array/));
            }
            await assert.rejects(locker.lockAll([fresh('o')], /** @type {any} */ ({ bogus: 1 })), (e) => isBaton(e, InvalidOptionError, /bogus/));
            await assert.rejects(locker.lockAll([fresh('o')], { timeout: -1 }), (e) => isBaton(e, InvalidOptionError, /timeout/));
          }
          const r = fresh('r');
          for (const names of [[r, `${r}.a`], [`${r}.a.b.c`, `${r}.x`, `${r}.a`]]) {
            await assert.rejects(t.lockAll(names), (e) => isBaton(e, InvalidOptionError, /overlap/));
          }
          assert.ok(await free(t, r));
          const other = fresh('flat'); // flat names: two names, no tree (a root of its own)
          const both = await f.lockAll([other, `${other}.a`]);
          assert.equal(both.length, 2);
          await both[asyncDispose]();
        });

        test('bad names: InvalidNameError, nothing taken', async () => {
          const [f, t] = [flat(), tree()];
          for (const locker of [f, t]) {
            for (const name of ['', 'a\0b', 'x'.repeat(1 << 20), 'bad-\uD800', new Uint8Array([0xff, 0xfe]), 42, null]) {
              const good = fresh('good');
              await assert.rejects(locker.lockAll(/** @type {any} */ ([good, name])), (e) => isBaton(e, InvalidNameError));
              assert.ok(await free(locker, good));
            }
          }
        });
      });
    }

    test('unique insert takes no paths: InvalidOptionError', () => {
      for (const strategy of [undefined, 'unique-insert']) {
        assert.throws(() => target.locker({ strategy, paths: true }), (e) => isBaton(e, InvalidOptionError, /bakery|column/));
      }
      for (const paths of ['yes', 1, null]) {
        assert.throws(() => target.locker({ strategy: 'bakery', paths }), (e) => isBaton(e, InvalidOptionError, /paths/));
      }
    });

    test('lockAll on unique insert: exclusive names yes, shared no', async () => {
      const a = target.locker({ strategy: 'unique-insert', timeout: 300 });
      await assert.rejects(a.lockAll([fresh('u')], { mode: 'shared' }), (e) => isBaton(e, InvalidOptionError, /bakery|column/));
      const locks = await a.lockAll([fresh('u'), fresh('v')]);
      assert.equal(locks.length, 2);
      await locks[asyncDispose]();
    });
  });
}
