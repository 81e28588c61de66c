// Objects across processes: 8 Node processes add one to one counter object 50 times each, on
// PostgreSQL (pg) and on Cassandra (cassandra-driver, quorum): once holding its lock
// (getAndLock, updateLockedAndRelease), once optimistically (get, updateOptimistic, retried
// from the read on VersionMismatchError). Only the object's calls protect the counter: it must
// end at exactly 400, at version 400 (one write per increment, none lost, none doubled). The Rust
// suite runs the same at 8 x 200 on every store (tests/tests/objects.rs).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Locker } from 'baton-locks';
import { postgresStore } from 'baton-locks/postgres';
import { cassandraStore } from 'baton-locks/cassandra';
import pg from 'pg';
import { fresh, here, required, start, exitWithin, cassandraClient } from './support.mjs';

const PROCESSES = 8;
const INCREMENTS = 50;

const stores = [
  { name: 'postgres', url: process.env.BATON_POSTGRES_URL, variable: 'BATON_POSTGRES_URL' },
  { name: 'cassandra', url: process.env.BATON_CASSANDRA_URL, variable: 'BATON_CASSANDRA_URL' },
];

/** The object `name` as a reader of `store` sees it. */
async function read(/** @type {typeof stores[number]} */ store, /** @type {string} */ name) {
  if (store.name === 'postgres') {
    const pool = new pg.Pool({ connectionString: store.url, max: 1, connectionTimeoutMillis: 5_000 });
    try {
      return await new Locker(postgresStore(pool)).get(name);
    } finally {
      await pool.end();
    }
  }
  const { client, keyspace } = cassandraClient(String(store.url));
  try {
    return await new Locker(cassandraStore(client, { keyspace }), { consistency: 'quorum' }).get(name);
  } finally {
    await client.shutdown();
  }
}

// The four runs at once: each mostly waits (backoffs, round trips), not computes.
describe('one counter object across processes', { concurrency: true }, () => {
for (const store of stores) {
  for (const mode of ['locked', 'optimistic']) {
    const skip = !store.url && !required && `${store.variable} is not set`;
    test(`${store.name}: ${PROCESSES} processes x ${INCREMENTS} ${mode} increments of one object end at exactly ${PROCESSES * INCREMENTS}`, { skip, timeout: 480_000 }, async (t) => {
      assert.ok(store.url, `BATON_REQUIRE_SERVICES=1 but ${store.variable} is not set`);
      const name = fresh(`counter-${mode}`);
      const runs = Array.from({ length: PROCESSES }, () => start(process.execPath, [join(here, 'object-worker.mjs'), store.name, name, String(INCREMENTS), mode], { stdin: true }));
      await Promise.all(runs.map((run) => run.line(/^ready$/, 60_000)));
      const started = performance.now();
      for (const run of runs) run.child.stdin?.end('go\n');
      const results = await Promise.all(runs.map((run, i) => exitWithin(run, 470_000, `worker ${i}`)));
      const seconds = (performance.now() - started) / 1000;
      let attempts = 0;
      for (const [i, r] of results.entries()) {
        assert.equal(r.code, 0, `worker ${i} failed (${r.code ?? r.signal}): ${r.stderr}`);
        const m = r.stdout.match(new RegExp(`done increments=${INCREMENTS} attempts=(\\d+)`));
        assert.ok(m, `worker ${i}: ${r.stdout}`);
        attempts += Number(m[1]);
      }
      const total = PROCESSES * INCREMENTS;
      const end = await read(store, name);
      assert.ok(end, 'the counter object does not exist');
      assert.equal(end.text, String(total), 'increments were lost or doubled');
      assert.equal(end.version, BigInt(total), 'one write per increment');
      t.diagnostic(`${store.name} ${mode}: ${total} increments in ${seconds.toFixed(1)} s (${(total / seconds).toFixed(0)}/s), ${attempts} attempts`);
    });
  }
}
});
