// What fresh memory costs on this machine: allocating and first touching 112 MB (a page fault per
// 4 KiB), against filling the same memory again once mapped. The CPU CSV path reuses its chunk
// buffers (src/engine/io/scratch.ts) because of this difference.
//   node bench/fresh-memory.mjs
for (let k = 0; k < 4; k++) {
  const t0 = performance.now();
  const a = new Int32Array(28e6);
  for (let i = 0; i < a.length; i += 1024) a[i] = 1;
  const t1 = performance.now();
  a.fill(2);
  const t2 = performance.now();
  console.log(`alloc+touch 112 MB ${(t1 - t0).toFixed(0)} ms; fill again ${(t2 - t1).toFixed(0)} ms`);
}
