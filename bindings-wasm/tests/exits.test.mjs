// No unhandled rejection, and no process left alive after its work: a script (exit-child.mjs)
// that goes through every path of the API on one store, then closes its pool or client, must
// end by itself, promptly, with status 0 and nothing on stderr. And in this process: the same
// failing paths raise no unhandled rejection.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Locker, MemoryStore, LostError } from 'baton-locks';
import { targets, here, start, exitWithin, aborted, within, fresh } from './support.mjs';

const EXIT_WITHIN = 10_000;

test('the script\'s check catches an unhandled rejection (self test)', async () => {
  const run = start(process.execPath, [join(here, 'exit-child.mjs'), 'selftest']);
  const r = await exitWithin(run, EXIT_WITHIN, 'the self test');
  assert.equal(r.code, 70, `${r.stdout}${r.stderr}`);
  assert.match(r.stderr, /unhandled rejection:.*on purpose/s);
});

for (const target of targets()) {
  test(`${target.name}: a script that takes and releases locks ends by itself, status 0, no unhandled rejection`, { skip: target.skip, timeout: 90_000 }, async (t) => {
    assert.ok(target.url, `BATON_REQUIRE_SERVICES=1 but no URL for ${target.name}`);
    const run = start(process.execPath, [join(here, 'exit-child.mjs'), target.name]);
    await run.line(/^done$/, 60_000);
    const done = performance.now();
    const r = await exitWithin(run, EXIT_WITHIN, `the ${target.name} script, after its work`);
    t.diagnostic(`${target.name}: exited ${(r.at - done).toFixed(0)} ms after printing done`);
    assert.equal(r.stderr, '', 'the script wrote on stderr');
    assert.equal(r.code, 0, `status ${r.code ?? r.signal}`);
  });
}

test('in this process: failing paths leave no unhandled rejection', async () => {
  /** @type {unknown[]} */
  const unhandled = [];
  const listener = (/** @type {unknown} */ e) => { unhandled.push(e); };
  process.on('unhandledRejection', listener);
  try {
    const store = new MemoryStore();
    const [a, operator] = [new Locker(store, { ttl: 300 }), new Locker(store)];
    const name = fresh('unhandled');
    // A lost lease nobody listens to, and never released.
    const lost = await a.lock(name);
    await operator.forceRelease(name);
    await within(aborted(lost.signal), 2_000, 'the loss');
    assert.ok(lost.signal.reason instanceof LostError);
    await assert.rejects(lost.release(), LostError);
    // Calls whose rejections are handled the usual way.
    await assert.rejects(a.lock(''));
    await assert.rejects(a.lock(name, { ttl: -1 }));
    const held = await a.lock(name);
    await assert.rejects(a.lock(name, { timeout: 10 }));
    await assert.rejects(a.lock(name, { signal: AbortSignal.timeout(20), timeout: 5_000 }));
    await held.release();
    await assert.rejects(held.release());
    // Give pending rejections their turn to be reported.
    await new Promise((resolve) => { setImmediate(resolve); });
    await new Promise((resolve) => { setImmediate(resolve); });
    assert.deepEqual(unhandled.map(String), []);
  } finally {
    process.off('unhandledRejection', listener);
  }
});
