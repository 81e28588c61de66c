// A script of pg-errors.test.mjs: PostgreSQL ends the connection that baton-locks is using (its
// backend terminated with pg_terminate_backend from another connection, FATAL 57P01, as when its
// postmaster dies), at a moment the script makes certain, and the lock call must end with a
// typed error (or succeed on a retry), never take the process down. Nothing listens to 'error'
// on the pool or on the client, and there is no 'uncaughtException' handler: an error that pg
// emits with nobody listening kills this process, as it would the user's.
//
//   node pg-errors-child.mjs idle       a pg.Pool (behind a wrapper pool): each connection it
//                                       lends out has its backend terminated, and pg reads the
//                                       termination while no statement is out (between connect()
//                                       and the first statement); then one more lock call, with
//                                       the connections left alone, which must succeed
//   node pg-errors-child.mjs handover   the same, but pg reads the termination in the very turn
//                                       in which the pool hands the connection over
//   node pg-errors-child.mjs client     as idle, on a single pg.Client (given to postgresStore)
//   node pg-errors-child.mjs statement  a pg.Pool whose connection's backend is terminated while a
//                                       statement of the lock call is out (blocked on the table's
//                                       lock): the statement gets the FATAL, and the socket's
//                                       close, after that, must not reach the pool's 'error'
//
// Prints one JSON line per lock call ({ step, outcome, code, message, ms, ... }), then `done`,
// and must then end by itself. BATON_POSTGRES_URL is the database; the script makes a table of
// its own and drops it.

import pg from 'pg';
import { Locker } from 'baton-locks';
import { postgresStore } from 'baton-locks/postgres';
import { until } from './support.mjs';

const url = String(process.env.BATON_POSTGRES_URL);
const which = process.argv[2];
const table = `js_pg_errors_${which}_${process.pid}`;
const name = `js-pg-errors-${which}-${process.pid}`;

/** Another connection: terminates backends, and locks the table in `statement`. */
const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`DROP TABLE IF EXISTS ${table}`);

/** Prints how `call` ended, with `extra`. */
async function step(/** @type {string} */ what, /** @type {() => Promise<any>} */ call, /** @type {() => object} */ extra = () => ({})) {
  const started = performance.now();
  let outcome;
  try {
    const lock = await call();
    await lock.release();
    outcome = { outcome: 'locked' };
  } catch (e) {
    const error = /** @type {any} */ (e);
    outcome = { outcome: error?.name, code: error?.code, message: error?.message };
  }
  console.log(JSON.stringify({ step: what, ...outcome, ms: Math.round(performance.now() - started), ...extra() }));
}

/** The socket of a pg.Client (pg's `connection.stream`). */
const socketOf = (/** @type {any} */ client) => /** @type {import('node:net').Socket} */ (client.connection.stream);

/**
 * Terminates `client`'s backend so that pg reads the termination while no statement is out: stops
 * reading its socket, terminates the backend from `admin`, waits until the socket has received
 * the termination (the bytes wait in its buffer), then holds back the next statement made on the
 * client until pg has read them (and the socket's end), with no statement of its out.
 * @param {pg.Client | pg.PoolClient} client
 */
async function terminateBeforeNextStatement(client) {
  const socket = socketOf(client);
  socket.pause();
  const { rows } = await admin.query('SELECT pg_terminate_backend($1) AS done', [client.processID]);
  if (rows[0]?.done !== true) throw new Error(`pg_terminate_backend(${client.processID}) failed`);
  await until('the socket has received the termination', () => socket.readableLength > 0);
  const target = /** @type {any} */ (client);
  target.query = async (/** @type {any[]} */ ...args) => {
    delete target.query;
    socket.resume();
    await until('pg has read the termination', () => socket.readableEnded || socket.destroyed);
    return target.query(...args);
  };
}

/**
 * Has `client`'s backend terminated while its next statement is out, blocked on the table lock
 * `admin` holds; then lets the table go.
 * @param {pg.PoolClient} client
 */
function terminateDuringNextStatement(client) {
  const target = /** @type {any} */ (client);
  target.query = (/** @type {any[]} */ ...args) => {
    delete target.query;
    const out = target.query(...args);
    const blocked = async () => (await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", [client.processID])).rowCount === 1;
    until('the statement waits for the table lock', blocked)
      .then(() => admin.query('SELECT pg_terminate_backend($1)', [client.processID]))
      .then(() => admin.query('ROLLBACK'))
      .catch((e) => { console.error('terminating the backend failed:', e); process.exitCode = 1; });
    return out;
  };
}

/**
 * A wrapper of `pool` that hands out its connections after `arm` (while `armed`) prepared them;
 * counts them, and the pool's removals.
 * @param {pg.Pool} pool
 * @param {(c: pg.PoolClient) => unknown} arm
 */
function wrapped(pool, arm) {
  const counts = { armed: true, lent: 0, broken: 0, removed: 0 };
  pool.on('remove', () => { counts.removed += 1; });
  const wrapper = {
    options: pool.options,
    get totalCount() { return pool.totalCount; },
    query: (/** @type {any} */ q) => pool.query(q),
    async connect() {
      const c = await pool.connect();
      counts.lent += 1;
      if (counts.armed) {
        counts.broken += 1;
        await arm(c);
      }
      return c;
    },
  };
  return { wrapper, counts };
}

/**
 * A wrapper of `pool` whose connections, while `armed`, come with their backend terminated and
 * the termination read by pg in the same turn as the pool hands them over, with no statement out
 * (as when PostgreSQL's FATAL follows the bytes that complete a new connection, in one read): a
 * connection is checked out, its socket paused, its backend terminated, and once its socket has
 * received the termination it goes back to the pool, idle; checked out again, it is handed to the
 * caller (a callback, or a promise's resolution), and pg reads the bytes at once after.
 * @param {pg.Pool} pool
 */
function handingOver(pool) {
  const counts = { armed: true, lent: 0, broken: 0, removed: 0 };
  pool.on('remove', () => { counts.removed += 1; });
  /** @param {(err: Error | undefined, c?: pg.PoolClient) => void} cb */
  const connect = async (cb) => {
    /** @type {pg.PoolClient | undefined} */
    let prepared;
    if (counts.armed) {
      prepared = await pool.connect();
      socketOf(prepared).pause();
      const { rows } = await admin.query('SELECT pg_terminate_backend($1) AS done', [prepared.processID]);
      if (rows[0]?.done !== true) throw new Error(`pg_terminate_backend(${prepared.processID}) failed`);
      const socket = socketOf(prepared);
      await until('the socket has received the termination', () => socket.readableLength > 0);
      prepared.release();
    }
    pool.connect((err, c) => {
      if (c) counts.lent += 1;
      cb(err, c);
      if (c !== undefined && c === prepared) {
        counts.broken += 1;
        socketOf(c).read(); // pg reads the termination now, in this turn
        socketOf(c).resume();
      }
    });
  };
  const wrapper = {
    options: pool.options,
    get totalCount() { return pool.totalCount; },
    query: (/** @type {any} */ q) => pool.query(q),
    /** As pg.Pool's: with a callback, or else a promise. */
    connect(/** @type {any} */ cb) {
      if (typeof cb === 'function') {
        connect(cb).catch((e) => cb(e));
        return undefined;
      }
      return new Promise((resolve, reject) => {
        connect((err, c) => (err ? reject(err) : resolve(c))).catch(reject);
      });
    },
  };
  return { wrapper, counts };
}

if (which === 'idle' || which === 'handover') {
  const pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 5_000 });
  const { wrapper, counts } = which === 'idle' ? wrapped(pool, terminateBeforeNextStatement) : handingOver(pool);
  const locker = new Locker(postgresStore(/** @type {any} */ (wrapper), { table }));
  await step('terminated', () => locker.lock(name, { timeout: 10_000 }), () => ({ ...counts }));
  counts.armed = false;
  await step('after', () => locker.lock(name, { timeout: 10_000 }), () => ({ ...counts }));
  // Every broken connection was given back as broken: the pool closed it.
  await until('the pool removed the broken connections', () => counts.removed >= counts.broken, { limit: 5_000 });
  console.log(JSON.stringify({ step: 'pool', ...counts }));
  await pool.end();
} else if (which === 'client') {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const locker = new Locker(postgresStore(client, { table }));
  await step('before', () => locker.lock(name, { timeout: 10_000 }), () => ({ listeners: client.listenerCount('error') }));
  await terminateBeforeNextStatement(client);
  await step('terminated', () => locker.lock(name, { timeout: 10_000 }), () => ({ listeners: client.listenerCount('error') }));
  await client.end();
} else if (which === 'statement') {
  const pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 5_000 });
  const { wrapper, counts } = wrapped(pool, (c) => {
    counts.armed = false;
    terminateDuringNextStatement(c);
  });
  counts.armed = false;
  const locker = new Locker(postgresStore(/** @type {any} */ (wrapper), { table }));
  await step('before', () => locker.lock(name, { timeout: 10_000 }), () => ({ ...counts }));
  await admin.query('BEGIN');
  await admin.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  counts.armed = true;
  await step('terminated', () => locker.lock(name, { timeout: 10_000 }), () => ({ ...counts }));
  await until('the pool removed the broken connection', () => counts.removed >= counts.broken, { limit: 5_000 });
  console.log(JSON.stringify({ step: 'pool', ...counts }));
  await pool.end();
} else {
  throw new Error(`unknown case ${which}`);
}

await admin.query(`DROP TABLE IF EXISTS ${table}`);
await admin.end();
console.log('done');
