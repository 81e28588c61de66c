// The README's optimistic loop ("Objects": `add`, copied between the two README markers below,
// which objects.test.mjs checks against the README as installed), run by objects.test.mjs in
// several processes at once on one object, so that their updates collide.
//
//   node optimistic-child.mjs STORE NAME COUNT     STORE: postgres or cassandra
//
// Adds 1 to object NAME, COUNT times, then prints `attempts=N` (every attempt of every add) and
// ends by itself.

import pg from 'pg';
import { Locker, VersionMismatchError, ObjectNotFoundError, AlreadyExistsError } from 'baton-locks';
import { postgresStore } from 'baton-locks/postgres';
import { cassandraStore } from 'baton-locks/cassandra';
import { cassandraClient } from './support.mjs';

const [store, name, count] = process.argv.slice(2);

/** @type {Locker} */
let locker;
/** @type {() => Promise<void>} */
let close;
if (store === 'postgres') {
  const pool = new pg.Pool({ connectionString: process.env.BATON_POSTGRES_URL, max: 2, connectionTimeoutMillis: 5_000 });
  locker = new Locker(postgresStore(pool));
  close = () => pool.end();
} else if (store === 'cassandra') {
  const { client, keyspace } = cassandraClient(String(process.env.BATON_CASSANDRA_URL));
  locker = new Locker(cassandraStore(client, { keyspace }), { consistency: 'quorum' });
  close = () => client.shutdown();
} else {
  throw new Error(`unknown store ${store}`);
}

// README: begin
/** Adds `amount` to the number in object `name`, without its lock; resolves to the attempts made. */
async function add(name, amount) {
  for (let attempt = 1; attempt <= 100; attempt++) {
    const current = await locker.get(name); // { value, version, text }, or null: no object
    const next = String(Number(current?.text ?? '0') + amount);
    try {
      if (current === null) await locker.insert(name, next);
      else await locker.updateOptimistic(name, next, current.version);
      return attempt;
    } catch (e) {
      // Someone else wrote, inserted or removed it since we read it: read it again.
      if (e instanceof VersionMismatchError || e instanceof AlreadyExistsError || e instanceof ObjectNotFoundError) continue;
      throw e; // BusyError: someone holds its lock
    }
  }
  throw new Error('max optimistic update attempts exceeded');
}
// README: end

let attempts = 0;
try {
  for (let i = 0; i < Number(count); i++) attempts += await add(name, 1);
} finally {
  await close();
}
console.log(`attempts=${attempts}`);
