// Plays every transcript scenario of the kernel in its WebAssembly build and compares each
// transcript, byte for byte, with the one the native test wrote (`BLESS=<dir> cargo test -p
// baton-kernel --test transcripts` writes `<dir>/<scenario>.txt`: the transcript and a final
// newline). Run by `scripts/wasm-bindings transcripts`:
//
//   node compare.cjs <wasm-bindgen --target nodejs module> <native dir> [<dir for wasm's>]
//
// Fails (exit 1) on any difference, on a scenario that fails in WebAssembly, and when the two
// sets of scenario names differ. Ends with the line `test result: ok. N passed; 0 failed` (or
// `FAILED`), which scripts/test sums.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

// A fresh instance of the module (wasm-bindgen's nodejs target is CommonJS and instantiates the
// module when loaded): after a scenario traps (a panic aborts), the old one is unusable.
function load(modulePath) {
  const file = require.resolve(path.resolve(modulePath));
  delete require.cache[file];
  return require(file);
}

function main() {
  const [modulePath, nativeDir, wasmDir] = process.argv.slice(2);
  if (!modulePath || !nativeDir) {
    console.error('usage: node compare.cjs <module.js> <native dir> [<dir for wasm transcripts>]');
    process.exit(2);
  }
  let wasm = load(modulePath);
  if (wasmDir) fs.mkdirSync(wasmDir, { recursive: true });

  const wasmNames = Array.from(wasm.names());
  const nativeNames = fs
    .readdirSync(nativeDir)
    .filter((f) => f.endsWith('.txt'))
    .map((f) => f.slice(0, -'.txt'.length))
    .sort();
  let passed = 0;
  let failed = 0;
  const fail = (message) => {
    failed += 1;
    console.log(`FAILED ${message}`);
  };

  const seen = new Set();
  for (const name of wasmNames) {
    if (seen.has(name)) fail(`${name}: named twice by the WebAssembly build`);
    seen.add(name);
  }
  for (const name of nativeNames) {
    if (!seen.has(name)) {
      fail(`${name}: a native transcript (${path.join(nativeDir, name + '.txt')}) with no scenario in the WebAssembly build (kernel/tests/support/scenarios.rs, all())`);
    }
  }

  for (const name of seen) {
    const nativeFile = path.join(nativeDir, `${name}.txt`);
    if (!fs.existsSync(nativeFile)) {
      fail(`${name}: a scenario with no native transcript (no test of that name in kernel/tests/transcripts.rs?)`);
      continue;
    }
    let text;
    try {
      text = wasm.transcript(name);
    } catch (e) {
      fail(`${name}: the scenario failed in WebAssembly (its panic message, if any, is above): ${e && e.stack ? e.stack : e}`);
      wasm = load(modulePath);
      continue;
    }
    // The native file holds the transcript and a newline (see `assert_transcript`).
    const wasmBytes = Buffer.from(`${text}\n`, 'utf8');
    const nativeBytes = fs.readFileSync(nativeFile);
    let wasmFile = null;
    if (wasmDir) {
      wasmFile = path.join(wasmDir, `${name}.txt`);
      fs.writeFileSync(wasmFile, wasmBytes);
    }
    if (wasmBytes.equals(nativeBytes)) {
      passed += 1;
      console.log(`ok ${name} (${text.split('\n').length} lines)`);
      continue;
    }
    const n = nativeBytes.toString('utf8').split('\n');
    const w = wasmBytes.toString('utf8').split('\n');
    let i = 0;
    while (i < Math.max(n.length, w.length) && n[i] === w[i]) i += 1;
    const show = (line) => (line === undefined ? '<end>' : JSON.stringify(line));
    fail(`${name}: the transcripts differ at line ${i + 1} (native ${n.length - 1} lines, wasm ${w.length - 1})`);
    for (let j = Math.max(0, i - 2); j < i; j += 1) console.log(`    ${n[j]}`);
    console.log(`  - native: ${show(n[i])}`);
    console.log(`  + wasm:   ${show(w[i])}`);
    if (wasmFile) console.log(`  see: diff -u ${nativeFile} ${wasmFile}`);
  }

  if (passed + failed === 0) fail('no scenarios at all');
  console.log(
    `transcripts: ${passed} of ${seen.size} scenarios identical in WebAssembly (Node ${process.version}) and native`,
  );
  console.log(`test result: ${failed ? 'FAILED' : 'ok'}. ${passed} passed; ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

try {
  main();
} catch (e) {
  console.log(`FAILED: ${e && e.stack ? e.stack : e}`);
  console.log('test result: FAILED. 0 passed; 1 failed');
  process.exit(1);
}
