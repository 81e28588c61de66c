// The package, the `baton` command and the Rust library on one table, both ways, on PostgreSQL
// and Cassandra, for every strategy:
//   - a lock held from JavaScript is listed by `baton locks` (same owner, token, strategy), makes
//     `baton run --no-wait` exit 75 (busy), and its release lets a waiting `baton run` in with a
//     larger fencing token;
//   - a lock held by a Rust process (`lock_worker hold`) makes tryLock() return null and is
//     listed by locker.locks(); once the process is killed and `baton release --force` breaks
//     its lock, JavaScript gets it at once, with a larger token;
//   - `baton release --force`, run just after a renewal, makes the JavaScript holder's
//     `lock.signal` abort within a third of the TTL (its next renewal) plus a round trip.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LostError } from 'baton-locks';
import {
  STRATEGIES, targetsClosedAfter, fresh, until, entries, baton, start, exitWithin, aborted, within, show,
  commandsSkip, worker, required,
} from './support.mjs';

const BUSY = 75;

for (const target of targetsClosedAfter().filter((t) => t.shared)) {
  const skip = target.skip || commandsSkip;
  describe(`${target.name} with the baton command and the Rust library`, { skip }, () => {
    test('the commands are configured', () => {
      assert.ok(process.env.BATON_CLI && worker, `BATON_REQUIRE_SERVICES=${required ? 1 : 0} but BATON_CLI or BATON_LOCK_WORKER is not set`);
    });

    for (const strategy of STRATEGIES) {
      describe(strategy, { concurrency: true, timeout: 90_000 }, () => {
        const url = /** @type {string} */ (target.url);

        test('a lock held from JavaScript: listed by `baton locks`, busy for `baton run --no-wait`, then handed over', async () => {
          const js = target.locker({ strategy, ttl: 30_000 });
          const name = fresh('js-held');
          const lock = await js.lock(name);

          const listed = await baton(['locks', '--json'], url);
          assert.equal(listed.code, 0, listed.stderr);
          const mine = JSON.parse(listed.stdout).locks.filter((/** @type {any} */ l) => l.name === name);
          assert.equal(mine.length, 1, listed.stdout);
          assert.equal(mine[0].owner, lock.owner);
          assert.equal(mine[0].strategy, strategy);
          assert.equal(mine[0].state, 'held');
          assert.equal(BigInt(mine[0].token), lock.token);
          assert.equal(mine[0].pid, process.pid);

          const busy = await baton(['run', '--no-wait', '--lock', name, '--strategy', strategy, '--', 'true'], url);
          assert.equal(busy.code, BUSY, `baton run --no-wait should exit ${BUSY} (busy): ${busy.stderr}`);
          const timedOut = await baton(['run', '--wait', '300ms', '--lock', name, '--strategy', strategy, '--', 'true'], url);
          assert.equal(timedOut.code, BUSY, `baton run --wait 300ms should exit ${BUSY}: ${timedOut.stderr}`);
          assert.ok(lock.held);
          assert.deepEqual((await entries(js, name)).map((e) => e.owner), [lock.owner], 'the refused commands left entries');

          // A waiting `baton run` gets it when JavaScript releases, with a larger token.
          const waiting = start(/** @type {string} */ (process.env.BATON_CLI), ['run', '--wait', '60s', '--lock', name, '--strategy', strategy, '--store', url, '--', 'sh', '-c', 'echo "token=$BATON_FENCING_TOKEN"']);
          // Once it waits (bakery: its ticket is visible), release. A unique-insert waiter leaves
          // no entry, and a column-prefix waiter's column lives only for the few milliseconds of
          // each attempt (it removes it before backing off, up to a second by default).
          if (strategy === 'bakery') {
            await until('the command\'s entry appears', async () => (await entries(js, name)).length > 1, { limit: 20_000, every: 20 });
          }
          await lock.release();
          const ran = await exitWithin(waiting, 60_000, 'baton run --wait');
          assert.equal(ran.code, 0, ran.stderr);
          const token = BigInt(/** @type {RegExpMatchArray} */ (ran.stdout.match(/token=(\d+)/))[1]);
          assert.ok(token > lock.token, `the command's token ${token} is not above JavaScript's ${lock.token}`);
          const again = await js.lock(name);
          assert.ok(again.token > token, `JavaScript's next token ${again.token} is not above the command's ${token}`);
          await again.release();
          assert.deepEqual(await entries(js, name), []);
        });

        test('a lock held by Rust (lock_worker): tryLock() null, listed; killed and force-released, JavaScript gets it', async () => {
          const js = target.locker({ strategy });
          const name = fresh('rust-held');
          const holder = start(/** @type {string} */ (worker), ['hold', '--url', url, '--strategy', strategy, '--name', name, '--ttl-ms', '30000', '--limit-s', '60']);
          const [, heldToken] = await holder.line(/^held (\d+) \d+$/, 30_000);
          const token = BigInt(heldToken);

          assert.equal(await js.tryLock(name), null);
          await assert.rejects(js.lock(name, { timeout: 200 }), (/** @type {any} */ e) => e.code === 1);
          const listed = await entries(js, name);
          assert.equal(listed.length, 1, show(listed));
          assert.equal(listed[0].strategy, strategy);
          assert.equal(listed[0].state, 'held');
          assert.equal(listed[0].token, token);
          assert.ok(listed[0].owner.includes(`:${holder.child.pid}:`), `the owner ${listed[0].owner} names the worker's pid ${holder.child.pid}`);

          // The worker dies without releasing: its lock would last its TTL (30 s). Break it.
          holder.child.kill('SIGKILL');
          await holder.exited;
          assert.equal(await js.tryLock(name), null, 'the dead worker\'s lock ended before its TTL by itself');
          const broke = await baton(['release', '--force', name, '--json'], url);
          assert.equal(broke.code, 0, broke.stderr);
          assert.deepEqual(JSON.parse(broke.stdout).released.map((/** @type {any} */ r) => r.owner), [listed[0].owner], broke.stdout);

          const mine = await js.tryLock(name);
          assert.ok(mine, 'JavaScript did not get the lock after `baton release --force`');
          assert.ok(mine.token > token, `token ${mine.token} is not above the Rust holder's ${token}`);
          const shown = await baton(['locks', '--json'], url);
          assert.deepEqual(JSON.parse(shown.stdout).locks.filter((/** @type {any} */ l) => l.name === name).map((/** @type {any} */ l) => l.owner), [mine.owner]);
          await mine.release();
        });

        test('`baton release --force` aborts the JavaScript holder\'s signal within a third of the TTL', async (t) => {
          const ttl = 3_000;
          const js = target.locker({ strategy, ttl });
          const name = fresh('forced');
          const lock = await js.lock(name);
          const seen = aborted(lock.signal);
          // Right after a renewal (remaining goes up): the longest wait for the next one.
          let low = lock.remaining;
          await until('a renewal', () => {
            const now = lock.remaining;
            const renewed = now > low;
            low = now;
            return renewed;
          }, { limit: ttl, every: 2 });
          const sent = performance.now();
          const broke = await baton(['release', '--force', name], url);
          const done = performance.now();
          assert.equal(broke.code, 0, broke.stderr);
          assert.equal(lock.signal.aborted, false, 'aborted before the release was done?');
          const at = await within(seen, ttl, 'lock.signal aborts');
          const fromExit = at - done;
          const fromStart = at - sent;
          t.diagnostic(`${target.name} ${strategy}: signal aborted ${fromExit.toFixed(0)} ms after \`baton release --force\` exited (${fromStart.toFixed(0)} ms after it started; the command took ${broke.ms.toFixed(0)} ms); bound ${ttl / 3 + 200} ms`);
          assert.ok(fromExit <= ttl / 3 + 200, `lock.signal aborted ${fromExit.toFixed(0)} ms after the release (ttl ${ttl} ms: bound ${ttl / 3 + 200} ms)`);
          assert.ok(lock.signal.reason instanceof LostError, `reason: ${lock.signal.reason}`);
          assert.equal(lock.held, false);
          await assert.rejects(lock.release(), LostError);
          // The command gets it now, with a larger token.
          const ran = await baton(['run', '--no-wait', '--lock', name, '--strategy', strategy, '--', 'sh', '-c', 'echo "token=$BATON_FENCING_TOKEN"'], url);
          assert.equal(ran.code, 0, ran.stderr);
          assert.ok(BigInt(/** @type {RegExpMatchArray} */ (ran.stdout.match(/token=(\d+)/))[1]) > lock.token);
        });
      });
    }
  });
}
