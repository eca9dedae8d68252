// Sums up the device-buffer creations GPUFRAME_TRACE_BUFFERS=<dir> logged (src/engine/gpu/buffer-trace.ts):
// per process, the calls and milliseconds by label, usage, size and caller, largest first; then when
// they fell: before the process's first buffer labelled `csv chunk` (a CSV run's first chunk), and after.
//   GPUFRAME_TRACE_BUFFERS=/tmp/bt node bin/run.js groupby big.csv ... --device gpu --workers 0
//   node bench/buffer-census.mjs /tmp/bt [top=14]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
const top = Number(process.argv[3] ?? 14);
if (!dir) { console.error('usage: node bench/buffer-census.mjs <dir> [top]'); process.exit(2); }
const sizeOf = (bytes) => (bytes >= 1 << 20 ? `${Math.round(bytes / (1 << 20))} MB` : bytes >= 4096 ? '4 KB-1 MB' : '< 4 KB');
for (const name of readdirSync(dir).filter((n) => /^buffers-\d+\.json$/.test(n)).sort()) {
  const log = JSON.parse(readFileSync(join(dir, name), 'utf8'));
  if (log.length === 0) continue;
  const total = log.reduce((s, e) => s + e[4], 0);
  const t0 = log[0][5];
  console.log(`${name}: ${log.length} buffers created in ${total.toFixed(1)} ms, over ${(log.at(-1)[5] - t0).toFixed(0)} ms`);
  const groups = new Map();
  for (const [label, bytes, usage, mapped, ms, , caller] of log) {
    const key = `${label || '(no label)'}, usage ${usage}${mapped ? ', mapped at creation' : ''}, ${sizeOf(bytes)}, ${caller}`;
    const g = groups.get(key) ?? { calls: 0, ms: 0 };
    g.calls++; g.ms += ms;
    groups.set(key, g);
  }
  for (const [key, g] of [...groups].sort((a, b) => b[1].ms - a[1].ms).slice(0, top)) console.log(`  ${g.ms.toFixed(1).padStart(7)} ms ${String(g.calls).padStart(5)} calls  ${key}`);
  const first = log.find((e) => e[0] === 'csv chunk')?.[5];
  if (first !== undefined) {
    const before = log.filter((e) => e[5] < first).reduce((s, e) => s + e[4], 0);
    console.log(`  before the first csv chunk's buffer (at ${(first - t0).toFixed(0)} ms): ${before.toFixed(1)} ms; from it on: ${(total - before).toFixed(1)} ms`);
  }
}
