// Reading a file into fresh memory (as the Arrow reader does, one new buffer each read) against
// reading it into one reused buffer: ms each, six times. Fresh memory's pages are zeroed and
// faulted in at first touch, which costs more than the read itself.
//   node bench/read-fresh.mjs [path]   (env GLIBC_TUNABLES to try glibc malloc settings)
import { openSync, readSync, writeFileSync, existsSync } from 'node:fs';
const path = process.argv[2] ?? '/tmp/read-fresh.bin', size = 264 << 20;
if (!existsSync(path)) writeFileSync(path, Buffer.alloc(size, 7));
const fd = openSync(path, 'r');
const fresh = [], reused = [];
const keep = [];
for (let i = 0; i < 6; i++) {
  let t0 = performance.now();
  const b = Buffer.allocUnsafe(size);
  readSync(fd, b, 0, size, 0);
  fresh.push(performance.now() - t0);
  keep.push(b); if (keep.length > 2) keep.shift();
}
const r = Buffer.allocUnsafe(size);
for (let i = 0; i < 6; i++) { const t0 = performance.now(); readSync(fd, r, 0, size, 0); reused.push(performance.now() - t0); }
console.log(`${process.env.GLIBC_TUNABLES ?? 'default'}: fresh ${fresh.map((v) => v.toFixed(0)).join(' ')} ms; reused ${reused.map((v) => v.toFixed(0)).join(' ')} ms`);
