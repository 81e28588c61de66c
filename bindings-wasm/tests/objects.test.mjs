// Objects beside locks (seed 002, ScaleOut StateServer's model), call by call, on every store
// (memory; PostgreSQL through pg, on both table layouts; Cassandra through cassandra-driver at
// quorum) and every strategy: the unlocked calls (get, insert, updateOptimistic, remove), the
// locked ones (getAndLock and its LockedObject, insertAndLock), `await using`'s release, the
// errors a user meets (VersionMismatchError 15, ObjectNotFoundError 16, AlreadyExistsError 17,
// BusyError while locked, LostError after a forced release or an expiry, NotOwnerError after a
// release), values that must round-trip byte for byte, and bad input refused with typed errors.
// Each client is a Locker of its own (on PostgreSQL with a pool of its own), as separate
// processes would be.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  Locker, MemoryStore, LockedObject, Versioned, BatonError, BusyError, LostError, NotOwnerError,
  TimedOutError, InvalidNameError, InvalidOptionError, VersionMismatchError, ObjectNotFoundError,
  AlreadyExistsError, errorClass,
} from 'baton-locks';
import {
  STRATEGIES, targetsClosedAfter, fresh, until, entries, show, asyncDispose, here, start, exitWithin,
  required,
} from './support.mjs';

const MiB = 1 << 20;

/** Asserts `e` is a BatonError of `Class`, with its code and kind (and the lock's name). */
function isBaton(/** @type {any} */ e, /** @type {typeof BatonError} */ Class, /** @type {string} */ name = undefined) {
  assert.ok(e instanceof Class, `expected ${Class.name}, got ${e?.constructor?.name}: ${e?.message}`);
  assert.ok(e instanceof BatonError);
  assert.equal(e.code, Class.code);
  assert.equal(e.kind, Class.kind);
  assert.equal(errorClass(e.code), Class);
  if (name !== undefined) assert.equal(e.lock, name, `the error names the object: ${e.message}`);
  return true;
}

const bytes = (/** @type {string} */ text) => new TextEncoder().encode(text);

test('the new error kinds have their stable codes and names', () => {
  for (const [Class, code, kind] of [[VersionMismatchError, 15, 'version_mismatch'],
    [ObjectNotFoundError, 16, 'object_not_found'], [AlreadyExistsError, 17, 'already_exists']]) {
    assert.equal(Class.code, code);
    assert.equal(Class.kind, kind);
    assert.equal(errorClass(code), Class);
    const e = new Class('x', { lock: 'GOOG' });
    assert.ok(e instanceof BatonError && e instanceof Error);
    assert.equal(e.name, Class.name);
    assert.equal(e.code, code);
    assert.equal(e.lock, 'GOOG');
  }
});

for (const target of targetsClosedAfter({ layouts: true })) {
  describe(target.name, { skip: target.skip }, () => {
    for (const strategy of STRATEGIES) {
      const client = (/** @type {object} */ options = {}) => target.locker({ strategy, ...options });

      describe(strategy, { concurrency: true, timeout: 120_000 }, () => {
        test('the quote example: insert, getAndLock, updateLockedAndRelease; the handle is spent', async () => {
          const [quotes, other] = [client(), client()];
          const name = fresh('quote');
          assert.equal(await quotes.get(name), null);
          assert.equal(await quotes.insert(name, '1053.00'), 1n);
          const quote = await quotes.getAndLock(name);
          assert.ok(quote instanceof LockedObject);
          assert.equal(quote.name, name);
          assert.deepEqual(quote.value, bytes('1053.00'));
          assert.ok(quote.value instanceof Uint8Array);
          assert.equal(quote.text, '1053.00');
          assert.equal(quote.version, 1n);
          assert.equal(quote.lock.held, true);
          assert.ok(quote.lock.token > 0n);
          assert.deepEqual((await entries(other, name)).map((e) => e.owner), [quote.lock.owner]);

          assert.equal(await quote.updateLockedAndRelease('1053.26'), 2n);
          assert.equal(quote.version, 2n);
          assert.equal(quote.text, '1053.26');
          assert.equal(quote.lock.held, false);
          assert.deepEqual(await entries(other, name), [], 'the lock was not released');
          const now = await other.get(name);
          assert.ok(now instanceof Versioned);
          assert.equal(now.text, '1053.26');
          assert.equal(now.version, 2n);

          // The handle is spent: every holder's call is NotOwnerError.
          for (const [call, run] of Object.entries({
            getLocked: () => quote.getLocked(),
            updateLockedAndRetain: () => quote.updateLockedAndRetain('x'),
            updateLockedAndRelease: () => quote.updateLockedAndRelease('x'),
            insertLocked: () => quote.insertLocked('x'),
            removeLocked: () => quote.removeLocked(),
            lockRefresh: () => quote.lockRefresh(),
            unlock: () => quote.unlock(),
          })) {
            await assert.rejects(run(), (e) => isBaton(e, NotOwnerError, name), call);
          }
          await quote[asyncDispose](); // released already: nothing to do, no error
          assert.equal((await other.get(name))?.version, 2n, 'a spent handle wrote');
        });

        test('optimistic calls: ObjectNotFoundError, AlreadyExistsError, VersionMismatchError; versions go on after a removal', async () => {
          const [a, b] = [client(), client()];
          const name = fresh('optimistic');
          await assert.rejects(a.updateOptimistic(name, 'x', 0n), (e) => isBaton(e, ObjectNotFoundError, name));
          await assert.rejects(a.remove(name), (e) => isBaton(e, ObjectNotFoundError, name));
          assert.equal(await a.insert(name, 'one'), 1n);
          await assert.rejects(b.insert(name, 'two'), (e) => isBaton(e, AlreadyExistsError, name));
          const seen = /** @type {Versioned} */ (await b.get(name));
          assert.equal(seen.version, 1n);
          // a writes first: b's version is stale.
          assert.equal(await a.updateOptimistic(name, 'two', seen.version), 2n);
          await assert.rejects(b.updateOptimistic(name, 'three', seen.version), (e) => isBaton(e, VersionMismatchError, name));
          await assert.rejects(b.updateOptimistic(name, 'three', 0), (e) => isBaton(e, VersionMismatchError, name));
          await assert.rejects(b.updateOptimistic(name, 'three', 99n), (e) => isBaton(e, VersionMismatchError, name));
          assert.equal((await b.get(name))?.text, 'two', 'a refused update wrote');
          // A number is taken as well as a bigint.
          assert.equal(await b.updateOptimistic(name, 'three', 2), 3n);
          await a.remove(name);
          assert.equal(await a.get(name), null);
          await assert.rejects(b.updateOptimistic(name, 'four', 4n), (e) => isBaton(e, ObjectNotFoundError, name));
          await assert.rejects(b.remove(name), (e) => isBaton(e, ObjectNotFoundError, name));
          // Inserted again, it goes on from its last version (the removal was version 4).
          assert.equal(await b.insert(name, 'again'), 5n);
          assert.equal((await a.get(name))?.version, 5n);
          assert.deepEqual(await entries(a, name), [], 'an unlocked call left a lock entry');
        });

        test('locked calls: getLocked, updateLockedAndRetain, insertLocked, removeLocked, lockRefresh, unlock', async () => {
          const [a, b] = [client({ ttl: 30_000 }), client()];
          const name = fresh('locked');
          // A name with a lock and no object.
          const bare = await a.getAndLock(name);
          assert.equal(bare.value, null);
          assert.equal(bare.text, null);
          assert.equal(bare.version, 0n);
          await assert.rejects(bare.updateLockedAndRetain('x'), (e) => isBaton(e, ObjectNotFoundError, name));
          assert.equal(bare.lock.held, true, 'a refused write released the lock');
          assert.equal(await bare.insertLocked('first'), 1n);
          assert.equal(bare.text, 'first');
          await assert.rejects(bare.insertLocked('again'), (e) => isBaton(e, AlreadyExistsError, name));
          assert.equal(bare.lock.held, true);
          assert.deepEqual(await bare.getLocked(), bytes('first'));
          assert.equal(await bare.updateLockedAndRetain('second'), 2n);
          assert.equal(bare.lock.held, true);
          await bare.lockRefresh();
          assert.ok(bare.lock.remaining > 20_000, `remaining ${bare.lock.remaining} after lockRefresh`);
          // Another client reads it meanwhile (a read does not look at the lock)...
          assert.equal((await b.get(name))?.text, 'second');
          // ...and cannot lock it.
          await assert.rejects(b.getAndLock(name, { timeout: 0 }), (e) => isBaton(e, TimedOutError, name));
          await bare.unlock();
          await assert.rejects(bare.unlock(), (e) => isBaton(e, NotOwnerError, name), 'a second unlock');
          assert.deepEqual(await entries(b, name), []);

          const again = await b.getAndLock(name, { timeout: 5_000, ttl: 10_000 });
          assert.equal(again.text, 'second');
          assert.equal(again.version, 2n);
          assert.ok(again.lock.token > bare.lock.token);
          await again.removeLocked();
          assert.equal(again.lock.held, false, 'removeLocked releases');
          assert.deepEqual(await entries(a, name), []);
          assert.equal(await a.get(name), null);
          await assert.rejects(again.unlock(), (e) => isBaton(e, NotOwnerError, name));

          // insertAndLock: inserts holding the lock; over an existing object, AlreadyExistsError
          // and the lock released.
          const made = await a.insertAndLock(name, 'made', { ttl: 20_000 });
          assert.equal(made.version, 4n); // the removal was version 3
          assert.equal(made.text, 'made');
          assert.equal(made.lock.held, true);
          await assert.rejects(b.insert(name, 'x'), (e) => isBaton(e, BusyError, name));
          await made.unlock();
          await assert.rejects(b.insertAndLock(name, 'x'), (e) => isBaton(e, AlreadyExistsError, name));
          assert.deepEqual(await entries(a, name), [], 'insertAndLock kept the lock after AlreadyExistsError');
        });

        test('a locked object refuses other writers with BusyError (naming the holder); reads go on', async () => {
          const [holder, other] = [client(), client()];
          const name = fresh('busy');
          await holder.insert(name, '1');
          const held = await holder.getAndLock(name);
          for (const [call, run] of Object.entries({
            updateOptimistic: () => other.updateOptimistic(name, '2', 1n),
            insert: () => other.insert(name, '2'),
            remove: () => other.remove(name),
          })) {
            await assert.rejects(run(), (/** @type {any} */ e) => {
              isBaton(e, BusyError, name);
              assert.equal(e.holder, held.lock.owner, `${call}: the error names the holder`);
              return true;
            }, call);
          }
          // The holder's own unlocked write is refused too: only the handle writes.
          await assert.rejects(holder.updateOptimistic(name, '2', 1n), (e) => isBaton(e, BusyError, name));
          assert.equal((await other.get(name))?.text, '1');
          assert.deepEqual((await entries(other, name)).map((e) => e.owner), [held.lock.owner], 'a refused write left an entry');
          assert.equal(await held.updateLockedAndRelease('3'), 2n);
          assert.equal(await other.updateOptimistic(name, '4', 2n), 3n, 'free again after the release');
        });

        test('a forced release makes the holder\'s writes LostError, and nothing is written', async () => {
          const [holder, operator] = [client({ ttl: 30_000 }), client()];
          const name = fresh('forced');
          await holder.insert(name, 'before');
          const held = await holder.getAndLock(name);
          await operator.forceRelease(name);
          // The store refuses the write: its lock cell is gone.
          await assert.rejects(held.updateLockedAndRetain('after'), (e) => isBaton(e, LostError, name));
          assert.equal(held.lock.held, false);
          assert.ok(held.lock.signal.aborted && held.lock.signal.reason instanceof LostError);
          await assert.rejects(held.updateLockedAndRelease('after'), (e) => isBaton(e, LostError, name));
          await assert.rejects(held.lockRefresh(), (e) => isBaton(e, LostError, name));
          const now = /** @type {Versioned} */ (await operator.get(name));
          assert.equal(now.text, 'before');
          assert.equal(now.version, 1n);
          // Someone else writes it now; the lost handle's unlock reports the loss.
          assert.equal(await operator.updateOptimistic(name, 'other', 1n), 2n);
          await assert.rejects(held.unlock(), (e) => isBaton(e, LostError, name));
          assert.equal((await operator.get(name))?.text, 'other');
        });

        test('an expired lease (keepAlive off) makes the holder\'s write LostError; the next holder\'s goes in', async () => {
          const [holder, next] = [client({ ttl: 400, keepAlive: false }), client()];
          const name = fresh('expired');
          await holder.insert(name, 'v1');
          const held = await holder.getAndLock(name);
          await until('the lease expires', () => !held.lock.held, { limit: 5_000 });
          const taken = await next.getAndLock(name, { timeout: 10_000 });
          await assert.rejects(held.updateLockedAndRetain('late'), (e) => isBaton(e, LostError, name));
          assert.equal(await taken.updateLockedAndRelease('v2'), 2n);
          assert.equal((await next.get(name))?.text, 'v2');
          await assert.rejects(held[asyncDispose](), (e) => isBaton(e, LostError, name), 'disposing a lost handle reports the loss');
        });

        test('Symbol.asyncDispose releases at the end of the scope, unless released already', async () => {
          const [a, b] = [client(), client()];
          const name = fresh('dispose');
          const held = await a.getAndLock(name);
          assert.equal(typeof held[asyncDispose], 'function');
          await held.insertLocked('x');
          await held[asyncDispose]();
          assert.equal(held.lock.held, false);
          assert.deepEqual(await entries(b, name), []);
          await held[asyncDispose](); // twice: nothing, no error
          for (const spend of [(/** @type {LockedObject} */ o) => o.updateLockedAndRelease('y'),
            (/** @type {LockedObject} */ o) => o.unlock(), (/** @type {LockedObject} */ o) => o.lock.release()]) {
            const o = await b.getAndLock(name);
            await spend(o);
            await o[asyncDispose](); // after a release: nothing, no NotOwnerError
          }
          const gone = await a.getAndLock(name);
          await gone.removeLocked();
          await gone[asyncDispose]();
          assert.deepEqual(await entries(b, name), []);
          assert.equal(await b.get(name), null);
        });

        test('values round-trip byte for byte: NUL, non-UTF-8, Buffer, subarrays, strings as UTF-8', async () => {
          const [a, b] = [client(), client()];
          const name = fresh('bytes');
          const all = new Uint8Array(256).map((_, i) => i);
          const cases = [
            ['every byte', all, all],
            ['NUL bytes', new Uint8Array([0, 0, 0]), new Uint8Array([0, 0, 0])],
            ['not UTF-8', new Uint8Array([0xff, 0xfe, 0x80, 0xc0, 0x00]), new Uint8Array([0xff, 0xfe, 0x80, 0xc0, 0x00])],
            ['a Buffer', Buffer.from('buffer\0bytes'), bytes('buffer\0bytes')],
            ['a subarray', all.subarray(250, 253), new Uint8Array([250, 251, 252])],
            ['a string', 'é 🔒 日本 "q" \\ ;\0', bytes('é 🔒 日本 "q" \\ ;\0')],
            ['one byte', new Uint8Array([7]), new Uint8Array([7])],
          ];
          let version = 0n;
          for (const [why, value, expected] of cases) {
            version = version === 0n ? await a.insert(name, value) : await a.updateOptimistic(name, value, version);
            const got = /** @type {Versioned} */ (await b.get(name));
            assert.ok(got.value instanceof Uint8Array, why);
            assert.deepEqual(got.value, expected, why);
            assert.equal(got.version, version, why);
            const locked = await b.getAndLock(name);
            assert.deepEqual(locked.value, expected, `${why}, through getAndLock`);
            version = await locked.updateLockedAndRelease(value);
            assert.deepEqual((await a.get(name))?.value, expected, `${why}, written by the holder`);
          }
          assert.equal(new Versioned(new Uint8Array([0xff, 0x41]), 1n).text, '\uFFFDA', 'text replaces what is not UTF-8');
        });

        test('a value of exactly the store\'s limit round-trips; one byte more, or none, is InvalidOptionError and writes nothing', async () => {
          const [a, b] = [client(), client()];
          const name = fresh('limit');
          const big = new Uint8Array(MiB).map((_, i) => (i * 7919) & 0xff);
          assert.equal(await a.insert(name, big), 1n);
          assert.deepEqual((await b.get(name))?.value, big);
          const locked = await b.getAndLock(name);
          assert.deepEqual(locked.value, big);
          for (const [why, value] of [['1 MiB + 1', new Uint8Array(MiB + 1)], ['empty', new Uint8Array(0)], ['an empty string', ''],
            ['a string of 1 MiB + 1 bytes', 'x'.repeat(MiB + 1)], ['1 MiB in two-byte characters', 'é'.repeat(MiB / 2 + 1)]]) {
            await assert.rejects(a.updateOptimistic(name, value, 1n), (e) => isBaton(e, InvalidOptionError, name), `updateOptimistic ${why}`);
            await assert.rejects(a.insert(fresh('limit'), value), (e) => isBaton(e, InvalidOptionError), `insert ${why}`);
            await assert.rejects(locked.updateLockedAndRetain(value), (e) => isBaton(e, InvalidOptionError, name), `updateLockedAndRetain ${why}`);
            await assert.rejects(locked.updateLockedAndRelease(value), (e) => isBaton(e, InvalidOptionError, name), `updateLockedAndRelease ${why}`);
            assert.equal(locked.lock.held, true, `${why}: a refused value released the lock`);
          }
          const reversed = big.slice().reverse();
          assert.equal(await locked.updateLockedAndRelease(reversed), 2n);
          assert.deepEqual((await a.get(name))?.value, reversed);
        });
      });
    }
  });
}

describe('bad input is refused with typed errors before any I/O (memory)', () => {
  const store = new MemoryStore();
  const locker = new Locker(store);
  const MiBName = 'y'.repeat(MiB);
  const BAD_NAMES = [
    ['a number', 42], ['undefined', undefined], ['null', null], ['an object', { name: 'x' }], ['empty', ''],
    ['256 bytes', 'x'.repeat(256)], ['1 MiB', MiBName], ['a NUL', 'a\0b'], ['a lone surrogate', 'a\uD800'],
  ];
  const BAD_VALUES = [
    ['undefined', undefined], ['null', null], ['a number', 5], ['a bigint', 5n], ['an object', { value: 'x' }],
    ['an array of bytes', [1, 2, 3]], ['an ArrayBuffer', new ArrayBuffer(3)], ['a DataView', new DataView(new ArrayBuffer(3))],
    ['a Uint16Array', new Uint16Array(3)], ['a String object', new String('x')], ['a lone surrogate', 'a\uDC00'],
    ['empty', ''], ['no bytes', new Uint8Array(0)], ['1 MiB + 1', new Uint8Array(MiB + 1)], ['64 MiB', new Uint8Array(64 * MiB)],
  ];
  const BAD_VERSIONS = [
    ['-1', -1], ['-1n', -1n], ['1.5', 1.5], ['NaN', NaN], ['Infinity', Infinity], ['2^53', 2 ** 53], ['2^64', 2n ** 64n],
    ['a string', '1'], ['null', null], ['undefined', undefined], ['an object', {}],
  ];

  test('names: InvalidNameError (6) from every object call', async () => {
    for (const [why, name] of BAD_NAMES) {
      const n = /** @type {any} */ (name);
      await assert.rejects(locker.get(n), (e) => isBaton(e, InvalidNameError), `get(${why})`);
      await assert.rejects(locker.insert(n, 'x'), (e) => isBaton(e, InvalidNameError), `insert(${why})`);
      await assert.rejects(locker.updateOptimistic(n, 'x', 1n), (e) => isBaton(e, InvalidNameError), `updateOptimistic(${why})`);
      await assert.rejects(locker.remove(n), (e) => isBaton(e, InvalidNameError), `remove(${why})`);
      await assert.rejects(locker.getAndLock(n), (e) => isBaton(e, InvalidNameError), `getAndLock(${why})`);
      await assert.rejects(locker.insertAndLock(n, 'x'), (e) => isBaton(e, InvalidNameError), `insertAndLock(${why})`);
    }
    assert.deepEqual(await locker.locks(), []);
  });

  test('values: InvalidOptionError (7), before the lock is taken; the largest refused at once', async () => {
    const name = fresh('values');
    await locker.insert(name, 'kept');
    const held = await locker.getAndLock(fresh('held'));
    for (const [why, value] of BAD_VALUES) {
      const v = /** @type {any} */ (value);
      await assert.rejects(locker.insert(fresh('v'), v), (e) => isBaton(e, InvalidOptionError), `insert(${why})`);
      await assert.rejects(locker.updateOptimistic(name, v, 1n), (e) => isBaton(e, InvalidOptionError, name), `updateOptimistic(${why})`);
      await assert.rejects(locker.insertAndLock(fresh('v'), v), (e) => isBaton(e, InvalidOptionError), `insertAndLock(${why})`);
      await assert.rejects(held.updateLockedAndRetain(v), (e) => isBaton(e, InvalidOptionError), `updateLockedAndRetain(${why})`);
      await assert.rejects(held.updateLockedAndRelease(v), (e) => isBaton(e, InvalidOptionError), `updateLockedAndRelease(${why})`);
      await assert.rejects(held.insertLocked(v), (e) => isBaton(e, InvalidOptionError), `insertLocked(${why})`);
    }
    assert.equal(held.lock.held, true);
    assert.deepEqual((await locker.locks()).map((e) => e.name), [held.name], 'insertAndLock took a lock for a bad value');
    assert.equal((await locker.get(name))?.text, 'kept');
    await held.unlock();
    // Too large is refused without copying it into the module: 20 refusals of 64 MiB at once.
    const huge = new Uint8Array(64 * MiB);
    const started = performance.now();
    for (let i = 0; i < 20; i++) await assert.rejects(locker.insert(name, huge), (e) => isBaton(e, InvalidOptionError));
    assert.ok(performance.now() - started < 2_000, `20 refusals took ${(performance.now() - started).toFixed(0)} ms`);
  });

  test('versions: InvalidOptionError (7) unless a bigint or a non-negative safe integer', async () => {
    const name = fresh('versions');
    await locker.insert(name, 'v');
    for (const [why, version] of BAD_VERSIONS) {
      await assert.rejects(locker.updateOptimistic(name, 'x', /** @type {any} */ (version)), (e) => isBaton(e, InvalidOptionError, name), why);
    }
    assert.equal((await locker.get(name))?.version, 1n);
    // The largest versions are versions: the object is not at them.
    await assert.rejects(locker.updateOptimistic(name, 'x', 2n ** 64n - 1n), (e) => isBaton(e, VersionMismatchError, name));
    await assert.rejects(locker.updateOptimistic(name, 'x', Number.MAX_SAFE_INTEGER), (e) => isBaton(e, VersionMismatchError, name));
  });

  test('getAndLock and insertAndLock durations: zero or negative ttl, negative timeout are InvalidOptionError; timeout 0 tries once', async () => {
    const name = fresh('durations');
    for (const [why, options] of [['ttl 0', { ttl: 0 }], ['ttl -1', { ttl: -1 }], ['timeout -1', { timeout: -1 }],
      ['ttl NaN', { ttl: NaN }], ['timeout -Infinity', { timeout: -Infinity }], ['an unknown key', { tll: 5 }], ['a number', 5]]) {
      await assert.rejects(locker.getAndLock(name, /** @type {any} */ (options)), (e) => isBaton(e, InvalidOptionError), `getAndLock ${why}`);
      await assert.rejects(locker.insertAndLock(name, 'x', /** @type {any} */ (options)), (e) => isBaton(e, InvalidOptionError), `insertAndLock ${why}`);
    }
    assert.deepEqual(await locker.locks(), []);
    assert.equal(await locker.get(name), null);
    const once = await locker.getAndLock(name, { timeout: 0 });
    await assert.rejects(new Locker(store).getAndLock(name, { timeout: 0 }), (e) => isBaton(e, TimedOutError, name));
    await once.unlock();
    const made = await locker.insertAndLock(name, 'x', { timeout: 0, ttl: 50n });
    await made.unlock();
    assert.equal((await locker.get(name))?.text, 'x');
  });
});

describe('the README\'s optimistic loop, run as a user writes it', () => {
  test('optimistic-child.mjs runs the README\'s loop as the installed README has it', () => {
    const child = readFileSync(join(here, 'optimistic-child.mjs'), 'utf8');
    const loop = child.split('// README: begin\n')[1]?.split('// README: end')[0];
    assert.ok(loop && loop.includes('async function add('), 'optimistic-child.mjs has the README markers');
    const installed = dirname(createRequire(import.meta.url).resolve('baton-locks/package.json'));
    const readme = readFileSync(join(installed, 'README.md'), 'utf8');
    assert.ok(readme.includes(loop), 'the README\'s `add` differs from optimistic-child.mjs: copy it over');
  });

  for (const target of targetsClosedAfter()) {
    test(`${target.name}: 4 processes x 25 optimistic increments end exact`, { skip: target.skip || (target.name === 'memory' && 'one process only'), timeout: 120_000 }, async () => {
      assert.ok(target.url, `BATON_REQUIRE_SERVICES=${required ? 1 : 0} but ${target.name}'s URL is not set`);
      const name = fresh('readme-loop');
      const runs = Array.from({ length: 4 }, () => start(process.execPath, [join(here, 'optimistic-child.mjs'), target.name, name, '25']));
      const results = await Promise.all(runs.map((run, i) => exitWithin(run, 110_000, `child ${i}`)));
      for (const [i, r] of results.entries()) assert.equal(r.code, 0, `child ${i} (${r.code ?? r.signal}): ${r.stderr}`);
      const attempts = results.map((r) => Number(/** @type {RegExpMatchArray} */ (r.stdout.match(/attempts=(\d+)/))[1]));
      const locker = target.locker();
      const end = /** @type {Versioned} */ (await locker.get(name));
      assert.equal(end.text, '100', `attempts ${show(attempts)}`);
      assert.equal(end.version, 100n);
    });
  }
});
