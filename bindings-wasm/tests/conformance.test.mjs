// The Rust conformance suite's behaviours (tests/src/conformance), observed through the
// JavaScript API: for each store (memory, SQLite through sql.js in both table layouts,
// PostgreSQL through pg, Cassandra through cassandra-driver) and each strategy. Clients are separate Lockers, each with its own
// adapter (and on PostgreSQL its own pool), on one table, as separate processes would be.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import cassandra from 'cassandra-driver';
import initSqlJs from 'sql.js';
import {
  Locker, MemoryStore, BusyError, TimedOutError, NotOwnerError, LostError,
} from 'baton-locks';
import { postgresStore } from 'baton-locks/postgres';
import { cassandraStore } from 'baton-locks/cassandra';

const STRATEGIES = ['unique-insert', 'bakery', 'column-prefix'];
const required = process.env.BATON_REQUIRE_SERVICES === '1';
const closers = [];
after(async () => { for (const close of closers) await close(); });

/** A store under test: `client(options)` makes a Locker that shares only the table. */
function memoryTarget() {
  const store = new MemoryStore();
  return { name: 'memory', keepsExpired: true, client: (options) => new Locker(store, options) };
}

/**
 * A SQL adapter over one sql.js database (SQLite compiled to WebAssembly, in this process's
 * memory): what a user's SQLite adapter does, positional `?`s bound in order. sql.js runs each
 * call to the end synchronously, so a transaction's statements run with nothing between them.
 * @param {any} db a sql.js Database
 * @param {'one-row' | 'two-rows'} layout
 */
function sqliteAdapter(db, layout) {
  /** @param {string} sql @param {unknown[]} params */
  const run = (sql, params) => {
    const statement = db.prepare(sql);
    try {
      statement.bind(params.map((p) => (typeof p === 'bigint' ? Number(p) : p)));
      const rows = [];
      while (statement.step()) rows.push(statement.get());
      return { rows, rowCount: db.getRowsModified() };
    } finally {
      statement.free();
    }
  };
  /** sql.js throws plain errors: each is the database's (SQLITE_ERROR, 1). */
  const fromDatabase = (/** @type {any} */ e) => Object.assign(e, { batonCause: 'database', code: '1' });
  return {
    kind: 'sql',
    dialect: 'sqlite',
    layout,
    description: `sql.js (${layout})`,
    async query(/** @type {string} */ sql, /** @type {unknown[]} */ params) {
      try {
        return run(sql, params);
      } catch (e) {
        throw fromDatabase(e);
      }
    },
    async transaction(/** @type {{ sql: string, params: unknown[] }[]} */ statements) {
      db.run('BEGIN IMMEDIATE');
      try {
        for (const { sql, params } of statements) run(sql, params);
        db.run('COMMIT');
      } catch (e) {
        db.run('ROLLBACK');
        throw fromDatabase(e);
      }
    },
  };
}

/** @param {'one-row' | 'two-rows'} layout */
async function sqliteTarget(layout) {
  const SQL = await initSqlJs();
  const db = new SQL.Database();
  closers.push(async () => db.close());
  return {
    name: `sqlite (${layout})`,
    keepsExpired: true,
    client: (/** @type {any} */ options) => new Locker(/** @type {any} */ (sqliteAdapter(db, layout)), options),
  };
}

function postgresTarget(url) {
  return {
    name: 'postgres',
    keepsExpired: true,
    client: (options) => {
      const pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 5_000 });
      closers.push(() => pool.end());
      return new Locker(postgresStore(pool), options);
    },
  };
}

function cassandraTarget(url) {
  const parsed = new URL(url);
  const keyspace = parsed.pathname.slice(1) || 'baton';
  const client = new cassandra.Client({ contactPoints: parsed.hostname.split(','), localDataCenter: 'datacenter1' });
  closers.push(() => client.shutdown());
  return {
    name: 'cassandra',
    keepsExpired: false,
    client: (options) => new Locker(cassandraStore(client, { keyspace }), { consistency: 'quorum', ...options }),
  };
}

const targets = [
  { make: memoryTarget, url: 'memory' },
  { make: () => sqliteTarget('one-row'), url: 'sqlite' },
  { make: () => sqliteTarget('two-rows'), url: 'sqlite' },
  { make: postgresTarget, url: process.env.BATON_POSTGRES_URL, what: 'BATON_POSTGRES_URL' },
  { make: cassandraTarget, url: process.env.BATON_CASSANDRA_URL, what: 'BATON_CASSANDRA_URL' },
];

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `condition` until it holds, failing after `limit` ms. */
async function until(limit, what, condition) {
  const deadline = performance.now() + limit;
  for (;;) {
    if (await condition()) return;
    assert.ok(performance.now() < deadline, `${what}: not within ${limit} ms`);
    await sleep(20);
  }
}

/** Entries of `name` in the table, as operators see them. */
async function entries(locker, name) {
  return (await locker.locks()).filter((info) => info.name === name);
}

const behaviours = {
  async 'acquire and release'(t, strategy, id) {
    const a = t.client({ strategy });
    const name = `${id}-job`;
    const first = await a.lock(name);
    assert.ok(first.held && first.token > 0n && first.remaining > 0);
    const listed = await entries(a, name);
    assert.ok(listed.some((e) => e.owner === first.owner && e.state === 'held'), JSON.stringify(listed, (_, v) => (typeof v === 'bigint' ? String(v) : v)));
    await first.release();
    assert.equal(first.held, false);
    const again = await a.lock(name);
    assert.ok(again.token > first.token, `${again.token} after ${first.token}`);
    await again.release();
    await assert.rejects(again.release(), NotOwnerError);
    assert.deepEqual(await entries(a, name), []);
  },

  async 'try-lock is busy while held'(t, strategy, id) {
    const [a, b] = [t.client({ strategy }), t.client({ strategy })];
    const name = `${id}-busy`;
    const held = await a.lock(name);
    assert.equal(await b.tryLock(name), null);
    const left = await entries(a, name);
    assert.equal(left.length, 1, 'the failed attempt left an entry behind');
    await held.release();
  },

  async 'a wait times out'(t, strategy, id) {
    const [a, b] = [t.client({ strategy }), t.client({ strategy })];
    const name = `${id}-timeout`;
    const held = await a.lock(name);
    const started = performance.now();
    await assert.rejects(b.lock(name, { timeout: 300 }), TimedOutError);
    assert.ok(performance.now() - started >= 295, 'timed out before the timeout');
    await held.release();
  },

  async 'a release hands over to exactly one waiter'(t, strategy, id) {
    const [a, b, c] = [t.client({ strategy }), t.client({ strategy }), t.client({ strategy })];
    const name = `${id}-handoff`;
    const held = await a.lock(name);
    let inside = 0;
    const waiter = async (locker) => {
      const lock = await locker.lock(name, { timeout: 20_000 });
      inside += 1;
      assert.equal(inside, 1, 'two waiters inside at once');
      await sleep(10);
      inside -= 1;
      await lock.release();
      return lock.token;
    };
    const waiting = [waiter(b), waiter(c)];
    // Hold on a little so both waiters have made their first attempt and wait; the assertions
    // below hold however the release and the attempts interleave.
    await sleep(50);
    await held.release();
    const tokens = await Promise.all(waiting);
    assert.ok(tokens.every((token) => token > held.token));
    assert.notEqual(tokens[0], tokens[1]);
  },

  async 'an expired lock is taken over, and its holder knows'(t, strategy, id) {
    const ttl = 800;
    const [a, b] = [t.client({ strategy, keepAlive: false }), t.client({ strategy })];
    const name = `${id}-expiry`;
    const sent = performance.now();
    const old = await a.lock(name, { ttl });
    assert.equal(await b.tryLock(name), null, 'taken over before its TTL');
    const taken = await b.lock(name, { timeout: 20_000 });
    assert.ok(performance.now() - sent >= ttl, 'taken over before the TTL passed');
    assert.ok(taken.token > old.token);
    assert.equal(old.held, false);
    assert.throws(() => old.check(), LostError);
    assert.ok(old.signal.aborted || !old.held);
    await taken.release();
  },

  async 'renewal extends the lease'(t, strategy, id) {
    // Renewed at each third of it: 1.3 s to spare for a paused process (seen at 0.4 s).
    const ttl = 2_000;
    const [a, b] = [t.client({ strategy }), t.client({ strategy })];
    const name = `${id}-renew`;
    const held = await a.lock(name, { ttl });
    await sleep(ttl * 1.5);
    assert.ok(held.held, 'the lease was not kept alive');
    assert.equal(held.signal.aborted, false);
    assert.equal(await b.tryLock(name), null, 'someone else got a renewed lock');
    await held.release();
  },

  async 'an expired holder cannot release the new holder\'s lock'(t, strategy, id) {
    const ttl = 800;
    const [a, b] = [t.client({ strategy, keepAlive: false }), t.client({ strategy })];
    const name = `${id}-stale`;
    const old = await a.lock(name, { ttl });
    const taken = await b.lock(name, { timeout: 20_000 });
    await assert.rejects(old.release(), LostError);
    assert.ok(taken.held);
    assert.equal(await a.tryLock(name), null, 'the stale release freed the new holder\'s lock');
    await taken.release();
  },

  async 'fencing tokens increase across handoffs'(t, strategy, id) {
    const name = `${id}-fence`;
    let inside = false;
    const tokens = [];
    await Promise.all([0, 1, 2].map(async () => {
      const locker = t.client({ strategy });
      for (let round = 0; round < 4; round++) {
        const lock = await locker.lock(name, { timeout: 60_000 });
        assert.equal(inside, false, 'entered while another client was inside');
        inside = true;
        if (tokens.length > 0) assert.ok(lock.token > tokens.at(-1), `${lock.token} after ${tokens.at(-1)}`);
        tokens.push(lock.token);
        await sleep(1);
        assert.ok(lock.held);
        inside = false;
        await lock.release();
      }
    }));
    assert.equal(tokens.length, 12);
  },

  async 'purge removes expired entries only'(t, strategy, id) {
    const ttl = 600;
    const [a, b] = [t.client({ strategy, keepAlive: false }), t.client({ strategy })];
    const [expiredName, liveName] = [`${id}-expired`, `${id}-live`];
    const sent = performance.now();
    const expired = await a.lock(expiredName, { ttl });
    const live = await b.lock(liveName);
    await sleep(Math.max(0, ttl - (performance.now() - sent)));
    const removed = [];
    await until(30_000, 'purge removes the expired entry', async () => {
      // By name: the other strategies' checks share the table, and a purge of every lock
      // would take their expired entries from under them.
      assert.deepEqual(await b.purge(liveName), [], 'purge removed a live lock');
      removed.push(...(await b.purge(expiredName)));
      const gone = (await entries(b, expiredName)).length === 0;
      assert.ok(removed.every((r) => r.name === expiredName), JSON.stringify(removed));
      return gone && (!t.keepsExpired || removed.some((r) => r.name === expiredName));
    });
    assert.ok(live.held);
    assert.equal((await entries(b, liveName)).length, 1);
    const next = await a.lock(expiredName);
    assert.ok(next.token > expired.token, 'the fencing counter went back after purge');
    await next.release();
    await live.release();
  },

  async 'locks() shows the holders'(t, strategy, id) {
    const [a, b, viewer] = [t.client({ strategy, ttl: 30_000 }), t.client({ strategy, ttl: 30_000 }), t.client({ strategy })];
    const [alpha, beta] = [await a.lock(`${id}-alpha`), await b.lock(`${id}-beta`)];
    const listed = (await viewer.locks()).filter((e) => e.name.startsWith(id)).sort((x, y) => x.name.localeCompare(y.name));
    assert.deepEqual(listed.map((e) => [e.name, e.strategy, e.owner, e.token, e.state]), [
      [`${id}-alpha`, strategy, alpha.owner, alpha.token, 'held'],
      [`${id}-beta`, strategy, beta.owner, beta.token, 'held'],
    ]);
    assert.ok(listed.every((e) => e.expiresIn > 25_000 && e.expiresIn <= 32_000), 'remaining TTL');
    await alpha.release();
    await beta.release();
    assert.deepEqual((await viewer.locks()).filter((e) => e.name.startsWith(id)), []);
  },
};

for (const target of targets) {
  const skip = !target.url && !required && `${target.what} is not set`;
  const t = target.url ? await target.make(target.url) : null;
  for (const [behaviour, check] of Object.entries(behaviours)) {
    test(`${t?.name ?? target.what}: ${behaviour}`, { skip, timeout: 120_000 }, async () => {
      assert.ok(t, `BATON_REQUIRE_SERVICES=1 but ${target.what} is not set`);
      // Every strategy at once, each on names of its own; every failure is reported.
      const results = await Promise.allSettled(STRATEGIES.map((strategy) => check(t, strategy, `conf-${strategy}-${randomUUID().slice(0, 8)}`)));
      const failed = results.map((r, i) => (r.status === 'rejected' ? `${STRATEGIES[i]}: ${r.reason?.stack ?? r.reason}` : null)).filter(Boolean);
      assert.deepEqual(failed, []);
    });
  }
}

test('sqlite: a one-row table keeps the counter in the lock row, a two-row table in a row of its own', async () => {
  const SQL = await initSqlJs();
  for (const [layout, cells] of /** @type {const} */ ([['one-row', ['layout', 'lock']], ['two-rows', ['_LOCK_']]])) {
    const db = new SQL.Database();
    const locker = new Locker(/** @type {any} */ (sqliteAdapter(db, layout)));
    const first = await locker.lock('job');
    await first.release();
    const second = await locker.lock('job');
    assert.ok(second.token > first.token, `${layout}: ${second.token} after ${first.token}`);
    await second.release();
    const rows = db.exec('SELECT cell FROM baton_locks ORDER BY lock_name, cell')[0]?.values ?? [];
    assert.deepEqual(rows.map((r) => r[0]), cells, `${layout}: the table's rows after two releases`);
    db.close();
  }
});
