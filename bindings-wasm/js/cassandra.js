// A Cassandra (or ScyllaDB) store for baton-locks through `cassandra-driver` 4.x: it runs the
// statements baton's Rust core gives it, prepared, at the consistency each one asks for, on
// the same keyspace and table (`baton.baton_locks` by default) as the Rust stores and the `baton`
// command, so all of them see one another's locks.

import { hostname } from 'node:os';
import { InvalidOptionError } from './errors.js';

/** cassandra-driver's `types.consistencies`. */
const LEVELS = {
  one: 0x01, quorum: 0x04, all: 0x05, localQuorum: 0x06, eachQuorum: 0x07, serial: 0x08, localSerial: 0x09,
};

/** Protocol error codes (`types.responseErrorCodes`) by baton's name for them. */
const SERVER = new Map([
  [0x0000, 'serverError'], [0x1000, 'unavailable'], [0x1001, 'overloaded'], [0x1002, 'isBootstrapping'],
  [0x1100, 'writeTimeout'], [0x1200, 'readTimeout'], [0x1300, 'readFailure'], [0x1500, 'writeFailure'],
  [0x2500, 'unprepared'],
]);

/** The bigint and counter type codes, whose values come as `Long`s unless `useBigIntAsLong`. */
const LONG_TYPES = new Set([0x0002, 0x0005]);

/**
 * @param {unknown} e
 * @returns {Error}
 */
function classified(e) {
  const error = e instanceof Error ? e : new Error(String(e));
  const any = /** @type {any} */ (error);
  let cause = 'broken';
  const extra = {};
  switch (error.name) {
    case 'ResponseError':
      cause = 'server';
      Object.assign(extra, { server: SERVER.get(any.code) ?? 'other' });
      break;
    case 'NoHostAvailableError': {
      // Not sent, unless some host timed out or answered (then it may have been applied).
      const inner = Object.values(any.innerErrors ?? {});
      cause = inner.some((i) => i?.name === 'OperationTimedOutError' || i?.name === 'ResponseError') ? 'broken' : 'notSent';
      break;
    }
    case 'BusyConnectionError': cause = 'notSent'; break;
    case 'OperationTimedOutError': cause = 'clientTimeout'; break;
    case 'ArgumentError': case 'TypeError': case 'NotSupportedError': cause = 'invalid'; break;
    case 'AuthenticationError': case 'DriverInternalError': cause = 'other'; break;
    default: cause = 'broken';
  }
  return Object.assign(error, { batonCause: cause }, extra);
}

/** @param {string} name */
function level(name) {
  const value = LEVELS[/** @type {keyof typeof LEVELS} */ (name)];
  if (value === undefined) throw Object.assign(new TypeError(`unknown consistency ${name}`), { batonCause: 'invalid' });
  return value;
}

/** @param {unknown} v */
function toCql(v) {
  return typeof v === 'bigint' ? v.toString() : v;
}

/**
 * Wraps a connected (or connectable) `cassandra-driver` Client as a baton store.
 * @param {import('cassandra-driver').Client} client
 * @param {{ keyspace?: string, table?: string, replication?: string, create?: boolean }} [options]
 */
export function cassandraStore(client, options = {}) {
  if (client === null || typeof client !== 'object' || typeof (/** @type {any} */ (client).execute) !== 'function') {
    throw new InvalidOptionError('cassandraStore needs a cassandra-driver Client');
  }
  const { keyspace = 'baton', table = 'baton_locks', replication, create = true, ...unknown } = options;
  const extra = Object.keys(unknown);
  if (extra.length > 0) throw new InvalidOptionError(`unknown cassandraStore option ${JSON.stringify(extra[0])} (known: keyspace, table, replication, create)`);
  const points = /** @type {any} */ (client).options?.contactPoints ?? [];
  return {
    kind: 'cql',
    keyspace,
    table,
    replication,
    create,
    host: hostname(),
    description: `cassandra://${points.join(',')}/${keyspace}.${table}`,

    /**
     * @param {string} cql
     * @param {unknown[]} values
     * @param {{ consistency: string, serialConsistency?: string, idempotent: boolean, fetchSize?: number, pageState?: string }} o
     */
    async execute(cql, values, o) {
      /** @type {Record<string, unknown>} */
      const query = { prepare: true, consistency: level(o.consistency), isIdempotent: o.idempotent };
      if (o.serialConsistency !== undefined) query.serialConsistency = level(o.serialConsistency);
      if (o.fetchSize !== undefined) Object.assign(query, { fetchSize: o.fetchSize, autoPage: false });
      if (o.pageState !== undefined) query.pageState = o.pageState;
      let result;
      try {
        result = await client.execute(cql, values.map(toCql), values.length > 0 ? query : { ...query, prepare: false });
      } catch (e) {
        throw classified(e);
      }
      const columns = result.columns ?? [];
      const longs = columns.map((c) => LONG_TYPES.has(c.type?.code));
      const rows = (result.rows ?? []).map((row) => row.values().map((v, i) => (longs[i] && v !== null && typeof v !== 'bigint' ? BigInt(String(v)) : v)));
      return { columns: columns.map((c) => c.name), rows, pageState: result.pageState ?? null };
    },

    /**
     * @param {{ query: string, params: unknown[] }[]} statements
     * @param {{ consistency: string, serialConsistency?: string, idempotent?: boolean }} o
     */
    async batch(statements, o) {
      /** @type {Record<string, unknown>} */
      const options = { prepare: true, logged: true, consistency: level(o.consistency), isIdempotent: o.idempotent ?? true };
      if (o.serialConsistency !== undefined) options.serialConsistency = level(o.serialConsistency);
      let result;
      try {
        result = await client.batch(
          statements.map((s) => ({ query: s.query, params: s.params.map(toCql) })),
          options,
        );
      } catch (e) {
        throw classified(e);
      }
      const columns = result?.columns ?? [];
      const rows = (result?.rows ?? []).map((row) => row.values());
      return { columns: columns.map((c) => c.name), rows, pageState: null };
    },
  };
}
