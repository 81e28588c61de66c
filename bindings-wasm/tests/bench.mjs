// The WebAssembly binding's bench (run by `scripts/wasm-bindings bench [N]` from the scratch
// project): one uncontended acquire + release on the memory store, in WebAssembly under Node
// and natively (the `bench_memory` binary: tokio, one thread), per strategy; and the size of
// the .wasm file, raw and gzipped. Prints a table; asserts nothing.
//
//   node tests/bench.mjs ITERATIONS NATIVE_BENCH_BINARY WASM_FILE

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { Locker, MemoryStore } from 'baton-locks';

const [iterations = 20000, native, wasmFile] = [Number(process.argv[2] ?? 20000), process.argv[3], process.argv[4]];

/** @param {number[]} sorted @param {number} q */
const at = (sorted, q) => sorted[Math.floor((sorted.length - 1) * q)];

const rows = [];
const nativeOut = native ? execFileSync(native, [String(iterations)], { encoding: 'utf8' }) : '';
for (const strategy of ['unique-insert', 'bakery', 'column-prefix']) {
  const locker = new Locker(new MemoryStore(), { strategy });
  const one = async () => { const lock = await locker.lock('bench'); await lock.release(); };
  for (let i = 0; i < iterations / 10; i++) await one();
  const samples = new Array(iterations);
  const started = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) {
    const t = process.hrtime.bigint();
    await one();
    samples[i] = Number(process.hrtime.bigint() - t);
  }
  const mean = Number(process.hrtime.bigint() - started) / iterations;
  samples.sort((a, b) => a - b);
  const line = nativeOut.split('\n').find((l) => l.includes(`strategy=${strategy} `)) ?? '';
  const field = (name) => Number((line.match(new RegExp(`${name}=(\\d+)`)) ?? [])[1]);
  rows.push({ strategy, p50: at(samples, 0.5), p99: at(samples, 0.99), mean, nP50: field('p50_ns'), nP99: field('p99_ns'), nMean: field('mean_ns') });
}

const us = (ns) => (Number.isFinite(ns) ? (ns / 1000).toFixed(1) : '-');
console.log(`\nacquire + release on the memory store, ${iterations} iterations (µs; Node ${process.version})\n`);
console.log('| strategy | WebAssembly p50 | p99 | mean | native p50 | p99 | mean | WebAssembly / native (p50) |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(`| ${r.strategy} | ${us(r.p50)} | ${us(r.p99)} | ${us(r.mean)} | ${us(r.nP50)} | ${us(r.nP99)} | ${us(r.nMean)} | ${(r.p50 / r.nP50).toFixed(2)}× |`);
}
if (wasmFile) {
  const bytes = readFileSync(wasmFile);
  console.log(`\n.wasm: ${bytes.length} bytes raw, ${gzipSync(bytes, { level: 9 }).length} bytes gzipped\n`);
}
