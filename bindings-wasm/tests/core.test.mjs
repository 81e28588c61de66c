// The core module must run wherever WebAssembly and promises run: it (and the WebAssembly glue
// and bytes it loads) may import nothing but its own files, and use no Node global. The store
// adapters, which are for Node, are the only files that may.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const root = dirname(createRequire(import.meta.url).resolve('baton-locks/package.json'));
/** A file's code without its comments (JSDoc types name modules in `import('…')`). */
const code = (file) => readFileSync(join(root, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
const core = ['index.js', 'errors.js', ...readdirSync(join(root, 'wasm')).map((f) => `wasm/${f}`)];

test('the core files import only their own files and use no Node-only API', () => {
  assert.ok(core.includes('wasm/baton_wasm.js') && core.includes('wasm/bytes.js'), core.join(', '));
  for (const file of core) {
    const text = code(file);
    for (const [, spec] of text.matchAll(/(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]/g)) {
      assert.ok(spec.startsWith('./'), `${file} imports ${spec}`);
    }
    assert.doesNotMatch(text, /\bimport\s*\(/, `${file} imports dynamically`);
    assert.doesNotMatch(text, /\brequire\s*\(/, `${file} calls require`);
    assert.doesNotMatch(text, /\b(?:process|Buffer|__dirname|__filename)\s*\./, `${file} uses a Node global`);
  }
});

test('the package has no .wasm file to fetch: the bytes are in a module', () => {
  assert.deepEqual(readdirSync(join(root, 'wasm')).sort(), ['baton_wasm.js', 'bytes.js']);
});

test('the store adapters are separate modules', async () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  assert.deepEqual(Object.keys(pkg.exports).sort(), ['.', './cassandra', './package.json', './postgres']);
  const index = code('index.js');
  assert.doesNotMatch(index, /postgres|cassandra/);
});
