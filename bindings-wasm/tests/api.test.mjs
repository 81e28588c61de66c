// The package's API, behaviour by behaviour, on every store (memory; PostgreSQL through pg;
// Cassandra through cassandra-driver at quorum) and every strategy. Each client is a Locker of
// its own (on PostgreSQL with a pool of its own), sharing only the table, as separate processes
// would. An aborted wait must leave nothing behind on any store or strategy.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Locker, Lock, BatonError, TimedOutError, LostError, NotOwnerError, CancelledError, errorClass,
} from 'baton-locks';
import {
  STRATEGIES, targetsClosedAfter, fresh, until, within, pause, entries, aborted, show, asyncDispose,
  postgresLayout,
} from './support.mjs';


const OWNER = /^[A-Za-z0-9._-]+:\d+:[0-9a-f]+$/;

/** Asserts `e` is a BatonError of `Class`, with its code and kind, about lock `name`. */
function isBaton(e, Class, name) {
  assert.ok(e instanceof Class, `expected ${Class.name}, got ${e?.constructor?.name}: ${e?.message}`);
  assert.ok(e instanceof BatonError);
  assert.equal(e.code, Class.code);
  assert.equal(e.kind, Class.kind);
  assert.equal(errorClass(e.code), Class);
  if (name !== undefined) assert.equal(e.lock, name, `the error names the lock: ${e.message}`);
  return true;
}

/**
 * An adapter whose first write (a statement or batch whose `access` is `'write'`, whatever its
 * text, layout or database) is held back until `held.release()`; `answeredAfter` resolves when
 * a command sent after it has been answered.
 * @param {any} adapter
 */
function delaying(adapter) {
  const method = adapter.kind === 'sql' ? 'query' : 'execute';
  const real = adapter[method];
  // Unique insert's claim is a conditional batch on Cassandra: held back like a statement.
  const realBatch = adapter.kind === 'cql' ? adapter.batch : undefined;
  /** @type {{ text: string, statement: string, sent: number, answered?: number }[]} */
  const log = [];
  const t0 = performance.now();
  /** @type {{ release: () => void, landed: Promise<unknown> } | undefined} */
  let held;
  let answered = () => {};
  const answeredAfter = new Promise((resolve) => { answered = resolve; });
  const gate = {
    adapter: {
      ...adapter,
      async [method](/** @type {string} */ text, /** @type {unknown[]} */ values, /** @type {{ statement: string, access: string }} */ about) {
        const rest = [values, about];
        const entry = { text: text.replace(/\s+/g, ' ').slice(0, 60), statement: about.statement, sent: Math.round(performance.now() - t0) };
        log.push(entry);
        const note = (/** @type {unknown} */ r) => { entry.answered = Math.round(performance.now() - t0); return r; };
        if (!held && about.access === 'write') {
          /** @type {() => void} */
          let release = () => {};
          const opened = new Promise((resolve) => { release = () => resolve(undefined); });
          const landed = opened.then(() => real(text, ...rest)).then(note);
          held = { release, landed };
          gate.held = held;
          return landed;
        }
        const after = held !== undefined;
        const result = await real(text, ...rest);
        note(result);
        if (after) answered();
        return result;
      },
      ...(realBatch && {
        /** @param {{ query: string, params: unknown[], statement: string }[]} statements @param {{ access: string }} options */
        async batch(statements, options) {
          const entry = { text: `BATCH ${statements[0]?.query.replace(/\s+/g, ' ').slice(0, 50)}`, statement: `batch: ${statements.map((s) => s.statement).join(', ')}`, sent: Math.round(performance.now() - t0) };
          log.push(entry);
          const note = (/** @type {unknown} */ r) => { entry.answered = Math.round(performance.now() - t0); return r; };
          if (!held && options.access === 'write') {
            /** @type {() => void} */
            let release = () => {};
            const opened = new Promise((resolve) => { release = () => resolve(undefined); });
            const landed = opened.then(() => realBatch.call(adapter, statements, options)).then(note);
            held = { release, landed };
            gate.held = held;
            return landed;
          }
          const result = await realBatch.call(adapter, statements, options);
          note(result);
          answered();
          return result;
        },
      }),
    },
    /** @type {typeof held} */
    held: undefined,
    answeredAfter,
    log,
  };
  return gate;
}

// PostgreSQL twice: the default table (made by this run, so of the layout new tables get),
// and a table of the two-row layout made for this file.
/**
 * An adapter that records the `{ statement, access }` of everything it is given into `seen`:
 * each statement, each statement of a transaction or batch, and each batch as a whole.
 * @param {any} adapter
 * @param {{ method: string, statement: string, access: string }[]} seen
 */
function recording(adapter, seen) {
  const wrapped = { ...adapter };
  const item = (/** @type {string} */ method, /** @type {any} */ s) => seen.push({ method, statement: s.statement, access: s.access });
  if (adapter.kind === 'sql') {
    wrapped.query = (/** @type {string} */ sql, /** @type {unknown[]} */ params, /** @type {any} */ about) => {
      item('query', about);
      return adapter.query(sql, params, about);
    };
    wrapped.transaction = (/** @type {any[]} */ statements) => {
      for (const s of statements) item('transaction', s);
      return adapter.transaction(statements);
    };
  } else {
    wrapped.execute = (/** @type {string} */ cql, /** @type {unknown[]} */ values, /** @type {any} */ options) => {
      item('execute', options);
      return adapter.execute(cql, values, options);
    };
    wrapped.batch = (/** @type {any[]} */ statements, /** @type {any} */ options) => {
      for (const s of statements) item('batch item', s);
      seen.push({ method: 'batch', statement: 'batch', access: options.access });
      return adapter.batch(statements, options);
    };
  }
  return wrapped;
}

for (const target of targetsClosedAfter({ layouts: true })) {
  // The strategies one after the other, each one's tests at once.
  describe(target.name, { skip: target.skip }, () => {
    if (target.name.startsWith('postgres')) {
      const expected = target.name === 'postgres' ? 'one-row' : 'two-rows';
      test(`the table is of the ${expected} layout, so that the tests below are about it`, async () => {
        const locker = target.locker();
        await (await locker.lock(fresh('layout'))).release(); // creates the table if missing
        assert.equal(await postgresLayout(target), expected,
          'a database kept from an earlier version has a table of another layout: the test command gives each run a fresh database');
      });
    }

    for (const strategy of STRATEGIES) {
      const client = (/** @type {object} */ options = {}) => target.locker({ strategy, ...options });

      describe(strategy, { concurrency: true, timeout: 60_000 }, () => {
        test('lock: a held Lock with a token, an owner and a lease; release ends it', async () => {
          const [a, viewer] = [client(), client()];
          const name = fresh('basic');
          const lock = await a.lock(name, { ttl: 20_000 });
          assert.ok(lock instanceof Lock);
          assert.equal(lock.name, name);
          assert.equal(typeof lock.token, 'bigint');
          assert.ok(lock.token > 0n);
          assert.match(lock.owner, OWNER);
          assert.ok(lock.owner.includes(`:${process.pid}:`), `the owner names this process: ${lock.owner}`);
          assert.equal(lock.held, true);
          assert.ok(lock.remaining > 15_000 && lock.remaining <= 20_000, `remaining ${lock.remaining}`);
          assert.ok(lock.signal instanceof AbortSignal);
          assert.equal(lock.signal.aborted, false);
          lock.check();
          assert.deepEqual((await entries(viewer, name)).map((e) => [e.owner, e.state]), [[lock.owner, 'held']]);

          await lock.release();
          assert.equal(lock.held, false);
          assert.equal(lock.remaining, 0);
          assert.equal(lock.signal.aborted, false, 'a release is not a loss');
          assert.throws(() => lock.check(), (e) => isBaton(e, NotOwnerError));
          assert.deepEqual(await entries(viewer, name), []);
          // A second release.
          await assert.rejects(lock.release(), (e) => isBaton(e, NotOwnerError));
          await assert.rejects(lock.release(), (e) => isBaton(e, NotOwnerError));
        });

        test('tryLock: null while someone holds it (leaving nothing), the Lock when free', async () => {
          const [a, b] = [client(), client()];
          const name = fresh('try');
          const held = await a.lock(name);
          assert.equal(await b.tryLock(name), null);
          assert.equal(await b.tryLock(name, { ttl: 5_000 }), null);
          assert.deepEqual((await entries(b, name)).map((e) => e.owner), [held.owner], 'the failed attempts left entries');
          await held.release();
          const got = await b.tryLock(name);
          assert.ok(got instanceof Lock && got.held);
          assert.ok(got.token > held.token);
          assert.equal(await a.tryLock(name), null);
          await got.release();
        });

        test('fencing tokens increase across holders; a waiter gets the lock on release', async () => {
          const lockers = [client(), client(), client()];
          const name = fresh('tokens');
          const tokens = [];
          for (let round = 0; round < 6; round++) {
            const lock = await lockers[round % 3].lock(name);
            tokens.push(lock.token);
            await lock.release();
          }
          // A waiter (no timeout) that gets it when the holder releases.
          const holder = await lockers[0].lock(name);
          tokens.push(holder.token);
          const waiting = lockers[1].lock(name, { timeout: Infinity });
          assert.equal(await lockers[2].tryLock(name), null);
          await holder.release();
          const next = await waiting;
          tokens.push(next.token);
          await next.release();
          for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i] > tokens[i - 1], `tokens ${show(tokens)}`);
        });

        test('withLock: runs the callback holding the lock, releases after a result or a throw', async () => {
          const [a, b] = [client(), client()];
          const name = fresh('with');
          const result = await a.withLock(name, async (signal, lock) => {
            assert.ok(lock instanceof Lock && lock.held);
            assert.equal(signal, lock.signal);
            assert.equal(signal.aborted, false);
            assert.equal(await b.tryLock(name), null, 'not held during the callback');
            return 42;
          });
          assert.equal(result, 42);
          assert.deepEqual(await entries(b, name), []);

          const boom = new Error('boom');
          await assert.rejects(a.withLock(name, async () => { throw boom; }), (e) => e === boom);
          assert.deepEqual(await entries(b, name), [], 'not released after the callback threw');
          await assert.rejects(a.withLock(name, () => { throw boom; }), (e) => e === boom);
          assert.deepEqual(await entries(b, name), [], 'not released after a synchronous throw');
          // A synchronous callback's value.
          assert.equal(await a.withLock(name, () => 'sync', { timeout: 1_000 }), 'sync');

          const free = await b.tryLock(name);
          assert.ok(free, 'someone else can take it afterwards');
          await free.release();
        });

        test('withLock rejects with LostError when the lease was lost during the callback', async () => {
          const [a, operator] = [client({ ttl: 900 }), client()];
          const name = fresh('withlost');
          let inside;
          await assert.rejects(a.withLock(name, async (signal, lock) => {
            inside = lock;
            await operator.forceRelease(name);
            await until('the lease is found lost', () => signal.aborted, { limit: 5_000 });
            return 'unreliable';
          }), (e) => isBaton(e, LostError, name));
          assert.equal(inside.held, false);
          assert.deepEqual(await entries(operator, name), []);
        });

        test('held and remaining follow the lease; keep-alive renews it past its TTL', async () => {
          // Two seconds: a loaded machine's Cassandra takes hundreds of ms for one renewal.
          const ttl = 2_000;
          const [a, b] = [client({ ttl }), client()];
          const name = fresh('lease');
          const lock = await a.lock(name);
          const taken = performance.now();
          const first = lock.remaining;
          assert.ok(first > 0 && first <= ttl, `remaining ${first}`);
          // A renewal puts the deadline back.
          let low = first;
          await until('a renewal raises remaining', () => {
            const now = lock.remaining;
            if (now > low) return true;
            low = now;
            return false;
          }, { limit: 2 * ttl, every: 5 });
          await until('held past twice the TTL', () => {
            assert.equal(lock.held, true, 'the lease was not renewed');
            return performance.now() - taken > 2 * ttl;
          }, { limit: 4 * ttl, every: 50 });
          assert.equal(lock.signal.aborted, false);
          assert.equal(await b.tryLock(name), null);
          await lock.release();
          assert.equal(lock.remaining, 0);
        });

        test('without keep-alive the lease ends at its TTL: held false, check() throws LostError', async () => {
          const [a, b] = [client({ keepAlive: false }), client()];
          const name = fresh('nokeep');
          const sent = performance.now();
          const lock = await a.lock(name, { ttl: 300 });
          await until('the lease ends', () => !lock.held, { limit: 5_000, every: 5 });
          // The deadline counts from when the acquisition was sent.
          const ended = performance.now() - sent;
          assert.ok(ended >= 270, `ended ${ended.toFixed(0)} ms after the acquisition was sent, before its TTL`);
          assert.equal(lock.remaining, 0);
          assert.throws(() => lock.check(), (e) => isBaton(e, LostError));
          const next = await b.lock(name, { timeout: 10_000 });
          assert.ok(next.token > lock.token);
          await assert.rejects(lock.release(), (e) => isBaton(e, LostError));
          assert.ok(next.held, 'the expired holder\'s release removed the new holder\'s lock');
          assert.equal(await a.tryLock(name), null);
          await next.release();
        });

        test('signal aborts with a LostError when forceRelease breaks the lock; release then rejects LostError', async (t) => {
          // Renewals every second: one finds the loss well before the 3 s deadline would.
          const ttl = 3_000;
          const [a, operator] = [client({ ttl }), client()];
          const name = fresh('broken');
          const lock = await a.lock(name);
          const seen = aborted(lock.signal);
          const before = performance.now();
          const removed = await operator.forceRelease(name);
          const broke = performance.now();
          assert.ok(Array.isArray(removed));
          assert.deepEqual(removed.map((e) => [e.name, e.owner, e.strategy]), [[name, lock.owner, strategy]], show(removed));
          const at = await within(seen, ttl, 'the signal aborts');
          const latency = at - broke;
          assert.ok(latency <= ttl / 3 + 1_000, `found lost ${latency.toFixed(0)} ms after the break (renewals every ${ttl / 3} ms)`);
          t.diagnostic(`${target.name} ${strategy}: lock.signal aborted ${latency.toFixed(0)} ms after forceRelease (ttl ${ttl} ms)`);
          assert.ok(at >= before);
          isBaton(lock.signal.reason, LostError, name);
          assert.equal(lock.held, false);
          assert.throws(() => lock.check(), (e) => isBaton(e, LostError, name));
          await assert.rejects(lock.release(), (e) => isBaton(e, LostError, name));
          // The next holder's token is larger.
          const next = await operator.lock(name);
          assert.ok(next.token > lock.token);
          await next.release();
          // Breaking a lock nobody holds removes nothing.
          assert.deepEqual(await operator.forceRelease(name), []);
        });

        test('Symbol.asyncDispose releases, and does nothing after a release', async () => {
          const [a, b] = [client(), client()];
          const name = fresh('dispose');
          const lock = await a.lock(name);
          assert.equal(typeof lock[asyncDispose], 'function');
          await lock[asyncDispose]();
          assert.equal(lock.held, false);
          assert.deepEqual(await entries(b, name), []);
          await lock[asyncDispose](); // twice: no NotOwnerError
          const other = await b.lock(name);
          await other.release();
          await other[asyncDispose](); // after release()
          assert.deepEqual(await entries(b, name), []);
        });

        test('locks() lists the holder as the store has it', async () => {
          const ttl = 30_000;
          const [a, viewer] = [client({ ttl }), client()];
          const name = fresh('list');
          const t0 = Date.now();
          const lock = await a.lock(name);
          const t1 = Date.now();
          const listed = await entries(viewer, name);
          assert.equal(listed.length, 1, show(listed));
          const [e] = listed;
          assert.deepEqual(Object.keys(e).sort(), ['acquisition', 'column', 'createdUnixMs', 'expiresIn', 'name', 'owner', 'state', 'strategy', 'ticket', 'token', 'value']);
          assert.equal(e.name, name);
          assert.equal(e.strategy, strategy);
          assert.equal(e.owner, lock.owner);
          assert.equal(e.state, 'held');
          assert.equal(e.token, lock.token);
          assert.equal(typeof e.column, 'string');
          assert.ok(e.column.length > 0);
          assert.equal(typeof e.value, 'string');
          assert.equal(typeof e.acquisition, 'bigint');
          if (strategy === 'bakery') assert.equal(typeof e.ticket, 'bigint');
          else assert.equal(e.ticket, null);
          assert.equal(typeof e.createdUnixMs, 'number');
          assert.ok(e.createdUnixMs >= t0 - 1_000 && e.createdUnixMs <= t1 + 1_000, `createdUnixMs ${e.createdUnixMs} not in [${t0}, ${t1}]`);
          assert.equal(typeof e.expiresIn, 'number');
          assert.ok(e.expiresIn > ttl - 5_000 && e.expiresIn <= ttl + 2_000, `expiresIn ${e.expiresIn}`);
          await lock.release();
          assert.deepEqual(await entries(viewer, name), []);
        });

        test('purge removes expired entries only', async () => {
          const [a, b] = [client({ keepAlive: false }), client()];
          const [expiredName, liveName] = [fresh('expired'), fresh('live')];
          const expired = await a.lock(expiredName, { ttl: 300 });
          const live = await b.lock(liveName, { ttl: 30_000 });
          assert.deepEqual(await b.purge(liveName), [], 'purge removed a live lock');
          await until('the lease ends', () => !expired.held, { limit: 5_000 });
          /** @type {{ name: string, cell: string }[]} */
          const removed = [];
          // The store's expiry comes a little after the holder's own deadline. Cassandra's cells
          // expire by themselves: there the entry may be gone before any purge finds it.
          await until('purge removes the expired entry', async () => {
            removed.push(...(await b.purge(expiredName)));
            return target.name === 'cassandra' ? (await entries(b, expiredName)).length === 0 : removed.length > 0;
          }, { limit: 10_000, every: 50 });
          for (const r of removed) {
            assert.equal(r.name, expiredName);
            assert.equal(typeof r.cell, 'string');
          }
          assert.deepEqual(await entries(b, expiredName), []);
          assert.deepEqual(await b.purge(expiredName), [], 'purged twice');
          // Purging every name leaves the live lock.
          for (const r of await b.purge()) assert.notEqual(r.name, liveName, 'purge() removed a live lock');
          assert.ok(live.held);
          assert.deepEqual((await entries(b, liveName)).map((e) => e.owner), [live.owner]);
          const next = await a.lock(expiredName);
          assert.ok(next.token > expired.token, 'the fencing counter went back after a purge');
          await next.release();
          await live.release();
        });

        test('a wait times out with TimedOutError, leaving only the holder\'s entry', async () => {
          const [a, b] = [client(), client({ host: 'waiter' })];
          const name = fresh('timeout');
          const held = await a.lock(name);
          const started = performance.now();
          await assert.rejects(b.lock(name, { timeout: 300 }), (e) => isBaton(e, TimedOutError, name));
          const waited = performance.now() - started;
          assert.ok(waited >= 295 && waited < 5_000, `timed out after ${waited.toFixed(0)} ms`);
          await assert.rejects(b.lock(name, { timeout: 0 }), (e) => isBaton(e, TimedOutError, name));
          // The locker's default timeout.
          await assert.rejects(client({ timeout: 100 }).lock(name), (e) => isBaton(e, TimedOutError, name));
          assert.deepEqual((await entries(a, name)).map((e) => e.owner), [held.owner], 'a timed-out wait left an entry');
          await held.release();
        });

        test('an aborted wait rejects CancelledError and leaves only the holder\'s entry', async () => {
          const [a, b, c] = [client(), client({ host: 'waiter' }), client()];
          const name = fresh('abort');
          const held = await a.lock(name);
          const controller = new AbortController();
          const waiting = b.lock(name, { signal: controller.signal, timeout: 60_000 });
          waiting.catch(() => {});
          // Abort once the wait has written its entry (bakery's ticket). A unique-insert waiter
          // writes nothing, and a column-prefix waiter's column lives only through its first
          // attempt (its retries read the prefix first and write nothing while the lock is held),
          // so abort once it has tried.
          if (strategy === 'bakery') {
            await until('the waiter\'s entry appears', async () => (await entries(c, name)).some((e) => e.owner.startsWith('waiter:')));
          } else {
            await entries(c, name); // a round trip to the store after the wait began
          }
          const reason = new Error('changed my mind');
          controller.abort(reason);
          await assert.rejects(waiting, (e) => isBaton(e, CancelledError) && e.cause === reason);
          assert.deepEqual((await entries(c, name)).map((e) => [e.owner, e.state]), [[held.owner, 'held']], 'the aborted wait left an entry');
          assert.ok(held.held);
          await held.release();
          assert.deepEqual(await entries(c, name), []);
          const next = await c.tryLock(name);
          assert.ok(next, 'the aborted wait still blocks the lock');
          await next.release();

          // A signal aborted before the call: nothing is attempted.
          const gone = AbortSignal.abort(reason);
          await assert.rejects(b.lock(name, { signal: gone }), (e) => isBaton(e, CancelledError) && e.cause === reason);
          await assert.rejects(b.tryLock(name, { signal: gone }), (e) => isBaton(e, CancelledError));
          assert.deepEqual(await entries(c, name), []);
        });

        test('an abort while the acquisition\'s write is in flight: nothing left once it lands', { skip: !target.shared && 'needs an adapter to delay' }, async () => {
          // The store answers the acquisition's first write late (as a slow network would): the
          // write is held back until the wait has been aborted and the next command after it
          // (the cleanup) was answered, or, if none comes (the waiter waits for the write's
          // answer, as it should), for a second. Then it lands; whatever the waiter decided,
          // no entry of it may remain.
          /** @type {ReturnType<typeof delaying> | undefined} */
          let gate;
          const b = target.locker({ strategy, host: 'waiter' }, (adapter) => (gate = delaying(adapter)).adapter);
          const viewer = client();
          const name = fresh('inflight');
          const controller = new AbortController();
          const waiting = b.lock(name, { signal: controller.signal, timeout: 60_000 }).then((l) => l, (e) => e);
          const held = await until('the first write is held back', () => gate?.held, { limit: 10_000, every: 2 });
          controller.abort();
          await Promise.race([gate.answeredAfter, pause(1_000)]);
          held.release();
          await held.landed;
          const got = await within(waiting, 20_000, 'the aborted wait ends');
          if (got instanceof Lock) await got.release();
          else isBaton(got, CancelledError);
          assert.deepEqual((await entries(viewer, name)).map((e) => `${e.owner} ${e.state} token=${e.token}`), [],
            `the aborted acquisition (${got?.constructor?.name}: ${got?.message}) left its entry; statements: ${show(gate.log)}`);
          const next = await viewer.tryLock(name);
          assert.ok(next, 'the lock stays blocked');
          await next.release();
        });

        test('every statement an adapter is given has its name and access; a lock and a release each write', { skip: !target.shared && 'no adapter' }, async () => {
          /** @type {{ method: string, statement: string, access: string }[]} */
          const seen = [];
          const locker = target.locker({ strategy }, (adapter) => recording(adapter, seen));
          const name = fresh('contract');
          const lock = await locker.lock(name);
          const acquisition = seen.length;
          assert.ok(seen.some((s) => s.access === 'write'), `the acquisition wrote: ${show(seen)}`);
          await lock.release();
          assert.ok(seen.slice(acquisition).some((s) => s.access === 'write'), `the release wrote: ${show(seen.slice(acquisition))}`);
          await locker.locks();
          await locker.purge(name);
          assert.ok(seen.length > acquisition);
          for (const s of seen) {
            assert.match(String(s.statement), /^[a-z]+(-[a-z]+)*$/, `a statement without its name: ${show(s)}`);
            assert.ok(['read', 'write', 'schema'].includes(s.access), `access: ${show(s)}`);
          }
          assert.ok(seen.slice(acquisition).every((s) => s.access !== 'schema'), 'the schema is set up once, before the first lock statement');
        });

        test('an abort racing the grant: a Lock or CancelledError, and nothing left behind', async () => {
          const [a, b, c] = [client(), client({ host: 'waiter' }), client()];
          for (let round = 0; round < 3; round++) {
            const name = fresh('race');
            const held = await a.lock(name);
            const controller = new AbortController();
            const waiting = b.lock(name, { signal: controller.signal, timeout: 60_000 }).then((l) => l, (e) => e);
            await held.release();
            // Abort at increasing distances from the release.
            for (let i = 0; i < round; i++) await entries(c, name);
            controller.abort();
            const got = await waiting;
            if (got instanceof Lock) {
              await got.release();
            } else {
              isBaton(got, CancelledError);
            }
            assert.deepEqual(await entries(c, name), [], `round ${round}: left behind (${got?.constructor?.name})`);
            const next = await c.tryLock(name);
            assert.ok(next, `round ${round}: the lock stayed blocked`);
            await next.release();
          }
        });
      });
    }

    test('a Locker takes its defaults (ttl, timeout, strategy) and lock() options override them', async () => {
      const a = target.locker({ strategy: 'bakery', ttl: 5_000, timeout: 200 });
      const name = fresh('defaults');
      const lock = await a.lock(name);
      assert.ok(lock.remaining <= 5_000 && lock.remaining > 3_000, `remaining ${lock.remaining}`);
      assert.deepEqual((await entries(a, name)).map((e) => e.strategy), ['bakery']);
      const other = await a.lock(fresh('defaults'), { ttl: 20_000 });
      assert.ok(other.remaining > 15_000, `remaining ${other.remaining}`);
      await assert.rejects(a.lock(name), TimedOutError);
      await lock.release();
      await other.release();
    });
  });
}
