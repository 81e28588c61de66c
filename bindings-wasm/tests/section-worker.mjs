// A worker process of processes.test.mjs: runs SECTIONS critical sections on lock NAME in the
// store STORE (postgres or cassandra, from BATON_POSTGRES_URL / BATON_CASSANDRA_URL), as a
// separate Node process contending with its siblings.
//
//   node section-worker.mjs STORE NAME SECTIONS DIR
//
// Inside each section it
//   - creates DIR/inside with O_EXCL (EEXIST: another process is inside: an overlap),
//   - reads the number in DIR/counter and writes it plus one (only the lock protects it),
//   - appends `n token enter_ns exit_ns pid` to DIR/sections, where n is the counter's value it
//     read and the times are CLOCK_MONOTONIC (process.hrtime: one clock for every process on
//     the machine, unlike Date.now(), and never stepped),
//   - removes DIR/inside.
// Between sections it works outside the lock for 0-4 ms, so that the lock changes hands between
// processes (a process that releases would otherwise mostly take it straight back).
// It connects, prints `ready`, and starts on a line `go` on its standard input (all workers at
// once); at the end it prints `done sections=N overlaps=K` and ends by itself (pool / client
// closed).

import { appendFileSync, openSync, closeSync, readFileSync, writeFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { Locker } from 'baton-locks';
import { postgresStore } from 'baton-locks/postgres';
import { cassandraStore } from 'baton-locks/cassandra';
import { cassandraClient } from './support.mjs';

const [store, name, count, dir] = process.argv.slice(2);
const sections = Number(count);
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

const marker = join(dir, 'inside');
const counter = join(dir, 'counter');
const log = join(dir, 'sections');
let overlaps = 0;

try {
  await locker.locks(); // connected
  console.log('ready');
  await new Promise((resolve) => { process.stdin.once('data', resolve); });
  process.stdin.destroy();
  for (let i = 0; i < sections; i++) {
    const lock = await locker.lock(name);
    const enter = process.hrtime.bigint();
    let mine = true;
    try {
      closeSync(openSync(marker, 'wx'));
    } catch (e) {
      if (/** @type {any} */ (e).code !== 'EEXIST') throw e;
      overlaps += 1;
      mine = false;
    }
    const n = Number(readFileSync(counter, 'utf8') || '0');
    writeFileSync(counter, String(n + 1));
    lock.check();
    const exit = process.hrtime.bigint();
    if (mine) unlinkSync(marker);
    appendFileSync(log, `${n} ${lock.token} ${enter} ${exit} ${process.pid}\n`);
    await lock.release();
    await new Promise((resolve) => { setTimeout(resolve, Math.random() * 4); });
  }
} finally {
  await close();
}
console.log(`done sections=${sections} overlaps=${overlaps}`);
