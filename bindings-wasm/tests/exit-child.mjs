// A script of exits.test.mjs, as a user would write one: it takes and releases locks on one store
// (argument: memory, postgres or cassandra; the URLs from BATON_POSTGRES_URL and
// BATON_CASSANDRA_URL) through every path of the API, including the failing ones, closes its
// pool or client, prints `done` and must then end by itself with status 0. An unhandled
// rejection or a process warning is printed on stderr and makes the status 70.
//
//   node exit-child.mjs STORE            the script
//   node exit-child.mjs selftest         an unhandled rejection on purpose (checks the check)

import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Locker, MemoryStore, LostError, NotOwnerError, TimedOutError, CancelledError } from 'baton-locks';
import { postgresStore } from 'baton-locks/postgres';
import { cassandraStore } from 'baton-locks/cassandra';
import { aborted, cassandraClient } from './support.mjs';

process.on('unhandledRejection', (e) => {
  console.error('unhandled rejection:', e);
  process.exitCode = 70;
});
process.on('warning', (w) => {
  console.error('process warning:', w.name, w.message);
  process.exitCode = 70;
});

const which = process.argv[2];
if (which === 'selftest') {
  Promise.reject(new Error('on purpose'));
  await new Promise((resolve) => { setTimeout(resolve, 10); });
  console.log('done');
  process.exit();
}

/** @type {(options?: object) => Locker} */
let locker;
/** @type {() => Promise<void>} */
let close;
if (which === 'memory') {
  const store = new MemoryStore();
  locker = (options) => new Locker(store, options);
  close = async () => {};
} else if (which === 'postgres') {
  const pool = new pg.Pool({ connectionString: process.env.BATON_POSTGRES_URL, max: 4, connectionTimeoutMillis: 5_000 });
  locker = (options) => new Locker(postgresStore(pool), options);
  close = () => pool.end();
} else if (which === 'cassandra') {
  const { client, keyspace } = cassandraClient(String(process.env.BATON_CASSANDRA_URL));
  locker = (options) => new Locker(cassandraStore(client, { keyspace }), { consistency: 'quorum', ...options });
  close = () => client.shutdown();
} else {
  throw new Error(`unknown store ${which}`);
}

const check = (/** @type {boolean} */ ok, /** @type {string} */ what) => { if (!ok) throw new Error(`failed: ${what}`); };
const name = (/** @type {string} */ what) => `js-exit-${what}-${randomUUID()}`;
const [a, b, operator] = [locker(), locker(), locker()];
const asyncDispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose');

// Lock and release; tryLock, busy and free; a second release.
const n1 = name('basic');
const first = await a.lock(n1);
check(await b.tryLock(n1) === null, 'tryLock busy');
await first.release();
await first.release().then(() => check(false, 'second release'), (e) => check(e instanceof NotOwnerError, 'NotOwnerError'));
const second = await b.tryLock(n1);
check(second !== null, 'tryLock free');
await second?.[asyncDispose]();

// withLock: a value, a throw.
check(await a.withLock(name('with'), async () => 7) === 7, 'withLock value');
await a.withLock(name('with'), async () => { throw new Error('inside'); }).then(() => check(false, 'withLock throw'), () => {});

// A wait that times out, one that is aborted, one aborted before it starts.
const n2 = name('waits');
const holder = await a.lock(n2);
await b.lock(n2, { timeout: 100 }).then(() => check(false, 'timeout'), (e) => check(e instanceof TimedOutError, 'TimedOutError'));
const controller = new AbortController();
const waiting = b.lock(n2, { signal: controller.signal, timeout: 30_000 });
setTimeout(() => controller.abort(), 50);
await waiting.then(() => check(false, 'abort'), (e) => check(e instanceof CancelledError, 'CancelledError'));
await b.lock(n2, { signal: AbortSignal.abort() }).catch(() => {});
await holder.release();

// A lease broken by an operator: the holder finds it lost at its next renewal; nobody listens to
// its signal. One is released afterwards (rejects LostError), one never is.
const fast = locker({ ttl: 600 });
const [n3, n4] = [name('lost'), name('lost')];
const broken = await fast.lock(n3);
const abandoned = await fast.lock(n4);
await operator.forceRelease(n3);
await operator.forceRelease(n4);
// Either may be lost before we look (a renewal can find it while the other force-release runs):
// a listener added after the abort would never fire.
await aborted(broken.signal);
await aborted(abandoned.signal);
await broken.release().then(() => check(false, 'release after loss'), (e) => check(e instanceof LostError, 'LostError'));
check(abandoned.signal.reason instanceof LostError, 'signal reason');

// An operator's view.
await operator.locks();
await operator.purge();

await close();
console.log('done');
