// The package README's runnable examples, pasted into files as a user would, run against the
// project's PostgreSQL and Cassandra: each must take the lock, which `baton locks` must list
// and `baton run --no-wait` must find busy, and then end by itself.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const readme = readFileSync(join(dirname(require.resolve('baton-locks/package.json')), 'README.md'), 'utf8');
const examples = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]).filter((code) => code.includes('holding nightly-report'));
const required = process.env.BATON_REQUIRE_SERVICES === '1';

/** @param {string[]} args @param {string} store */
function baton(args, store) {
  return new Promise((resolve) => {
    execFile(process.env.BATON_CLI ?? 'baton', args, { env: { ...process.env, BATON_STORE: store } }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stdout, stderr });
    });
  });
}

/**
 * Runs `code` (an example) and resolves once it printed `holding`, with its exit as a promise.
 * @param {string} code @param {Record<string, string>} env
 */
function start(code, env) {
  // In the project's directory, so that `baton-locks`, `pg` and `cassandra-driver` resolve.
  const file = join(mkdtempSync(join(here, '..', '.readme-')), 'example.mjs');
  writeFileSync(file, code);
  const child = spawn(process.execPath, [file], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve({ code, out, err })));
  const holding = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (/holding nightly-report with fencing token \d+/.test(out)) resolve(undefined);
    });
    exited.then(() => reject(new Error(`the example ended before holding the lock: ${out}${err}`)));
  });
  return { child, holding, exited };
}

const cases = [
  { name: 'PostgreSQL (pg)', example: examples.find((c) => c.includes('baton-locks/postgres') && !c.includes('PGSSLROOTCERT')), url: process.env.BATON_POSTGRES_URL, env: (url) => ({ DATABASE_URL: url }), cli: (url) => url },
  {
    name: 'PostgreSQL over verified TLS (pg)',
    example: examples.find((c) => c.includes('PGSSLROOTCERT')),
    url: process.env.BATON_POSTGRES_TLS_URL,
    // The test command's TLS-only user, as the example's variables.
    env: (url) => {
      const u = new URL(url);
      return {
        PGHOST: u.hostname, PGPORT: u.port, PGUSER: u.username, PGDATABASE: u.pathname.slice(1),
        PGPASSWORD_FILE: u.searchParams.get('password_file'), PGSSLROOTCERT: u.searchParams.get('sslrootcert'),
      };
    },
    cli: (url) => url,
  },
  { name: 'Cassandra (cassandra-driver)', example: examples.find((c) => c.includes('baton-locks/cassandra')), url: process.env.BATON_CASSANDRA_URL, env: () => ({ CASSANDRA_CONTACT_POINTS: '127.0.0.1' }), cli: (url) => { const u = new URL(url); return `cassandra://${u.host}/baton?consistency=quorum`; } },
];

for (const c of cases) {
  test(`the README's ${c.name} example holds a lock the baton command sees`, { skip: !c.url && !required && 'no URL for this store', timeout: 60_000 }, async () => {
    assert.ok(c.url, `BATON_REQUIRE_SERVICES=1 but no URL for ${c.name}`);
    assert.ok(c.example, `the README has no runnable ${c.name} example`);
    const store = c.cli(c.url);
    const run = start(c.example, c.env(c.url));
    await run.holding;
    const listed = await baton(['locks', '--json'], store);
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(JSON.parse(listed.stdout).locks.some((l) => l.name === 'nightly-report'), listed.stdout);
    const busy = await baton(['run', '--no-wait', '--lock', 'nightly-report', '--', 'true'], store);
    assert.equal(busy.code, 75, `baton run --no-wait should exit 75 (busy): ${busy.stderr}`);
    const { code, err } = await run.exited;
    assert.equal(code, 0, err);
  });
}
