// Mutual exclusion across processes: 8 Node processes run 100 critical sections each on one lock
// name, on PostgreSQL (pg) and on Cassandra (cassandra-driver, one node, quorum). Nothing may
// overlap: no O_EXCL marker collision, no lost update of a counter only the lock protects, no
// two sections' [enter, exit] intervals intersecting; and the fencing tokens must strictly
// increase in the order the sections ran.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fresh, here, required, start, exitWithin } from './support.mjs';

const PROCESSES = 8;
const SECTIONS = 100;

const stores = [
  { name: 'postgres', url: process.env.BATON_POSTGRES_URL, variable: 'BATON_POSTGRES_URL' },
  { name: 'cassandra', url: process.env.BATON_CASSANDRA_URL, variable: 'BATON_CASSANDRA_URL' },
];

for (const store of stores) {
  const skip = !store.url && !required && `${store.variable} is not set`;
  test(`${store.name}: ${PROCESSES} processes x ${SECTIONS} critical sections never overlap, tokens increase`, { skip, timeout: 180_000 }, async (t) => {
    assert.ok(store.url, `BATON_REQUIRE_SERVICES=1 but ${store.variable} is not set`);
    const dir = mkdtempSync(join(tmpdir(), 'baton-js-sections-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'counter'), '0');
    writeFileSync(join(dir, 'sections'), '');
    const name = fresh('sections');
    const runs = Array.from({ length: PROCESSES }, () => start(process.execPath, [join(here, 'section-worker.mjs'), store.name, name, String(SECTIONS), dir], { stdin: true }));
    // Every worker connected, then all start at once.
    await Promise.all(runs.map((run) => run.line(/^ready$/, 60_000)));
    const started = performance.now();
    for (const run of runs) run.child.stdin?.end('go\n');
    const results = await Promise.all(runs.map((run, i) => exitWithin(run, 170_000, `worker ${i}`)));
    const seconds = (performance.now() - started) / 1000;
    for (const [i, r] of results.entries()) {
      assert.equal(r.code, 0, `worker ${i} failed (${r.code ?? r.signal}): ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`done sections=${SECTIONS} overlaps=0`), `worker ${i}: ${r.stdout}`);
    }

    const sections = readFileSync(join(dir, 'sections'), 'utf8').trim().split('\n').map((line) => {
      const [n, token, enter, exit, pid] = line.split(' ');
      return { n: Number(n), token: BigInt(token), enter: BigInt(enter), exit: BigInt(exit), pid: Number(pid) };
    });
    const total = PROCESSES * SECTIONS;
    assert.equal(sections.length, total);
    assert.equal(readFileSync(join(dir, 'counter'), 'utf8'), String(total), 'the counter lost updates: sections overlapped');

    // In the order they ran (by the counter, which only the lock orders)...
    sections.sort((a, b) => a.n - b.n);
    assert.deepEqual(sections.map((s) => s.n), Array.from({ length: total }, (_, i) => i), 'two sections read the same counter');
    let overlaps = 0;
    let gap = null;
    for (let i = 1; i < total; i++) {
      const [before, next] = [sections[i - 1], sections[i]];
      // ...each entered after the previous one left (one clock for every process),
      if (next.enter <= before.exit) overlaps += 1;
      const g = next.enter - before.exit;
      gap = gap === null || g < gap ? g : gap;
      // ...and holds a larger fencing token.
      assert.ok(next.token > before.token, `section ${i} (pid ${next.pid}) has token ${next.token} after ${before.token} (pid ${before.pid})`);
    }
    assert.equal(overlaps, 0, 'sections whose [enter, exit] intervals intersect');
    const pids = new Set(sections.map((s) => s.pid));
    assert.equal(pids.size, PROCESSES);
    const handoffs = sections.filter((s, i) => i > 0 && s.pid !== sections[i - 1].pid).length;
    t.diagnostic(`${store.name}: ${total} sections in ${seconds.toFixed(1)} s, overlaps 0, ${handoffs} handoffs between processes, smallest exit->enter gap ${gap} ns, tokens ${sections[0].token}..${sections.at(-1).token}`);
  });
}
