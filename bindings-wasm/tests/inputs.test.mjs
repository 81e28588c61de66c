// Bad input across the JavaScript boundary: names, options and stores of the wrong type or out
// of range, and stores that cannot be reached. Each must be refused with the documented error
// class and stable code (InvalidNameError 6, InvalidOptionError 7, StoreUnavailableError 8), at
// once for what is checked before any I/O, and within a bounded time for a dead store (the
// object calls too; their other bad input is in objects.test.mjs). Valid names at the limits
// must work on every store.

import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import pg from 'pg';
import cassandra from 'cassandra-driver';
import {
  Locker, MemoryStore, BatonError, InvalidNameError, InvalidOptionError, StoreUnavailableError,
  TimedOutError, AmbiguousError, errorClass,
} from 'baton-locks';
import { postgresStore } from 'baton-locks/postgres';
import { cassandraStore } from 'baton-locks/cassandra';
import { targetsClosedAfter, fresh, entries, within, show } from './support.mjs';

/** A matcher for assert.throws / rejects: an error of `Class`, with its code and kind. */
const is = (/** @type {typeof BatonError} */ Class, /** @type {string} */ what) => (/** @type {any} */ e) => {
  assert.ok(e instanceof Class, `${what}: expected ${Class.name} (code ${Class.code}), got ${e?.constructor?.name} ${e?.code}: ${e?.message}`);
  assert.ok(e instanceof BatonError && e instanceof Error);
  assert.equal(e.code, Class.code, what);
  assert.equal(e.kind, Class.kind, what);
  assert.equal(errorClass(e.code), Class);
  assert.equal(typeof e.message, 'string');
  assert.ok(e.message.length > 0);
  return true;
};

const MiB = 1 << 20;
/** Not names, each with why. */
const BAD_NAMES = [
  ['a number', 42], ['undefined', undefined], ['null', null], ['an object', { name: 'x' }], ['an array', ['x']],
  ['a symbol', Symbol('x')], ['a bigint', 1n], ['a String object', new String('x')],
  ['empty', ''], ['256 ASCII bytes', 'x'.repeat(256)], ['1 MiB', 'x'.repeat(MiB)],
  ['256 UTF-8 bytes in 128 characters', 'é'.repeat(128)], ['a NUL', 'a\0b'], ['only a NUL', '\0'],
  ['a lone high surrogate', 'a\uD800'], ['a lone low surrogate', '\uDC00b'], ['reversed surrogates', '\uDC00\uD800'],
];

/** Options a Locker must refuse, with the key they get wrong. */
const BAD_LOCKER_OPTIONS = [
  [{ ttl: -1 }, 'negative ttl'], [{ ttl: NaN }, 'NaN ttl'], [{ ttl: 0 }, 'zero ttl'], [{ ttl: 5 }, 'ttl under 10 ms'],
  [{ ttl: Infinity }, 'infinite ttl'], [{ ttl: '1000' }, 'ttl as a string'], [{ ttl: -1n }, 'negative bigint ttl'],
  [{ timeout: -1 }, 'negative timeout'], [{ timeout: NaN }, 'NaN timeout'], [{ timeout: '5s' }, 'timeout as a string'],
  [{ timeout: -Infinity }, '-Infinity timeout'],
  [{ strategy: 'nope' }, 'unknown strategy'], [{ strategy: 1 }, 'strategy as a number'],
  [{ consistency: 'sometimes' }, 'unknown consistency'], [{ strategy: 'bakery', consistency: 'one' }, 'bakery at ONE'],
  [{ strategy: 'column-prefix', consistency: 'one' }, 'column prefix at ONE'],
  [{ keepAlive: 'yes' }, 'keepAlive as a string'], [{ host: 5 }, 'host as a number'],
  [{ commandTimeout: 0 }, 'zero commandTimeout'], [{ commandTimeout: -5 }, 'negative commandTimeout'],
  [{ tll: 1000 }, 'an unknown key'], [{ signal: AbortSignal.abort() }, 'signal (a lock() option only)'],
  [5, 'a number'], ['fast', 'a string'], [[], 'an array'],
];

/** Options lock() and tryLock() must refuse. */
const BAD_LOCK_OPTIONS = [
  [{ ttl: -1 }, 'negative ttl'], [{ ttl: NaN }, 'NaN ttl'], [{ ttl: 0 }, 'zero ttl'], [{ ttl: Infinity }, 'infinite ttl'],
  [{ ttl: {} }, 'ttl as an object'], [{ timeout: -1 }, 'negative timeout'], [{ timeout: NaN }, 'NaN timeout'],
  [{ timeout: null }, 'null timeout'], [{ strategy: 'bakery' }, 'a Locker option'], [{ tll: 1 }, 'an unknown key'],
  [{ signal: 5 }, 'signal as a number'], [{ signal: { aborted: false } }, 'a fake signal'], [{ signal: null }, 'null signal'],
  [7, 'a number'], ['x', 'a string'], [[], 'an array'], [true, 'a boolean'],
];

describe('refused before any I/O (memory)', () => {
  const store = new MemoryStore();
  const locker = new Locker(store);

  test('names: lock, tryLock, withLock, purge and forceRelease reject InvalidNameError (6)', async () => {
    let called = false;
    for (const [why, name] of BAD_NAMES) {
      await assert.rejects(locker.lock(/** @type {any} */ (name)), is(InvalidNameError, `lock(${why})`));
      await assert.rejects(locker.tryLock(/** @type {any} */ (name)), is(InvalidNameError, `tryLock(${why})`));
      await assert.rejects(locker.withLock(/** @type {any} */ (name), () => { called = true; }), is(InvalidNameError, `withLock(${why})`));
      await assert.rejects(locker.forceRelease(/** @type {any} */ (name)), is(InvalidNameError, `forceRelease(${why})`));
      // purge() without a name (undefined, null) purges every lock.
      if (name !== undefined && name !== null) {
        await assert.rejects(locker.purge(/** @type {any} */ (name)), is(InvalidNameError, `purge(${why})`));
      }
    }
    assert.equal(called, false, 'withLock ran its callback for a bad name');
    assert.deepEqual(await locker.locks(), [], 'a refused name left an entry');
  });

  test('a 1 MiB name is refused at once', async () => {
    const started = performance.now();
    for (let i = 0; i < 20; i++) await assert.rejects(locker.lock('y'.repeat(MiB)), is(InvalidNameError, '1 MiB'));
    assert.ok(performance.now() - started < 2_000, `20 refusals took ${(performance.now() - started).toFixed(0)} ms`);
  });

  test('Locker options: InvalidOptionError (7), thrown by the constructor', () => {
    for (const [options, why] of BAD_LOCKER_OPTIONS) {
      assert.throws(() => new Locker(store, /** @type {any} */ (options)), is(InvalidOptionError, `new Locker(store, ${why})`));
    }
    // What is accepted: no options, null, Infinity timeout, bigint durations, fractions.
    for (const options of [undefined, null, {}, { timeout: Infinity }, { ttl: 1500n, timeout: 0 }, { ttl: 10.5 },
      { strategy: 'bakery', consistency: 'quorum' }, { keepAlive: false, host: 'web-1', commandTimeout: 1 }]) {
      assert.ok(new Locker(store, /** @type {any} */ (options)), show(options));
    }
  });

  test('lock() and tryLock() options: InvalidOptionError (7)', async () => {
    const name = fresh('opts');
    for (const [options, why] of BAD_LOCK_OPTIONS) {
      await assert.rejects(locker.lock(name, /** @type {any} */ (options)), is(InvalidOptionError, `lock(name, ${why})`));
      await assert.rejects(locker.tryLock(name, /** @type {any} */ (options)), is(InvalidOptionError, `tryLock(name, ${why})`));
      await assert.rejects(locker.withLock(name, () => {}, /** @type {any} */ (options)), is(InvalidOptionError, `withLock(name, f, ${why})`));
    }
    for (const callback of [undefined, null, 'f', {}, 1]) {
      await assert.rejects(locker.withLock(name, /** @type {any} */ (callback)), is(InvalidOptionError, `withLock(name, ${show(callback)})`));
    }
    assert.deepEqual(await locker.locks(), [], 'a refused call left an entry');
    const lock = await locker.lock(name, { ttl: 20n, timeout: Infinity });
    await lock.release();
  });

  test('stores: anything but a MemoryStore or an adapter is InvalidOptionError (7)', () => {
    for (const [store, why] of [[undefined, 'undefined'], [null, 'null'], [5, 'a number'], ['memory', 'a string'],
      [{}, 'an object without kind'], [{ kind: 'nosql' }, 'an unknown kind'], [MemoryStore, 'the MemoryStore class'],
      [{ kind: 'sql', dialect: 'oracle', query() {}, transaction() {} }, 'an unknown SQL dialect'],
      [{ kind: 'sql' }, 'a SQL adapter without a dialect']]) {
      assert.throws(() => new Locker(/** @type {any} */ (store)), is(InvalidOptionError, `new Locker(${why})`));
    }
  });

  test('adapters without their methods are InvalidOptionError (7), not an unavailable store', async () => {
    for (const [adapter, why] of [[{ kind: 'cql' }, 'a CQL adapter without execute()'],
      [{ kind: 'sql', dialect: 'postgres' }, 'a SQL adapter without query()'],
      [{ kind: 'sql', dialect: 'postgres', query: 1, transaction: 2 }, 'a SQL adapter whose query is not a function']]) {
      /** @type {unknown} */
      let outcome;
      try {
        outcome = await new Locker(/** @type {any} */ (adapter)).lock(fresh('adapter'));
      } catch (e) {
        outcome = e;
      }
      is(InvalidOptionError, why)(outcome);
    }
  });

  test('postgresStore and cassandraStore refuse what is not a client with a BatonError', () => {
    for (const bad of [null, undefined, {}, 'postgres://x']) {
      assert.throws(() => postgresStore(/** @type {any} */ (bad)), is(InvalidOptionError, `postgresStore(${show(bad)})`));
      assert.throws(() => cassandraStore(/** @type {any} */ (bad)), is(InvalidOptionError, `cassandraStore(${show(bad)})`));
    }
    const pool = new pg.Pool();
    assert.throws(() => postgresStore(pool, /** @type {any} */ ({ tabel: 'x' })), is(InvalidOptionError, 'postgresStore unknown option'));
    // A table layout: checked by the Rust core when the locker is made.
    assert.throws(() => new Locker(postgresStore(pool, /** @type {any} */ ({ layout: 'diagonal' }))), is(InvalidOptionError, 'layout diagonal'));
    // Both layouts exist on every database, SQLite included.
    for (const layout of ['one-row', 'two-rows']) {
      const sqlite = { ...postgresStore(pool), dialect: 'sqlite', layout };
      assert.doesNotThrow(() => new Locker(/** @type {any} */ (sqlite)), `${layout} on SQLite`);
    }
  });
});

describe('the table layout a PostgreSQL store creates', () => {
  const url = process.env.BATON_POSTGRES_URL;
  for (const [layout, counterRows] of [[undefined, 0], ['one-row', 0], ['two-rows', 1]]) {
    test(`${layout ?? 'default (one-row)'}: the fencing counter ${counterRows ? 'in a row of its own' : "in the lock's row"}`, { skip: !url && 'BATON_POSTGRES_URL is not set' }, async () => {
      const pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 5_000 });
      const table = `js_layout_${process.pid}_${counterRows}`;
      try {
        await pool.query(`DROP TABLE IF EXISTS ${table}`);
        const locker = new Locker(postgresStore(pool, layout ? { table, layout: /** @type {any} */ (layout) } : { table }));
        for (let i = 0; i < 2; i += 1) {
          const lock = await locker.lock('job');
          assert.equal(lock.token, BigInt(i + 1));
          await lock.release();
        }
        const counters = await pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE cell = '_LOCK_'`);
        assert.equal(counters.rows[0].n, counterRows);
        const columns = await pool.query(`SELECT count(*)::int AS n FROM information_schema.columns WHERE table_name = $1 AND column_name = 'fence'`, [table]);
        assert.equal(columns.rows[0].n, 1 - counterRows);
      } finally {
        await pool.query(`DROP TABLE IF EXISTS ${table}`);
        await pool.end();
      }
    });
  }
});

describe('valid names at the limits work on every store', () => {
  for (const target of targetsClosedAfter()) {
    test(target.name, { skip: target.skip }, async () => {
      const [a, b] = [target.locker(), target.locker()];
      const unique = fresh('edge').slice(0, 44);
      const names = [
        `${unique}${'x'.repeat(255 - unique.length)}`, // 255 ASCII bytes
        `${unique}${'é'.repeat((255 - unique.length) >> 1)}${'!'.repeat((255 - unique.length) & 1)}`, // 255 bytes, mostly two-byte characters
        `${unique} 🔒 ${'日本'} "quotes" 'and' \\ ; DROP TABLE baton_locks; --`,
        `${unique}\u{10FFFF}\t\n`,
      ];
      for (const name of names) {
        const lock = await a.tryLock(name);
        assert.ok(lock, `not granted: ${show(name)}`);
        assert.equal(lock.name, name);
        assert.equal(await b.tryLock(name), null, `not exclusive: ${show(name)}`);
        assert.deepEqual((await entries(b, name)).map((e) => e.owner), [lock.owner], `not listed under its exact name: ${show(name)}`);
        await lock.release();
        assert.deepEqual(await entries(b, name), []);
      }
      assert.equal(new TextEncoder().encode(names[0]).length, 255);
      assert.equal(new TextEncoder().encode(names[1]).length, 255);
    });
  }
});

describe('dead stores reject StoreUnavailableError (8) within a bounded time', () => {
  /** A TCP server that accepts connections and never answers (a hung database). */
  const sockets = new Set();
  const silent = net.createServer((s) => { sockets.add(s); s.on('error', () => {}); });
  /** @type {Promise<number>} */
  const silentPort = new Promise((resolve) => {
    silent.listen(0, '127.0.0.1', () => resolve(/** @type {net.AddressInfo} */ (silent.address()).port));
  });
  after(() => { for (const s of sockets) s.destroy(); silent.close(); });

  /** @type {(() => Promise<unknown>)[]} */
  const closers = [];
  after(async () => { for (const close of closers) await close(); });

  const dead = {
    /** PostgreSQL on a port nothing listens on. */
    'pg, connection refused': async () => {
      const pool = new pg.Pool({ connectionString: 'postgres://baton:baton@127.0.0.1:1/baton' });
      closers.push(() => pool.end());
      return { adapter: postgresStore(pool), where: '127.0.0.1:1' };
    },
    'cassandra-driver, connection refused': async () => {
      const client = new cassandra.Client({ contactPoints: ['127.0.0.1:1'], localDataCenter: 'datacenter1' });
      closers.push(() => client.shutdown());
      return { adapter: cassandraStore(client, { keyspace: 'baton_test' }), where: '127.0.0.1:1' };
    },
    /** A server that accepts and never answers: only commandTimeout ends each call. */
    'pg, no answer': async () => {
      const port = await silentPort;
      const pool = new pg.Pool({ connectionString: `postgres://baton:baton@127.0.0.1:${port}/baton` });
      closers.push(() => pool.end());
      return { adapter: postgresStore(pool), where: `127.0.0.1:${port}`, commandTimeout: 300 };
    },
    'cassandra-driver, no answer': async () => {
      const port = await silentPort;
      const client = new cassandra.Client({ contactPoints: [`127.0.0.1:${port}`], localDataCenter: 'datacenter1' });
      closers.push(() => client.shutdown());
      return { adapter: cassandraStore(client, { keyspace: 'baton_test' }), where: `127.0.0.1:${port}`, commandTimeout: 300 };
    },
  };

  for (const [what, make] of Object.entries(dead)) {
    test(what, { timeout: 60_000 }, async (t) => {
      const { adapter, where, commandTimeout } = await make();
      const locker = new Locker(adapter, { consistency: 'quorum', ...(commandTimeout ? { commandTimeout } : {}) });
      const name = fresh('dead');
      let called = false;
      const calls = {
        lock: () => locker.lock(name, { timeout: 2_000 }),
        tryLock: () => locker.tryLock(name),
        withLock: () => locker.withLock(name, () => { called = true; }),
        locks: () => locker.locks(),
        purge: () => locker.purge(),
        forceRelease: () => locker.forceRelease(name),
        // Objects (seed 002): unlocked, then locked.
        get: () => locker.get(name),
        insert: () => locker.insert(name, 'value'),
        updateOptimistic: () => locker.updateOptimistic(name, 'value', 1n),
        remove: () => locker.remove(name),
        getAndLock: () => locker.getAndLock(name, { timeout: 2_000 }),
        insertAndLock: () => locker.insertAndLock(name, 'value', { timeout: 2_000 }),
      };
      const named = ['lock', 'tryLock', 'withLock', 'get', 'insert', 'updateOptimistic', 'remove', 'getAndLock', 'insertAndLock'];
      // A write in one step (unique insert's insert and optimistic update) may instead be
      // AmbiguousError, where the kernel cannot rule out that a send reached the store (as in
      // the other bindings' tests): a typed error either way.
      const oneStepWrites = ['insert', 'updateOptimistic'];
      const took = [];
      for (const [call, run] of Object.entries(calls)) {
        const started = performance.now();
        await within(assert.rejects(run(), (/** @type {any} */ e) => {
          is(oneStepWrites.includes(call) && e instanceof AmbiguousError ? AmbiguousError : StoreUnavailableError, `${what}: ${call}`)(e);
          assert.ok(String(e.store).includes(where), `the error names the store: ${e.store}`);
          // (forceRelease's error does not name the lock: see the test after this one.)
          if (named.includes(call)) assert.equal(e.lock, name, `${call}: the error names the lock`);
          return true;
        }), 15_000, `${what}: ${call} rejects`);
        took.push(`${call} ${(performance.now() - started).toFixed(0)} ms`);
      }
      assert.equal(called, false, 'withLock ran its callback without the lock');
      t.diagnostic(`${what}: ${took.join(', ')}`);
    });
  }

  test('forceRelease\'s error names the lock', async () => {
    const { adapter } = await dead['pg, connection refused']();
    const name = fresh('dead');
    await assert.rejects(new Locker(adapter).forceRelease(name), (/** @type {any} */ e) => {
      is(StoreUnavailableError, 'forceRelease')(e);
      assert.equal(e.lock, name);
      return true;
    });
  });
});
