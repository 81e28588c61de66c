// A two-row PostgreSQL table moved to one row by `baton migrate` while this package's lockers
// use it (docs/one-row-claim.md, "Phase 2, revised"): a locker opened before the move goes on
// without a restart, on names moved, on a name left held for a later run, and on new names;
// one opened between the runs too; every name's tokens keep increasing across the move.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { targetsClosedAfter, fresh, baton, commandsSkip, postgresLayout, entries } from './support.mjs';

/** @typedef {import('baton-locks').Locker} Locker */

const BUSY = 75;

// A table of the two-row layout made for this file (its own process), so that moving it
// changes no other file's table.
const target = targetsClosedAfter({ layouts: true }).find((t) => t.name === 'postgres (two rows)');
assert.ok(target);

/**
 * Locks and releases `name` through `locker`; resolves to the lock's token.
 * @param {Locker} locker
 * @param {string} name
 */
async function take(locker, name) {
  const lock = await locker.lock(name, { timeout: 10_000 });
  const token = lock.token;
  await lock.release();
  return token;
}

describe('baton migrate under open lockers, PostgreSQL', { skip: target.skip || commandsSkip, timeout: 120_000 }, () => {
  test('lockers opened before and between the runs go on, tokens increasing, no restart', async () => {
    const url = /** @type {string} */ (target.url);
    const unique = target.locker({ strategy: 'unique-insert', ttl: 30_000 });
    const bakery = target.locker({ strategy: 'bakery', ttl: 30_000 });
    const [moved, held, ticketed] = [fresh('moved'), fresh('held'), fresh('ticketed')];
    /** @type {Map<string, bigint>} */
    const last = new Map();
    /** @param {string} name @param {bigint} token @param {string} when */
    const larger = (name, token, when) => {
      const before = last.get(name) ?? 0n;
      assert.ok(token > before, `${when}: ${name}'s token ${token} after ${before}`);
      last.set(name, token);
    };
    larger(moved, await take(unique, moved), 'two rows');
    larger(ticketed, await take(bakery, ticketed), 'two rows');
    const holding = await unique.lock(held);
    larger(held, holding.token, 'two rows');
    assert.equal(await postgresLayout(target), 'two-rows');

    // The first run moves every name but the held one and says to run again.
    const first = await baton(['migrate', '--json'], url);
    assert.equal(first.code, BUSY, `${first.stdout}${first.stderr}`);
    const report = JSON.parse(first.stdout);
    assert.deepEqual(report.held, [held], first.stdout);
    assert.equal(report.finished, false, first.stdout);

    // The lockers opened before it: the moved names (each meets its marker once, reads the
    // table again, and runs in one row), the held one (still in two rows) listed and kept,
    // and a new name.
    larger(moved, await take(unique, moved), 'moved, a locker from before');
    larger(ticketed, await take(bakery, ticketed), 'moved, bakery, a locker from before');
    assert.equal(await unique.tryLock(held), null, 'the held name is busy');
    assert.deepEqual((await entries(unique, held)).map((e) => e.owner), [holding.owner]);
    const added = fresh('added');
    larger(added, await take(unique, added), 'a new name while the table is being moved');
    // A locker opened now reads the table as being moved.
    const between = target.locker({ strategy: 'unique-insert', ttl: 30_000 });
    larger(moved, await take(between, moved), 'moved, a locker from between the runs');
    await holding.release();
    larger(held, await take(between, held), 'left in two rows, a locker from between the runs');

    // The second run finishes; the same lockers go on in one row.
    const second = await baton(['migrate', '--json'], url);
    assert.equal(second.code, 0, `${second.stdout}${second.stderr}`);
    assert.equal(JSON.parse(second.stdout).finished, true, second.stdout);
    assert.equal(await postgresLayout(target), 'one-row');
    for (const [locker, name] of /** @type {const} */ ([[unique, held], [unique, moved], [bakery, ticketed], [between, added]])) {
      larger(name, await take(locker, name), 'one row');
    }
    const after = fresh('after');
    larger(after, await take(unique, after), 'a new name after the move');
  });
});
