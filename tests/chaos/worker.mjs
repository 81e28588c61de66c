// The Node client of the fault harness (docs/faults-design.md), through the npm package
// baton-locks (its PostgreSQL store over `pg`, its Cassandra store over `cassandra-driver`): the
// same critical sections as the Rust worker (tests/src/bin/chaos_worker.rs), flag for flag.
//
//   node worker.mjs --url URL --strategy S --name NAME --register HOST:PORT --client ID
//                   [--seconds 60] [--ttl-ms 2000] [--hold-ms 50] [--wait-ms 10000]
//
// Each section: lock (keep-alive on, waiting up to --wait-ms), `begin`, fenced `read`, a pause of
// up to --hold-ms, fenced `write`, `lost` if the lock knows by then that its lease was lost,
// `end`, then the release and `release` with its outcome. A failed lock call is reported
// (`error CODE`) and retried after 20 ms. Every lock decision is baton's; the register is one TCP
// connection (`net`) for the whole run. Prints a summary line at the end; exits 0, 2 on bad
// flags, 1 if the register cannot be reached or answers `bad ...`, or the store cannot be opened.
//
// baton-locks opens a store from a client, not a URL: the URL (baton's, as every other worker
// takes it) becomes a `pg.Pool` or a `cassandra-driver` Client here (`memory:` a MemoryStore),
// with the URL parameters baton's Rust stores take that have a counterpart in the package
// (others are refused).
// `scripts/wasm-bindings chaos-worker` installs this file into a project with the package, pg
// and cassandra-driver, and prints the command that runs it. Node 18.18+ (checked on 20).

import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { BatonError, Locker, LostError, MemoryStore } from 'baton-locks';

/** How long the register may take to connect or answer (as the Rust client). */
const ANSWER_DEADLINE_MS = 30_000;

/** The strategy names the Rust worker accepts (baton's Strategy::from_str), as the package names them. */
/** @type {Record<string, 'unique-insert' | 'bakery' | 'column-prefix'>} */
const STRATEGIES = {
  'unique-insert': 'unique-insert', unique_insert: 'unique-insert', unique: 'unique-insert',
  bakery: 'bakery',
  'column-prefix': 'column-prefix', column_prefix: 'column-prefix', prefix: 'column-prefix',
};

/** A bad flag: exit status 2. */
class UsageError extends Error {}
/** The register could not be reached, did not answer, or refused a request. */
class RegisterError extends Error {}
/** A store URL this worker cannot turn into a client. */
class UrlError extends Error {}

/**
 * @typedef {object} Args
 * @property {string} url
 * @property {'unique-insert' | 'bakery' | 'column-prefix'} strategy
 * @property {string} name
 * @property {string} register
 * @property {string} client
 * @property {number} seconds
 * @property {number} ttlMs
 * @property {number} holdMs
 * @property {number} waitMs
 */

/**
 * The flags, as the Rust worker takes them.
 * @param {string[]} argv
 * @returns {Args}
 */
function parse(argv) {
  /** @type {Record<string, string | boolean | (string | boolean)[] | undefined>} */
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: Object.fromEntries(['url', 'strategy', 'name', 'register', 'client', 'seconds', 'ttl-ms', 'hold-ms', 'wait-ms']
        .map((flag) => [flag, { type: /** @type {const} */ ('string') }])),
    }));
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
  /**
   * @param {string} flag
   * @param {number} otherwise
   */
  const number = (flag, otherwise) => {
    const text = values[flag];
    if (text === undefined) return otherwise;
    if (typeof text !== 'string' || !/^[0-9]{1,15}$/.test(text)) throw new UsageError(`--${flag} ${JSON.stringify(text)} is not a number`);
    return Number(text);
  };
  /** @param {string} flag */
  const text = (flag) => {
    const value = values[flag];
    return typeof value === 'string' ? value : '';
  };
  const strategyName = text('strategy') || 'unique-insert';
  const strategy = STRATEGIES[strategyName];
  if (strategy === undefined) throw new UsageError(`unknown strategy ${JSON.stringify(strategyName)}; expected bakery, unique-insert or column-prefix`);
  const args = {
    url: text('url'),
    strategy,
    name: text('name') || 'chaos',
    register: text('register'),
    client: text('client'),
    seconds: number('seconds', 60),
    ttlMs: number('ttl-ms', 2_000),
    holdMs: number('hold-ms', 50),
    waitMs: number('wait-ms', 10_000),
  };
  if (!args.register || !args.client || !args.url) throw new UsageError('--register, --client and --url are needed');
  return args;
}

/** A connection to the register: one request line at a time, one answer line each. */
class Register {
  /**
   * Connects to `address` (HOST:PORT).
   * @param {string} address
   * @returns {Promise<Register>}
   */
  static async connect(address) {
    const colon = address.lastIndexOf(':');
    const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
    const port = Number(address.slice(colon + 1));
    if (colon <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) throw new RegisterError(`register ${address}: not HOST:PORT`);
    const socket = net.createConnection({ host, port, noDelay: true });
    try {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no connection within ${ANSWER_DEADLINE_MS / 1000}s`)), ANSWER_DEADLINE_MS);
        socket.once('connect', () => { clearTimeout(timer); resolve(undefined); });
        socket.once('error', (e) => { clearTimeout(timer); reject(e); });
      });
    } catch (e) {
      socket.destroy();
      throw new RegisterError(`register ${address}: ${e instanceof Error ? e.message : e}`);
    }
    return new Register(socket);
  }

  /** @param {net.Socket} socket */
  constructor(socket) {
    this.socket = socket;
    this.buffer = '';
    /** @type {string[]} */
    this.lines = [];
    /** @type {Error | null} why no more answers will come */
    this.ended = null;
    /** @type {(() => void) | null} */
    this.wake = null;
    socket.setEncoding('utf8');
    socket.on('data', (/** @type {string} */ chunk) => {
      this.buffer += chunk;
      let newline;
      while ((newline = this.buffer.indexOf('\n')) >= 0) {
        this.lines.push(this.buffer.slice(0, newline));
        this.buffer = this.buffer.slice(newline + 1);
      }
      this.wake?.();
    });
    socket.on('error', (e) => { this.ended ??= e; this.wake?.(); });
    socket.on('close', () => { this.ended ??= new Error('closed'); this.wake?.(); });
  }

  /**
   * Sends one request line and resolves to the answer; a `bad ...` answer is an error.
   * @param {string} line
   * @returns {Promise<string>}
   */
  async request(line) {
    this.socket.write(`${line}\n`);
    const deadline = performance.now() + ANSWER_DEADLINE_MS;
    while (this.lines.length === 0) {
      if (this.ended) {
        throw new RegisterError(this.ended.message === 'closed'
          ? `register: closed before answering ${JSON.stringify(line)}`
          : `register: answer to ${JSON.stringify(line)}: ${this.ended.message}`);
      }
      const left = deadline - performance.now();
      if (left <= 0) throw new RegisterError(`register: no answer to ${JSON.stringify(line)} within ${ANSWER_DEADLINE_MS / 1000}s`);
      /** @type {ReturnType<typeof setTimeout> | undefined} */
      let timer;
      await new Promise((resolve) => {
        this.wake = () => resolve(undefined);
        timer = setTimeout(resolve, left);
      });
      clearTimeout(timer);
      this.wake = null;
    }
    const answer = /** @type {string} */ (this.lines.shift());
    if (answer.startsWith('bad ')) throw new RegisterError(`register refused ${JSON.stringify(line)}: ${answer.slice(4)}`);
    return answer;
  }

  close() {
    this.socket.destroy();
  }
}

/**
 * `500ms`, `5s`, `1m` or a number of seconds (baton's URL durations), in milliseconds.
 * @param {string} key
 * @param {string} value
 */
function duration(key, value) {
  const m = /^([0-9]+)(ms|s|m)?$/.exec(value);
  if (!m) throw new UrlError(`${key}=${JSON.stringify(value)} is not a duration such as 500ms, 5s or 1m`);
  return Number(m[1]) * ({ ms: 1, s: 1_000, m: 60_000 }[m[2] ?? 's'] ?? 1_000);
}

/**
 * `true`, `1`, `yes` or `false`, `0`, `no` (baton's URL flags).
 * @param {string} key
 * @param {string} value
 */
function flag(key, value) {
  if (['true', '1', 'yes'].includes(value)) return true;
  if (['false', '0', 'no'].includes(value)) return false;
  throw new UrlError(`${key}=${JSON.stringify(value)} is not true or false`);
}

/**
 * A file's content but one trailing newline (baton's password_file=).
 * @param {string} path
 */
function passwordIn(path) {
  return readFileSync(path, 'utf8').replace(/\r?\n$/, '');
}

/**
 * The query's `key=value` pairs, in order.
 * @param {string} query
 * @returns {[string, string][]}
 */
function pairs(query) {
  return query.split('&').filter((p) => p !== '').map((p) => {
    const at = p.indexOf('=');
    return at < 0 ? [p, ''] : [p.slice(0, at), p.slice(at + 1)];
  });
}

/**
 * A `postgres://` URL as a `pg.Pool` and baton-locks' PostgreSQL store.
 * @param {string} url
 * @param {{ strategy: 'unique-insert' | 'bakery' | 'column-prefix', ttl: number, timeout: number, keepAlive: boolean }} options
 * @returns {Promise<{ locker: Locker, close: () => Promise<void> }>}
 */
async function postgresLocker(url, options) {
  const { default: pg } = await import('pg');
  const { postgresStore } = await import('baton-locks/postgres');
  const [base = '', query = ''] = url.split(/\?(.*)/s);
  /** @type {{ table?: string, create?: boolean, layout?: 'one-row' | 'two-rows' }} */
  const store = {};
  /** @type {string[]} */
  const tls = [];
  /** @type {import('pg').PoolConfig} */
  const pool = { connectionTimeoutMillis: 5_000 };
  let commandTimeout;
  for (const [key, value] of pairs(query)) {
    if (['sslmode', 'sslrootcert', 'sslcert', 'sslkey'].includes(key)) tls.push(`${key}=${value}`);
    else if (key === 'password_file') pool.password = passwordIn(decodeURIComponent(value));
    else if (key === 'table') store.table = value;
    else if (key === 'create') store.create = flag(key, value);
    else if (key === 'layout' && (value === 'one-row' || value === 'two-rows')) store.layout = value;
    else if (key === 'timeout') commandTimeout = duration(key, value);
    else if (key === 'pool' && /^[0-9]+$/.test(value)) pool.max = Number(value);
    else {
      throw new UrlError(`parameter ${key}=${JSON.stringify(value)} is not one this worker can give pg and `
        + 'baton-locks (table, create, layout, timeout, pool, password_file, sslmode, sslrootcert, sslcert, sslkey)');
    }
  }
  const parsed = new URL(base);
  if (!parsed.password && pool.password === undefined && process.env.BATON_STORE_PASSWORD) pool.password = process.env.BATON_STORE_PASSWORD;
  pool.connectionString = tls.length > 0 ? `${base}?${tls.join('&')}` : base;
  const client = new pg.Pool(pool);
  // An idle connection that breaks (a restart, a partition) is reported here; without a
  // listener it would end the process. The next statement gets a new connection.
  client.on('error', (e) => { console.error(`worker.mjs: an idle PostgreSQL connection failed: ${e.message}`); });
  const locker = new Locker(postgresStore(client, store), { ...options, ...(commandTimeout === undefined ? {} : { commandTimeout }) });
  return { locker, close: () => client.end() };
}

/**
 * A `cassandra://[user[:password]@]host[:port],host/keyspace?…` URL as a `cassandra-driver`
 * Client and baton-locks' Cassandra store.
 * @param {string} url
 * @param {{ strategy: 'unique-insert' | 'bakery' | 'column-prefix', ttl: number, timeout: number, keepAlive: boolean }} options
 * @returns {Promise<{ locker: Locker, close: () => Promise<void> }>}
 */
async function cassandraLocker(url, options) {
  const { default: cassandra } = await import('cassandra-driver');
  const { cassandraStore } = await import('baton-locks/cassandra');
  const rest = url.slice(url.indexOf('://') + 3);
  const [base = '', query = ''] = rest.split(/\?(.*)/s);
  const slash = base.indexOf('/');
  const authority = slash < 0 ? base : base.slice(0, slash);
  const keyspace = (slash < 0 ? '' : base.slice(slash + 1)).replace(/\/+$/, '');
  const at = authority.lastIndexOf('@');
  const hosts = authority.slice(at + 1).split(',').map((h) => h.trim()).filter((h) => h !== '');
  if (hosts.length === 0) throw new UrlError('it names no host');
  let user;
  let password;
  if (at >= 0) {
    const info = authority.slice(0, at);
    const colon = info.indexOf(':');
    user = decodeURIComponent(colon < 0 ? info : info.slice(0, colon));
    if (colon >= 0) password = decodeURIComponent(info.slice(colon + 1));
  }
  /** @type {{ keyspace?: string, table?: string, replication?: string, create?: boolean }} */
  const store = keyspace ? { keyspace } : {};
  /** @type {{ consistency?: 'one' | 'quorum' | 'local_quorum' | 'each_quorum' | 'all', commandTimeout?: number }} */
  const lockerOptions = {};
  /** @type {import('cassandra-driver').DseClientOptions} */
  const client = { contactPoints: hosts, localDataCenter: 'datacenter1', socketOptions: { connectTimeout: 5_000 } };
  let weak = false;
  let sslmode;
  /** @type {{ ca?: string, cert?: string, key?: string }} */
  const files = {};
  for (const [key, value] of pairs(query)) {
    if (key === 'table') store.table = value;
    else if (key === 'create') store.create = flag(key, value);
    else if (key === 'consistency' && ['one', 'quorum', 'local_quorum', 'each_quorum', 'all'].includes(value.toLowerCase())) {
      lockerOptions.consistency = /** @type {'one' | 'quorum' | 'local_quorum' | 'each_quorum' | 'all'} */ (value.toLowerCase());
    } else if (key === 'allow_weak_consistency') weak = flag(key, value);
    else if (key === 'replication' && /^[0-9]+$/.test(value)) {
      store.replication = `{'class': 'SimpleStrategy', 'replication_factor': ${Number(value)}}`;
    } else if (key === 'replication' && /^[A-Za-z0-9_]+:[0-9]+(,[A-Za-z0-9_]+:[0-9]+)*$/.test(value)) {
      const factors = value.split(',').map((f) => f.split(':')).map(([dc, n]) => `'${dc}': ${Number(n)}`);
      store.replication = `{'class': 'NetworkTopologyStrategy', ${factors.join(', ')}}`;
    } else if (key === 'timeout') lockerOptions.commandTimeout = duration(key, value);
    else if (key === 'connect_timeout') client.socketOptions = { connectTimeout: duration(key, value) };
    else if (key === 'password_file') password ??= passwordIn(decodeURIComponent(value));
    else if (key === 'sslmode' && ['disable', 'require', 'verify-ca', 'verify-full'].includes(value)) sslmode = value;
    else if (key === 'sslrootcert') files.ca = decodeURIComponent(value);
    else if (key === 'sslcert') files.cert = decodeURIComponent(value);
    else if (key === 'sslkey') files.key = decodeURIComponent(value);
    else {
      throw new UrlError(`parameter ${key}=${JSON.stringify(value)} is not one this worker can give cassandra-driver `
        + 'and baton-locks (table, create, consistency, allow_weak_consistency, replication, timeout, connect_timeout, '
        + 'password_file, sslmode, sslrootcert, sslcert, sslkey)');
    }
  }
  if (lockerOptions.consistency === 'one' && !weak) {
    throw new UrlError('consistency=one is below a quorum; add allow_weak_consistency=true if only unique insert uses this store');
  }
  if (user !== undefined) {
    password ??= process.env.BATON_STORE_PASSWORD;
    if (password === undefined) throw new UrlError(`user ${user} without a password (password_file= or BATON_STORE_PASSWORD)`);
    client.authProvider = new cassandra.auth.PlainTextAuthProvider(user, password);
  }
  sslmode ??= files.ca || files.cert || files.key ? 'verify-full' : 'disable';
  if (sslmode !== 'disable') {
    client.sslOptions = {
      rejectUnauthorized: sslmode !== 'require',
      ...(files.ca ? { ca: [readFileSync(files.ca)] } : {}),
      ...(files.cert ? { cert: readFileSync(files.cert) } : {}),
      ...(files.key ? { key: readFileSync(files.key) } : {}),
      ...(sslmode === 'verify-ca' ? { checkServerIdentity: () => undefined } : {}),
    };
  }
  const driver = new cassandra.Client(client);
  const locker = new Locker(cassandraStore(driver, store), { ...options, ...lockerOptions });
  return { locker, close: () => driver.shutdown() };
}

/**
 * A Locker on the store `args.url` names, with the worker's options.
 * @param {Args} args
 */
async function openLocker(args) {
  const options = { strategy: args.strategy, ttl: args.ttlMs, timeout: args.waitMs, keepAlive: true };
  const scheme = args.url.slice(0, Math.max(0, args.url.indexOf(':'))).toLowerCase();
  try {
    if (scheme === 'memory' && /^memory:(\/\/)?$/i.test(args.url)) {
      return { locker: new Locker(new MemoryStore(), options), close: async () => {} };
    }
    if (scheme === 'postgres' || scheme === 'postgresql') return await postgresLocker(args.url, options);
    if (scheme === 'cassandra' || scheme === 'scylla') return await cassandraLocker(args.url, options);
  } catch (e) {
    if (e instanceof UrlError) throw new UrlError(`store URL ${redact(args.url)}: ${e.message}`);
    throw e;
  }
  throw new UrlError(`store URL ${redact(args.url)}: this worker opens memory:, PostgreSQL (postgres://) and Cassandra (cassandra://) stores`);
}

/** @param {string} url */
function redact(url) {
  return JSON.stringify(url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@'));
}

/**
 * The sections, until the deadline.
 * @param {Args} args
 * @param {Register} reg
 */
async function run(args, reg) {
  const c = args.client;
  await reg.request(`hello ${c} node ${process.pid}`);
  const { locker, close } = await openLocker(args);
  const tally = { sections: 0, refused: 0, lost: 0, lockErrors: 0 };
  /** @type {Set<string>} The error codes seen so far: each one's first message goes to the log. */
  const codesSeen = new Set();
  try {
    const deadline = performance.now() + args.seconds * 1000;
    while (performance.now() < deadline) {
      let lock;
      try {
        lock = await locker.lock(args.name); // waits up to the locker's timeout: TimedOutError after it
      } catch (e) {
        if (!(e instanceof BatonError)) throw e;
        tally.lockErrors += 1;
        if (!codesSeen.has(e.kind)) {
          codesSeen.add(e.kind);
          console.error(`worker.mjs ${c}: first ${e.kind}: ${e.message}`);
        }
        await reg.request(`error ${c} ${e.kind}`);
        await sleep(20);
        continue;
      }
      let released = false;
      try {
        const token = lock.token;
        await reg.request(`begin ${c} ${token}`);
        const read = await reg.request(`read ${c} ${token}`);
        await sleep(randomInt(0, args.holdMs + 1));
        if (read.startsWith('value ')) {
          const answer = await reg.request(`write ${c} ${token} ${read.slice('value '.length)}`);
          if (answer.startsWith('refused')) tally.refused += 1;
        } else {
          tally.refused += 1;
        }
        let lost = false;
        try {
          lock.check();
        } catch (e) {
          if (!(e instanceof LostError)) throw e;
          lost = true;
        }
        if (lost) {
          tally.lost += 1;
          await reg.request(`lost ${c} ${token}`);
        }
        await reg.request(`end ${c} ${token}`);
        let outcome = 'ok';
        released = true;
        try {
          await lock.release();
        } catch (e) {
          if (!(e instanceof BatonError)) throw e;
          outcome = e.kind;
        }
        await reg.request(`release ${c} ${token} ${outcome}`);
        tally.sections += 1;
      } finally {
        if (!released) await lock.release().catch(() => {}); // the register failed mid-section
      }
    }
  } finally {
    await close();
  }
  return tally;
}

async function main() {
  let args;
  try {
    args = parse(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`worker.mjs: ${e.message}`);
    return 2;
  }
  let reg;
  try {
    reg = await Register.connect(args.register);
    const t = await run(args, reg);
    console.log(`done client=${args.client} sections=${t.sections} refused=${t.refused} lost=${t.lost} lock_errors=${t.lockErrors}`);
    return 0;
  } catch (e) {
    if (!(e instanceof RegisterError || e instanceof UrlError || e instanceof BatonError)) throw e;
    console.error(`worker.mjs ${args.client}: ${e.message}`);
    return 1;
  } finally {
    reg?.close();
  }
}

// Exits once done: nothing left open (the pool, the client, the register) should keep it alive,
// and a worker that lingers would hold up the harness.
process.exit(await main());
