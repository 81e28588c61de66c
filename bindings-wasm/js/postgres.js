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
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) cause = 'database';
  else if (phase === 'connect' || NOT_CONNECTED.has(code)) cause = 'noConnection';
  else cause = 'connection';
  return Object.assign(error, { batonCause: cause });
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
   * Runs `work` on a connection of its own.
   * @template T
   * @param {(c: import('pg').ClientBase) => Promise<T>} work
   * @returns {Promise<T>}
   */
  async function withConnection(work) {
    if (!isPool) {
      const run = queue.then(() => work(/** @type {import('pg').Client} */ (client)).catch((e) => { throw classified(e, 'statement'); }));
      queue = run.catch(() => {});
      return run;
    }
    let connection;
    try {
      connection = await /** @type {import('pg').Pool} */ (client).connect();
    } catch (e) {
      throw classified(e, 'connect');
    }
    let broken;
    try {
      return await work(connection);
    } catch (e) {
      const error = classified(e, 'statement');
      if (/** @type {any} */ (error).batonCause !== 'database') broken = error;
      throw error;
    } finally {
      connection.release(broken);
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
