// A PostgreSQL store for baton-locks through `pg` (node-postgres 8.x): it runs the statements
// baton's Rust core gives it, on the same table (`baton_locks` by default) as the Rust stores
// and the `baton` command, so all of them see one another's locks.

import { hostname } from 'node:os';
import process from 'node:process';
import { InvalidOptionError } from './errors.js';

/** The warning's code, for `--disable-warning=` (Node 21.3+) and `process.on('warning')`. */
const NO_CONNECTION_TIMEOUT = 'BATON_PG_NO_CONNECTION_TIMEOUT';
let warnedNoConnectionTimeout = false;

/**
 * Warns, once per process, about a `pg.Pool` without `connectionTimeoutMillis`: its connection
 * attempts then have no limit, so a server that accepts and never answers leaves them pending
 * for ever, and `pool.end()` waits for them. Through `process.emitWarning` rather than
 * `console.warn`: Node's channel for such advice, printed to stderr with its type and code,
 * observable with `process.on('warning')` and silenced with `--no-warnings` or, by its code,
 * `--disable-warning=BATON_PG_NO_CONNECTION_TIMEOUT`, without touching the application's logs.
 * A `pg.Client` has no such option: its caller connects it.
 * @param {any} pool
 */
function checkConnectionTimeout(pool) {
  const options = pool.options;
  if (warnedNoConnectionTimeout || options === null || typeof options !== 'object') return;
  if (Number(options.connectionTimeoutMillis) > 0) return;
  warnedNoConnectionTimeout = true;
  process.emitWarning(
    'postgresStore was given a pg.Pool without connectionTimeoutMillis: against a server that '
      + 'accepts connections and never answers, its connection attempts never end and pool.end() '
      + 'never returns. Set connectionTimeoutMillis (for instance 5000, at most the Locker\'s '
      + 'commandTimeout).',
    { type: 'BatonWarning', code: NO_CONNECTION_TIMEOUT },
  );
}

/** Node's error codes of a connection that could not be made: nothing was sent. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EACCES', 'ENOENT']);

/**
 * @param {unknown} e
 * @param {'connect' | 'statement'} phase
 * @returns {Error}
 */
function classified(e, phase) {
  const error = e instanceof Error ? e : new Error(String(e));
  const code = /** @type {any} */ (error).code;
  let cause;
  if (hasSqlState(error)) cause = 'database';
  else if (phase === 'connect' || NOT_CONNECTED.has(code)) cause = 'noConnection';
  else cause = 'connection';
  return Object.assign(error, { batonCause: cause });
}

/**
 * @typedef {object} Ear
 * @property {Error | undefined} heard the first error the connection emitted, if any
 * @property {() => void} stop stop listening
 */

/**
 * Listens to `c`'s 'error' event until `stop()`. While a statement is out, pg gives a broken
 * connection's error (a socket error, or PostgreSQL's FATAL as its backend is terminated or its
 * postmaster dies) to that statement; at any other moment (between connect() and the first
 * statement, between a transaction's statements, after the last one) it emits it as 'error' on
 * the client, which without a listener kills the process. A pool stops listening to a client it
 * lends out, so the adapter listens while the connection is its own: from a pool, until it is
 * given back; a single `pg.Client` of the application's, only while one of our statements or
 * transactions runs on it, so that its own listeners, if any, get every error as before (they
 * are called as well), and none is taken from it outside our use. The work needs no nudge: a
 * client that emitted an error fails the statements it had and every later one.
 * @param {any} c
 * @returns {Ear}
 */
function listen(c) {
  /** @type {Error | undefined} */
  let heard;
  const onError = (/** @type {unknown} */ e) => { heard ??= e instanceof Error ? e : new Error(String(e)); };
  const can = typeof c?.on === 'function' && typeof c?.removeListener === 'function';
  if (can) c.on('error', onError);
  return {
    get heard() { return heard; },
    stop() { if (can) c.removeListener('error', onError); },
  };
}

/**
 * Checks a connection out of `pool`, and calls `take` with it as soon as the pool hands it over.
 * A pg.Pool calls a callback given to connect() synchronously, at once after it stops listening
 * to the client's errors; a new connection is handed over in the middle of reading the server's
 * bytes, which may hold an error right after the ones that completed the connection. A promise
 * would hand it over only once all of them are read, with nobody listening. A pool that ignores
 * the callback and returns a promise (a wrapper's) works too.
 * @param {any} pool
 * @param {(c: any) => void} take
 * @returns {Promise<any>}
 */
function checkOut(pool, take) {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (/** @type {unknown} */ err, /** @type {any} */ c) => {
      if (settled) return;
      settled = true;
      if (err) {
        reject(err);
        return;
      }
      take(c);
      resolve(c);
    };
    let returned;
    try {
      returned = pool.connect(settle);
    } catch (e) {
      settle(e);
      return;
    }
    if (returned !== null && typeof returned?.then === 'function') {
      returned.then((/** @type {any} */ c) => settle(undefined, c), (/** @type {unknown} */ e) => settle(e ?? new Error('pool.connect() failed')));
    }
  });
}

/**
 * The error a piece of work failed with, classified. If the connection emitted an error while it
 * ran, that one, unless the work failed with a database error of its own: what the work then got
 * from pg instead ("Client has encountered a connection error and is not queryable", made
 * before sending anything) says less. PostgreSQL's FATAL heard while no statement was out (its
 * backend terminated, its postmaster gone: 57P01, 57P02) comes between statements, when the
 * transaction, never committed, is rolled back.
 * @param {unknown} e
 * @param {Error | undefined} heard
 */
function failure(e, heard) {
  return classified(heard !== undefined && !hasSqlState(e) ? heard : e, 'statement');
}

/** @param {unknown} e */
function hasSqlState(e) {
  const code = /** @type {any} */ (e)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

/**
 * Whether a classified error leaves its connection unusable: a broken connection, or a database
 * error that ends the session (FATAL or PANIC; as the severity may be translated, also by the
 * SQLSTATEs of an ended session). Such a connection must not go back to the pool: it would
 * emit its error there when its socket closes, on the pool's 'error' event (fatal to a process
 * without a listener for it), or be lent out again.
 * @param {Error} error
 */
function dead(error) {
  const any = /** @type {any} */ (error);
  if (any.batonCause !== 'database') return true;
  if (any.severity === 'FATAL' || any.severity === 'PANIC') return true;
  const code = String(any.code);
  // connection exceptions; admin shutdown, crash shutdown, cannot connect now, database
  // dropped, idle session timeout; idle in transaction session timeout.
  return code.startsWith('08') || /^57P0[1-5]$/.test(code) || code === '25P03';
}

/**
 * Wraps a `pg.Pool` (or a single `pg.Client`) as a baton store.
 * @param {import('pg').Pool | import('pg').Client} client
 * @param {{ table?: string, create?: boolean, layout?: 'one-row' | 'two-rows' }} [options]
 */
export function postgresStore(client, options = {}) {
  if (client === null || typeof client !== 'object' || typeof (/** @type {any} */ (client).query) !== 'function') {
    throw new InvalidOptionError('postgresStore needs a pg.Pool or pg.Client');
  }
  const { table = 'baton_locks', create = true, layout = 'one-row', ...unknown } = options;
  const extra = Object.keys(unknown);
  if (extra.length > 0) throw new InvalidOptionError(`unknown postgresStore option ${JSON.stringify(extra[0])} (known: table, create, layout)`);
  const isPool = typeof (/** @type {any} */ (client).totalCount) === 'number';
  if (isPool) checkConnectionTimeout(client);
  // A single client is shared: run one thing at a time on it, so that no other lock's
  // statement can land inside a transaction.
  /** @type {Promise<unknown>} */
  let queue = Promise.resolve();

  /**
   * Runs `work` on a connection of its own, listening to the connection's errors meanwhile (see
   * `listen`). From a pool, the connection is given back afterwards, as broken (the pool then
   * closes it) if it failed.
   * @template T
   * @param {(c: import('pg').ClientBase) => Promise<T>} work
   * @returns {Promise<T>}
   */
  async function withConnection(work) {
    if (!isPool) {
      const own = /** @type {import('pg').Client} */ (client);
      const run = queue.then(async () => {
        // A client that lost its connection, or was ended, never connects again: pg fails each
        // statement given to it at once, before sending it. Said as what it is (no connection,
        // nothing sent), not as a statement that may have been applied. (`_queryable` and
        // `_ending` are pg's, which pg's own Pool reads too; a client without them is not checked.)
        const state = /** @type {any} */ (own);
        if (state._queryable === false || state._ending === true) {
          throw classified(new Error('the pg.Client given to postgresStore has lost its connection or was ended, and a pg.Client does not reconnect (a pg.Pool replaces broken connections)'), 'connect');
        }
        const ear = listen(own);
        try {
          return await work(own);
        } catch (e) {
          throw failure(e, ear.heard);
        } finally {
          ear.stop();
        }
      });
      queue = run.catch(() => {});
      return run;
    }
    /** @type {Ear | undefined} */
    let ear;
    let connection;
    try {
      connection = await checkOut(/** @type {import('pg').Pool} */ (client), (c) => { ear = listen(c); });
    } catch (e) {
      throw classified(e, 'connect');
    }
    const heard = /** @type {Ear} */ (ear);
    /** @type {Error | undefined} */
    let broken;
    try {
      return await work(connection);
    } catch (e) {
      const error = failure(e, heard.heard);
      if (dead(error)) broken = error;
      throw error;
    } finally {
      heard.stop();
      // Even after the work succeeded: an error heard after its last statement broke it too.
      connection.release(broken ?? heard.heard);
    }
  }

  return {
    kind: 'sql',
    dialect: 'postgres',
    table,
    create,
    layout,
    host: hostname(),
    description: `${where(client)} (table ${table})`,

    /**
     * Runs one statement. The third argument, `{ statement, access }`, names it for wrappers
     * (README, "Statement names"); running it needs neither.
     * @param {string} sql
     * @param {(string | number | bigint | null)[]} params
     */
    async query(sql, params) {
      const result = await withConnection((c) => c.query({ text: sql, values: params.map(toPg), rowMode: 'array' }));
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    },

    /** @param {{ sql: string, params: (string | number | bigint | null)[] }[]} statements */
    async transaction(statements) {
      await withConnection(async (c) => {
        await c.query('BEGIN');
        try {
          for (const { sql, params } of statements) await c.query({ text: sql, values: params.map(toPg) });
          await c.query('COMMIT');
        } catch (e) {
          await c.query('ROLLBACK').catch(() => {});
          throw e;
        }
      });
    },
  };
}

/**
 * Where a pool or client connects, without credentials.
 * @param {any} client
 */
function where(client) {
  const o = client.options ?? client.connectionParameters ?? {};
  if (typeof o.connectionString === 'string') {
    try {
      const url = new URL(o.connectionString);
      return `postgres://${url.host}${url.pathname}`;
    } catch {
      // Not a URL: fall back to the separate settings.
    }
  }
  return `postgres://${o.host ?? 'localhost'}:${o.port ?? 5432}/${o.database ?? ''}`;
}

/** @param {string | number | bigint | null} v */
function toPg(v) {
  return typeof v === 'bigint' ? v.toString() : v;
}
