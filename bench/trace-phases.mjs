// Per kind of slice of a --trace file: count, summed ms, and when the first began and the last ended
// (s from the first slice); the phases of a command (loading, seeding, Lloyd rounds).
//   node bench/trace-phases.mjs t.json
import { readFileSync } from 'node:fs';
const t = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const ev = (t.traceEvents ?? t).filter((e) => e.ph === 'X');
const by = {};
for (const e of ev) {
  const k = e.name.replace(/#\d+/, '#');
  by[k] ??= { n: 0, ms: 0, first: Infinity, last: 0 };
  by[k].n++; by[k].ms += e.dur / 1000; by[k].first = Math.min(by[k].first, e.ts / 1000); by[k].last = Math.max(by[k].last, (e.ts + e.dur) / 1000);
}
const t0 = Math.min(...Object.values(by).map((v) => v.first));
for (const [k, v] of Object.entries(by).sort((a, b) => a[1].first - b[1].first)) {
  console.log(`${k.padEnd(40)} ${String(v.n).padStart(4)} ${v.ms.toFixed(0).padStart(7)} ms  ${((v.first - t0) / 1000).toFixed(2)}-${((v.last - t0) / 1000).toFixed(2)} s`);
}
