// Shared by the package's `node --test` files: the stores under test (from the environment),
// fresh lock names, waiting for a condition with a deadline, the `baton` command and the Rust
// `lock_worker`, and child processes that must end by themselves.
//
// Environment (set by scripts/test and scripts/wasm-bindings):
//   BATON_POSTGRES_URL      postgres://user:password@host:port/db
//   BATON_CASSANDRA_URL     cassandra://host[:port]/keyspace?consistency=quorum
//   BATON_CLI               the `baton` command
//   BATON_LOCK_WORKER       the Rust `lock_worker` (tests/src/bin/lock_worker.rs)
//   BATON_REQUIRE_SERVICES  1: a missing URL or command fails its tests instead of skipping them

import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';
import pg from 'pg';
import cassandra from 'cassandra-driver';
import { Locker, MemoryStore } from 'baton-locks';
import { postgresStore } from 'baton-locks/postgres';
import { cassandraStore } from 'baton-locks/cassandra';

export const STRATEGIES = /** @type {const} */ (['unique-insert', 'bakery', 'column-prefix']);
export const required = process.env.BATON_REQUIRE_SERVICES === '1';
export const here = dirname(fileURLToPath(import.meta.url));
export const asyncDispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose');

/** A fresh lock name no other test (or earlier run) uses. */
export function fresh(what = 'lock') {
  return `js-${what}-${randomUUID()}`;
}

/** Resolves after `ms` (for pacing a poll only, never to let things settle). */
export const pause = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `condition` (sync or async) until it returns a truthy value, which it resolves to;
 * fails after `limit` ms with `what` and the last value seen.
 * @template T
 * @param {string} what
 * @param {() => T | Promise<T>} condition
 * @param {{ limit?: number, every?: number }} [o]
 * @returns {Promise<T>}
 */
export async function until(what, condition, { limit = 10_000, every = 10 } = {}) {
  const deadline = performance.now() + limit;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (performance.now() >= deadline) assert.fail(`${what}: not within ${limit} ms (last: ${show(value)})`);
    await pause(every);
  }
}

/**
 * `promise`'s value if it settles within `limit` ms; else fails with `what`.
 * @template T
 * @param {Promise<T>} promise
 * @param {number} limit
 * @param {string} what
 * @returns {Promise<T>}
 */
export async function within(promise, limit, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new assert.AssertionError({ message: `${what}: not within ${limit} ms` })), limit);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** JSON for messages, bigints as `123n`. */
export function show(/** @type {unknown} */ value) {
  return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
}

/**
 * Resolves when `signal` aborts (at once if it has), with the time it was seen.
 * @param {AbortSignal} signal
 * @returns {Promise<number>}
 */
export function aborted(signal) {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(performance.now());
    else signal.addEventListener('abort', () => resolve(performance.now()), { once: true });
  });
}

/** The keyspace and contact point of a `cassandra://host[:port]/keyspace?…` URL. */
export function parseCassandraUrl(/** @type {string} */ url) {
  const parsed = new URL(url);
  return {
    keyspace: decodeURIComponent(parsed.pathname.replace(/^\//, '')) || 'baton',
    contactPoints: parsed.hostname.split(',').map((h) => (parsed.port ? `${h}:${parsed.port}` : h)),
    consistency: parsed.searchParams.get('consistency') ?? 'quorum',
  };
}

/** A cassandra-driver Client for a `cassandra://` URL (the caller shuts it down). */
export function cassandraClient(/** @type {string} */ url) {
  const { contactPoints, keyspace, consistency } = parseCassandraUrl(url);
  const client = new cassandra.Client({ contactPoints, localDataCenter: 'datacenter1' });
  return { client, keyspace, consistency };
}

/**
 * @typedef {object} Target
 * @property {'memory' | 'postgres' | 'postgres (two rows)' | 'cassandra'} name
 * @property {string | undefined} url     the store's URL (for the `baton` command), undefined if not configured
 * @property {string | false} skip        why its tests skip, or false
 * @property {boolean} shared             other processes (the `baton` command, Rust) see its table
 * @property {(options?: object, wrap?: (adapter: any) => any) => Locker} locker  a Locker with an
 *   adapter (and pg pool) of its own; `wrap` may replace the adapter (not on memory)
 * @property {() => Promise<void>} close
 */

/**
 * The stores under test, in order memory, PostgreSQL, Cassandra. A store whose URL is not set
 * is skipped, unless BATON_REQUIRE_SERVICES=1: then its tests run and fail on `need(target)`.
 * Clients are made lazily and closed by `close()` (registered with `after` by the caller).
 *
 * PostgreSQL's target uses the default table, whatever layout the database has for it (the
 * test command gives each run a database of its own, so there it is the default layout of a
 * new table, one row). With `layouts`, a second PostgreSQL target follows it on a table of
 * the two-row layout that it creates for this process and drops when closed: the layout of
 * tables made before the one-row layout existed, and of stores that ask for it.
 * @param {{ layouts?: boolean }} [o]
 * @returns {Target[]}
 */
export function targets({ layouts = false } = {}) {
  const postgres = process.env.BATON_POSTGRES_URL;
  return [
    memoryTarget(),
    postgresTarget(postgres),
    ...(layouts ? [postgresTarget(postgres, 'two-rows')] : []),
    cassandraTarget(process.env.BATON_CASSANDRA_URL),
  ];
}

function skipUnless(/** @type {string | undefined} */ url, /** @type {string} */ variable) {
  return !url && !required ? `${variable} is not set` : false;
}

/** @returns {Target} */
function memoryTarget() {
  const store = new MemoryStore();
  return {
    name: 'memory', url: 'memory', skip: false, shared: false,
    locker: (options) => new Locker(store, options),
    close: async () => {},
  };
}

/**
 * PostgreSQL: the default table, or with `layout` a table of that layout made for this process
 * (and dropped by `close`), which the target's `url` names for the `baton` command.
 * @param {string | undefined} url
 * @param {'two-rows'} [layout]
 * @returns {Target}
 */
function postgresTarget(url, layout) {
  /** @type {pg.Pool[]} */
  const pools = [];
  const table = layout && `js_${layout.replace('-', '_')}_${process.pid}_${randomUUID().slice(0, 8)}`;
  const options = table ? { table, layout } : {};
  return {
    name: layout ? 'postgres (two rows)' : 'postgres',
    url: url && table ? `${url}${url.includes('?') ? '&' : '?'}table=${table}&layout=${layout}` : url,
    skip: skipUnless(url, 'BATON_POSTGRES_URL'),
    shared: true,
    locker: (lockerOptions, wrap = (a) => a) => {
      assert.ok(url, 'BATON_REQUIRE_SERVICES=1 but BATON_POSTGRES_URL is not set');
      // A pool per locker, as separate processes would have.
      // Small, and closing idle connections: many lockers live at once (the server allows 100).
      const pool = new pg.Pool({ connectionString: url, max: 2, idleTimeoutMillis: 1_000, connectionTimeoutMillis: 5_000 });
      pools.push(pool);
      return new Locker(wrap(postgresStore(pool, options)), lockerOptions);
    },
    close: async () => {
      await Promise.all(pools.splice(0).map((p) => p.end()));
      if (url && table) {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          await client.query(`DROP TABLE IF EXISTS "${table}"`);
          await client.query(`DROP FUNCTION IF EXISTS "${table}_freed"()`);
        } finally {
          await client.end();
        }
      }
    },
  };
}

/**
 * The layout of a PostgreSQL target's table as its flag row says (docs/sql-store.md,
 * "The lock table"):
 * `'one-row'` when the flag is `fence`, else `'two-rows'`.
 * @param {Target} target
 */
export async function postgresLayout(target) {
  assert.ok(target.url, 'a PostgreSQL target with a URL');
  const url = new URL(target.url);
  const table = url.searchParams.get('table') ?? 'baton_locks';
  url.search = '';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT value FROM "${table}" WHERE lock_name = '' AND cell = 'layout'`);
    return rows[0]?.value === 'fence' ? 'one-row' : 'two-rows';
  } finally {
    await client.end();
  }
}

/** @returns {Target} */
function cassandraTarget(/** @type {string | undefined} */ url) {
  /** @type {ReturnType<typeof cassandraClient> | undefined} */
  let made;
  return {
    name: 'cassandra', url, skip: skipUnless(url, 'BATON_CASSANDRA_URL'), shared: true,
    locker: (options, wrap = (a) => a) => {
      assert.ok(url, 'BATON_REQUIRE_SERVICES=1 but BATON_CASSANDRA_URL is not set');
      // One driver client (connecting is slow), an adapter per locker.
      made ??= cassandraClient(url);
      return new Locker(wrap(cassandraStore(made.client, { keyspace: made.keyspace })), { consistency: 'quorum', ...options });
    },
    close: async () => { if (made) await made.client.shutdown(); made = undefined; },
  };
}

/**
 * The stores under test, closed after the file's tests.
 * @param {{ layouts?: boolean }} [o] see `targets`
 */
export function targetsClosedAfter(o) {
  const all = targets(o);
  after(async () => { for (const t of all) await t.close(); });
  return all;
}

/** Entries of `name` in `locker`'s table. */
export async function entries(/** @type {Locker} */ locker, /** @type {string} */ name) {
  return (await locker.locks()).filter((e) => e.name === name);
}

/** The `baton` command, or why its tests skip. */
export const cli = process.env.BATON_CLI;
export const worker = process.env.BATON_LOCK_WORKER;
export const commandsSkip = (!cli || !worker) && !required ? 'BATON_CLI or BATON_LOCK_WORKER is not set' : false;

/**
 * Runs `baton --store URL ARGS`; resolves to its exit code and output (never rejects).
 * @param {string[]} args
 * @param {string} store
 * @returns {Promise<{ code: number, stdout: string, stderr: string, ms: number }>}
 */
export function baton(args, store) {
  assert.ok(cli, 'BATON_REQUIRE_SERVICES=1 but BATON_CLI is not set');
  const started = performance.now();
  return new Promise((resolve) => {
    // `--store` first: after a `--`, it would be the command's.
    execFile(cli, ['--store', store, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
}

/**
 * Starts a child process; `lines` resolves to the first stdout line matching `pattern`, and
 * `exited` to its exit code, signal and output. The child is killed (SIGKILL) when the test
 * process exits, if still running.
 * @param {string} command
 * @param {string[]} args
 * @param {{ env?: Record<string, string | undefined>, cwd?: string, stdin?: boolean }} [o]
 */
export function start(command, args, o = {}) {
  const child = spawn(command, args, { env: { ...process.env, ...o.env }, cwd: o.cwd, stdio: [o.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => { stderr += d; });
  /** @type {Set<() => void>} */
  const watchers = new Set();
  child.stdout.on('data', (d) => { stdout += d; for (const w of watchers) w(); });
  /** @type {Promise<{ code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string, at: number }>} */
  const exited = new Promise((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, at: performance.now() }));
  });
  children.add(child);
  exited.then(() => children.delete(child));
  return {
    child,
    exited,
    get stdout() { return stdout; },
    get stderr() { return stderr; },
    /**
     * The first stdout line matching `pattern`, as its match; rejects if the child exits first
     * or after `limit` ms.
     * @param {RegExp} pattern
     * @param {number} [limit]
     * @returns {Promise<RegExpMatchArray>}
     */
    line(pattern, limit = 30_000) {
      return new Promise((resolve, reject) => {
        const look = () => {
          for (const l of stdout.split('\n')) {
            const m = l.match(pattern);
            if (m) { done(); resolve(m); return; }
          }
        };
        const timer = setTimeout(() => { done(); reject(new Error(`no line ${pattern} within ${limit} ms; stdout: ${stdout} stderr: ${stderr}`)); }, limit);
        const done = () => { watchers.delete(look); clearTimeout(timer); };
        watchers.add(look);
        exited.then((e) => { done(); reject(new Error(`exited (${e.code ?? e.signal}) before printing ${pattern}; stdout: ${e.stdout} stderr: ${e.stderr}`)); });
        look();
      });
    },
  };
}

/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();
// Registered once, at the top level (this module is imported before any test runs), so it runs
// after the file's last test: a hook registered inside a test would run when *that* test ends,
// killing the children of tests still running beside it. Only in a test file's process: in the
// scripts the tests start (which import this module too), `after` would make node:test's
// harness take over their unhandled rejections.
const killChildren = () => { for (const c of children) c.kill('SIGKILL'); };
if (/\.test\.mjs$/.test(process.argv[1] ?? '')) after(killChildren);
process.on('exit', killChildren);

/**
 * Resolves to the child's exit within `limit` ms, or fails naming what is still pending.
 * @param {ReturnType<typeof start>} run
 * @param {number} limit
 * @param {string} what
 */
export async function exitWithin(run, limit, what) {
  let timer;
  const late = new Promise((resolve) => { timer = setTimeout(() => resolve(null), limit); });
  const result = await Promise.race([run.exited, late]);
  clearTimeout(timer);
  if (result === null) {
    run.child.kill('SIGKILL');
    assert.fail(`${what} did not exit by itself within ${limit} ms; stdout: ${run.stdout} stderr: ${run.stderr}`);
  }
  return /** @type {Awaited<typeof run.exited>} */ (result);
}
