// Objects shared with the Rust library, on PostgreSQL and Cassandra, for every strategy: the
// `baton` command's `get`, `put` and `remove` (the Rust API's get, insert, update_optimistic and
// remove) and the package on one object, both ways:
//   - bytes written by Rust (NUL, not UTF-8) are read by Node exactly, at Rust's version, and
//     bytes written by Node are printed by `baton get` exactly, at Node's version;
//   - each side's optimistic update is refused to the other at a stale version;
//   - an object locked from Node is refused to `baton put` and `baton remove` (exit 75), and one
//     locked by a Rust process (`lock_worker hold`) to Node's writes (BusyError naming it).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { BusyError, VersionMismatchError, TimedOutError } from 'baton-locks';
import {
  STRATEGIES, targetsClosedAfter, fresh, start, exitWithin, commandsSkip, worker, required, cli,
} from './support.mjs';

const [CONFLICT, NO_OBJECT, LOCKED] = [65, 66, 75];

/**
 * Runs `baton --store URL ARGS` with `input` on its standard input; resolves to its exit code
 * and its output as bytes (never rejects).
 * @param {string[]} args
 * @param {string} store
 * @param {Uint8Array} [input]
 * @returns {Promise<{ code: number | null, stdout: Buffer, stderr: string }>}
 */
function baton(args, store, input) {
  assert.ok(cli, 'BATON_REQUIRE_SERVICES=1 but BATON_CLI is not set');
  return new Promise((resolve) => {
    const child = spawn(cli, ['--store', store, ...args], { stdio: ['pipe', 'pipe', 'pipe'], timeout: 60_000 });
    /** @type {Buffer[]} */
    const out = [];
    let stderr = '';
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => { stderr += d; });
    child.stdin.on('error', () => {}); // a command that exits before reading its input
    child.stdin.end(input ?? new Uint8Array(0));
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr }));
  });
}

for (const target of targetsClosedAfter().filter((t) => t.shared)) {
  const skip = target.skip || commandsSkip;
  describe(`${target.name}: objects shared with the baton command and the Rust library`, { skip }, () => {
    test('the commands are configured', () => {
      assert.ok(cli && worker, `BATON_REQUIRE_SERVICES=${required ? 1 : 0} but BATON_CLI or BATON_LOCK_WORKER is not set`);
    });

    for (const strategy of STRATEGIES) {
      describe(strategy, { concurrency: true, timeout: 120_000 }, () => {
        const url = /** @type {string} */ (target.url);
        const s = ['--strategy', strategy];

        test('bytes written by Rust are read by Node exactly, and back; stale versions are refused both ways', async () => {
          const node = target.locker({ strategy });
          const name = fresh('object-interop');
          const fromRust = new Uint8Array([0, 0xff, 0x41, 0x00, 0xc3, 0x28, 0x0a]);
          const put = await baton(['put', name, ...s], url, fromRust);
          assert.equal(put.code, 0, put.stderr);
          assert.equal(put.stdout.toString().trim(), '1');
          const seen = await node.get(name);
          assert.ok(seen);
          assert.deepEqual(seen.value, fromRust);
          assert.equal(seen.version, 1n);

          const fromNode = new Uint8Array([0xfe, 0, 1, 2, 0x80]);
          assert.equal(await node.updateOptimistic(name, fromNode, seen.version), 2n);
          const got = await baton(['get', name, ...s], url);
          assert.equal(got.code, 0, got.stderr);
          assert.deepEqual(new Uint8Array(got.stdout), fromNode);
          const version = await baton(['get', name, '--print-version', ...s], url);
          assert.equal(version.stdout.toString(), '2\n');

          // Rust's update at the version Node overwrote, and Node's at the one Rust overwrites.
          const stale = await baton(['put', name, '--version', '1', ...s], url, new Uint8Array([1]));
          assert.equal(stale.code, CONFLICT, `baton put at a stale version: ${stale.stderr}`);
          const rust = await baton(['put', name, '--version', '2', ...s], url, Buffer.from('from rust'));
          assert.equal(rust.code, 0, rust.stderr);
          assert.equal(rust.stdout.toString().trim(), '3');
          await assert.rejects(node.updateOptimistic(name, 'late', 2n), VersionMismatchError);
          assert.equal((await node.get(name))?.text, 'from rust');

          // Removed by Rust: gone for Node; inserted by Node, it goes on from Rust's versions.
          const removed = await baton(['remove', name, ...s], url);
          assert.equal(removed.code, 0, removed.stderr);
          assert.equal(await node.get(name), null);
          assert.equal(await node.insert(name, 'again'), 5n);
          const json = await baton(['get', name, '--json', ...s], url);
          assert.deepEqual(JSON.parse(json.stdout.toString()), { name, version: 5, value: 'again', value_base64: 'YWdhaW4=' });
          await node.remove(name);
          assert.equal((await baton(['get', name, ...s], url)).code, NO_OBJECT);
        });

        test('an object locked from Node is refused to `baton put` and `baton remove`; released, Rust writes it', async () => {
          const node = target.locker({ strategy });
          const name = fresh('object-locked');
          const held = await node.insertAndLock(name, 'node');
          for (const args of [['put', name, '--version', '1', ...s], ['put', name, ...s], ['remove', name, ...s]]) {
            const refused = await baton(args, url, Buffer.from('rust'));
            assert.equal(refused.code, LOCKED, `baton ${args.join(' ')} while Node holds the lock: ${refused.stderr}`);
          }
          assert.equal(await held.updateLockedAndRelease('node 2'), 2n);
          const put = await baton(['put', name, '--version', '2', ...s], url, Buffer.from('rust'));
          assert.equal(put.code, 0, put.stderr);
          assert.equal((await node.get(name))?.text, 'rust');
        });

        test('an object locked by a Rust process refuses Node\'s writes (BusyError naming it)', async () => {
          const node = target.locker({ strategy });
          const name = fresh('object-rust-held');
          assert.equal(await node.insert(name, 'before'), 1n);
          const holder = start(/** @type {string} */ (worker), ['hold', '--url', url, '--strategy', strategy, '--name', name, '--ttl-ms', '30000', '--limit-s', '60']);
          await holder.line(/^held (\d+) \d+$/, 30_000);
          try {
            const owner = (await node.locks()).find((e) => e.name === name)?.owner;
            assert.ok(owner?.includes(`:${holder.child.pid}:`), `the Rust holder's entry: ${owner}`);
            for (const write of [() => node.updateOptimistic(name, 'node', 1n), () => node.insert(name, 'node'), () => node.remove(name)]) {
              await assert.rejects(write(), (/** @type {any} */ e) => e instanceof BusyError && e.holder === owner);
            }
            await assert.rejects(node.getAndLock(name, { timeout: 200 }), TimedOutError);
            assert.equal((await node.get(name))?.text, 'before', 'reads go on');
          } finally {
            holder.child.kill('SIGTERM');
            await exitWithin(holder, 30_000, 'lock_worker hold');
          }
        });
      });
    }
  });
}
