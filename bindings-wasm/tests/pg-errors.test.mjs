// PostgreSQL ends a connection that baton-locks is using (its backend terminated, as when the
// server's processes are killed and restarted): the lock call ends with a typed error, or
// succeeds on a retry, and the process lives on. pg emits a broken connection's error as 'error'
// on the client when no statement is out on it, and a pool does not listen to the clients it
// lends out: with nobody listening, Node kills the process ("Unhandled 'error' event"). The
// scripts (pg-errors-child.mjs) listen to no 'error' themselves, as the README's examples; see
// there how each case makes its moment certain.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { here, start, exitWithin, required } from './support.mjs';

const url = process.env.BATON_POSTGRES_URL;
const skip = !url && !required ? 'BATON_POSTGRES_URL is not set' : false;

/** Runs pg-errors-child.mjs `which`; its JSON lines by step, once it has ended by itself. */
async function child(/** @type {string} */ which) {
  assert.ok(url, 'BATON_REQUIRE_SERVICES=1 but BATON_POSTGRES_URL is not set');
  const run = start(process.execPath, [join(here, 'pg-errors-child.mjs'), which]);
  const exit = await exitWithin(run, 60_000, `pg-errors-child.mjs ${which}`);
  const output = `status ${exit.code ?? exit.signal}\nstdout:\n${exit.stdout}\nstderr:\n${exit.stderr}`;
  assert.doesNotMatch(exit.stderr, /Unhandled 'error' event/, `the process was killed by an error nobody listened to: ${output}`);
  assert.equal(exit.code, 0, output);
  assert.equal(exit.stderr, '', output);
  assert.match(exit.stdout, /^done$/m, output);
  /** @type {Record<string, any>} */
  const steps = {};
  for (const line of exit.stdout.split('\n').filter((l) => l.startsWith('{'))) {
    const parsed = JSON.parse(line);
    steps[parsed.step] = parsed;
  }
  return steps;
}

describe('PostgreSQL ends the connection baton-locks is using', { skip }, () => {
  test('from a pool, while no statement is out: StoreUnavailableError, and the next lock call succeeds', { timeout: 90_000 }, async (t) => {
    const { terminated, after, pool } = await child('idle');
    t.diagnostic(`terminated: ${JSON.stringify(terminated)}`);
    assert.equal(terminated.outcome, 'StoreUnavailableError', terminated.message);
    assert.equal(terminated.code, 8);
    assert.match(terminated.message, /57P01/, 'the error says what the server said');
    assert.ok(terminated.broken >= 1 && terminated.broken === terminated.lent, `every connection lent out was broken: ${JSON.stringify(terminated)}`);
    // The pool closed each broken connection (given back as broken) and made new ones.
    assert.equal(after.outcome, 'locked', after.message);
    assert.equal(pool.removed, pool.broken, `the pool closed every broken connection: ${JSON.stringify(pool)}`);
  });

  test('from a pool, read as the pool hands the connection over: StoreUnavailableError, and the next lock call succeeds', { timeout: 90_000 }, async (t) => {
    const { terminated, after, pool } = await child('handover');
    t.diagnostic(`terminated: ${JSON.stringify(terminated)}`);
    assert.equal(terminated.outcome, 'StoreUnavailableError', terminated.message);
    assert.equal(terminated.code, 8);
    assert.ok(terminated.broken >= 1 && terminated.broken === terminated.lent, `every connection lent out was broken: ${JSON.stringify(terminated)}`);
    assert.equal(after.outcome, 'locked', after.message);
    assert.equal(pool.removed, pool.broken, `the pool closed every broken connection: ${JSON.stringify(pool)}`);
  });

  test('a single pg.Client, while no statement is out: StoreUnavailableError, and no listener left on it', { timeout: 90_000 }, async (t) => {
    const { before, terminated } = await child('client');
    t.diagnostic(`terminated: ${JSON.stringify(terminated)}`);
    assert.equal(before.outcome, 'locked', before.message);
    assert.equal(before.listeners, 0, 'a listener of the adapter was left on the client after a lock call');
    assert.equal(terminated.outcome, 'StoreUnavailableError', terminated.message);
    assert.equal(terminated.code, 8);
    assert.equal(terminated.listeners, 0, 'a listener of the adapter was left on the client after a failed lock call');
  });

  test('from a pool, while a statement is out: the connection is given back as broken, and the retry succeeds', { timeout: 90_000 }, async (t) => {
    const { terminated, pool } = await child('statement');
    t.diagnostic(`terminated: ${JSON.stringify(terminated)}`);
    assert.equal(terminated.outcome, 'locked', terminated.message);
    assert.equal(pool.broken, 1);
    assert.equal(pool.removed, 1, 'the pool closed the broken connection');
  });
});
