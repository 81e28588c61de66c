// A worker process of object-processes.test.mjs: adds one to the number in object NAME, COUNT
// times, in the store STORE (postgres or cassandra, from BATON_POSTGRES_URL /
// BATON_CASSANDRA_URL), contending with its siblings.
//
//   node object-worker.mjs STORE NAME COUNT MODE
//
// MODE `locked`: getAndLock, then updateLockedAndRelease with the value plus one (insertLocked
// and unlock when there is no object yet). MODE `optimistic`: get, then updateOptimistic at the
// version read (insert when there is none), again from the read on VersionMismatchError,
// AlreadyExistsError or ObjectNotFoundError. Nothing else protects the object.
// It connects, prints `ready`, and starts on a line `go` on its standard input (all workers at
// once); at the end it prints `done increments=N attempts=M` and ends by itself.

import pg from 'pg';
import {
  Locker, VersionMismatchError, AlreadyExistsError, ObjectNotFoundError,
} from 'baton-locks';
import { postgresStore } from 'baton-locks/postgres';
import { cassandraStore } from 'baton-locks/cassandra';
import { cassandraClient } from './support.mjs';

const [store, name, count, mode] = process.argv.slice(2);
const increments = Number(count);
const options = { strategy: 'unique-insert', ttl: 10_000, timeout: 120_000 };

let locker;
let close;
if (store === 'postgres') {
  const pool = new pg.Pool({ connectionString: process.env.BATON_POSTGRES_URL, max: 2, connectionTimeoutMillis: 5_000 });
  locker = new Locker(postgresStore(pool), options);
  close = () => pool.end();
} else if (store === 'cassandra') {
  const { client, keyspace } = cassandraClient(String(process.env.BATON_CASSANDRA_URL));
  locker = new Locker(cassandraStore(client, { keyspace }), { ...options, consistency: 'quorum' });
  close = () => client.shutdown();
} else {
  throw new Error(`unknown store ${store}`);
}

const next = (/** @type {string | null} */ text) => String(Number(text ?? '0') + 1);
let attempts = 0;

try {
  await locker.locks(); // connected
  console.log('ready');
  await new Promise((resolve) => { process.stdin.once('data', resolve); });
  process.stdin.destroy();
  for (let i = 0; i < increments; i++) {
    if (mode === 'locked') {
      attempts += 1;
      const counter = await locker.getAndLock(name);
      if (counter.value === null) {
        await counter.insertLocked(next(null));
        await counter.unlock();
      } else {
        await counter.updateLockedAndRelease(next(counter.text));
      }
    } else if (mode === 'optimistic') {
      for (;;) {
        attempts += 1;
        const current = await locker.get(name);
        try {
          if (current === null) await locker.insert(name, next(null));
          else await locker.updateOptimistic(name, next(current.text), current.version);
          break;
        } catch (e) {
          if (!(e instanceof VersionMismatchError || e instanceof AlreadyExistsError || e instanceof ObjectNotFoundError)) throw e;
        }
      }
    } else {
      throw new Error(`unknown mode ${mode}`);
    }
  }
} finally {
  await close();
}
console.log(`done increments=${increments} attempts=${attempts}`);
