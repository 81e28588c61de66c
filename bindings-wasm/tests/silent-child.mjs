// A script written as the package README says to (a pg.Pool with connectionTimeoutMillis, a
// Locker, `lock()` with a timeout, `pool.end()` however it went), run by silent.test.mjs
// against a server that accepts connections and never answers. It prints one JSON line with
// how `lock()` ended and how long it took, then `ended` once `pool.end()` has returned; the
// test wants the process to exit by itself after that.
//
//   node silent-child.mjs lock      the README's setup; lock(name, { timeout: 2000 })
//   node silent-child.mjs pools     postgresStore on two pools without connectionTimeoutMillis
//   node silent-child.mjs quiet     postgresStore on a pool with it, and on a plain pg.Client

import pg from 'pg';
import { Locker } from 'baton-locks';
import { postgresStore } from 'baton-locks/postgres';

const url = String(process.env.DATABASE_URL);
const which = process.argv[2];

if (which === 'lock') {
  const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: 5_000 });
  const locker = new Locker(postgresStore(pool), { ttl: 30_000 });
  const started = performance.now();
  try {
    const lock = await locker.lock('nightly-report', { timeout: 2_000 });
    await lock.release();
    console.log(JSON.stringify({ outcome: 'locked', ms: performance.now() - started }));
  } catch (e) {
    const error = /** @type {any} */ (e);
    console.log(JSON.stringify({ outcome: error?.name, code: error?.code, message: error?.message, ms: performance.now() - started }));
  } finally {
    await pool.end();
  }
  console.log('ended');
} else if (which === 'pools') {
  const pools = [new pg.Pool({ connectionString: url }), new pg.Pool({ connectionString: url, connectionTimeoutMillis: 0 })];
  for (const pool of pools) postgresStore(pool);
  await Promise.all(pools.map((p) => p.end()));
  console.log('ended');
} else if (which === 'quiet') {
  const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: 5_000 });
  postgresStore(pool);
  postgresStore(new pg.Client({ connectionString: url }));
  await pool.end();
  console.log('ended');
} else {
  throw new Error(`unknown case ${which}`);
}
