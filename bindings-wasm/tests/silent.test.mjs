// A PostgreSQL server that accepts connections and never answers (a hung database, a black-holed
// proxy): a script set up as the README says (a pg.Pool with connectionTimeoutMillis) must see
// `lock(name, { timeout })` reject within its timeout, and then end by itself once it has
// ended its pool. And `postgresStore` warns, once, about a pool without connectionTimeoutMillis,
// the setting without which the pool's connection attempts, and `pool.end()`, never end.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { join } from 'node:path';
import { here, start, exitWithin } from './support.mjs';

/** The lock's timeout in the script, and how much later its rejection may come. */
const TIMEOUT = 2_000;
const TOLERANCE = 1_500;
const WARNING = /\[BATON_PG_NO_CONNECTION_TIMEOUT\] BatonWarning: postgresStore was given a pg\.Pool without connectionTimeoutMillis/g;

/** A TCP server on 127.0.0.1 that accepts connections and never writes a byte. */
const sockets = new Set();
const silent = net.createServer((s) => { sockets.add(s); s.on('error', () => {}); s.on('close', () => sockets.delete(s)); });
/** @type {Promise<string>} */
const silentUrl = new Promise((resolve) => {
  silent.listen(0, '127.0.0.1', () => {
    const { port } = /** @type {net.AddressInfo} */ (silent.address());
    resolve(`postgres://baton:baton@127.0.0.1:${port}/baton`);
  });
});
after(() => { for (const s of sockets) s.destroy(); silent.close(); });

/** Runs silent-child.mjs `which` against the silent server. */
async function child(/** @type {string} */ which) {
  return start(process.execPath, [join(here, 'silent-child.mjs'), which], { env: { DATABASE_URL: await silentUrl } });
}

test(`lock(name, { timeout: ${TIMEOUT} }) against a silent server rejects within the timeout, and the script ends by itself`, { timeout: 90_000 }, async (t) => {
  const run = await child('lock');
  const [line] = await run.line(/^\{.*\}$/, 45_000);
  const result = JSON.parse(line);
  t.diagnostic(`lock() ended after ${result.ms.toFixed(0)} ms: ${result.outcome} ${result.message ?? ''}`);
  await run.line(/^ended$/, 30_000);
  const ended = performance.now();
  // connectionTimeoutMillis (5 s in the script) ends the pool's pending connection attempt;
  // `pool.end()` returns then, and nothing else may keep the process alive.
  const exit = await exitWithin(run, 10_000, 'the script, after pool.end()');
  t.diagnostic(`exited ${(exit.at - ended).toFixed(0)} ms after pool.end() returned`);
  assert.equal(exit.code, 0, `status ${exit.code ?? exit.signal}: ${exit.stderr}`);
  assert.doesNotMatch(exit.stderr, WARNING, 'a pool with connectionTimeoutMillis got the warning');
  assert.equal(result.outcome, 'StoreUnavailableError', `lock() should reject with StoreUnavailableError: ${line}`);
  assert.equal(result.code, 8);
  assert.ok(result.ms <= TIMEOUT + TOLERANCE, `lock() rejected after ${result.ms.toFixed(0)} ms, more than its timeout ${TIMEOUT} ms + ${TOLERANCE} ms`);
});

test('postgresStore warns once about pools without connectionTimeoutMillis (process.emitWarning)', { timeout: 30_000 }, async () => {
  const run = await child('pools');
  const exit = await exitWithin(run, 20_000, 'the script');
  assert.equal(exit.code, 0, exit.stderr);
  assert.equal([...exit.stderr.matchAll(WARNING)].length, 1, `one warning for two pools: ${exit.stderr}`);
});

test('postgresStore does not warn about a pool with connectionTimeoutMillis, nor a pg.Client', { timeout: 30_000 }, async () => {
  const run = await child('quiet');
  const exit = await exitWithin(run, 20_000, 'the script');
  assert.equal(exit.code, 0, exit.stderr);
  assert.equal(exit.stderr, '', 'nothing on stderr');
});
