// A k-means run's rounds: the parent's span of each kmeans.assign round (median) from its --trace,
// and the GPU worker's phases and message times from its stderr with GPUFRAME_GPU_PHASES=1.
// With several GPU workers, also each one's span of a round from the round's first start.
//   GPUFRAME_GPU_PHASES=1 bin/run.js kmeans ... --trace t.json 2> err.txt; node bench/kmeans-rounds.mjs t.json err.txt
import { readFileSync } from 'node:fs';
const [trace, err] = process.argv.slice(2);
const t = JSON.parse(readFileSync(trace, 'utf8'));
const ev = (t.traceEvents ?? t).filter((e) => e.name === 'ml kmeans.assign' && e.dur);
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.floor(s.length / 2)] : NaN; };
const spans = ev.map((e) => e.dur / 1000).slice(1);
// Each GPU worker has its own span of a round: a round starts at the first of its workers' spans.
const workers = new Set(ev.map((e) => e.tid)).size;
const all = ev.map((e) => e.ts / 1000).sort((a, b) => a - b);
const starts = all.filter((_, i) => i % workers === 0);
const gaps = starts.slice(2).map((s, i) => s - starts[i + 1]);
const phases = readFileSync(err, 'utf8').split('\n').filter((l) => l.startsWith('kmeans.assign over')).slice(1);
const field = (name) => phases.map((l) => Number((l.match(new RegExp(`${name} ([0-9.]+)`)) ?? [])[1]));
const ipc = readFileSync(err, 'utf8').split('\n').filter((l) => l.startsWith('ml kmeans.assign: to the worker')).slice(1);
const num = (re) => ipc.map((l) => Number((l.match(re) ?? [])[1]));
// Rows the bounded step measured again (its rounds only), as the worker reports them.
const measured = phases.map((l) => Number((l.match(/\((\d+) rows measured again\)/) ?? [])[1])).filter((v) => !Number.isNaN(v));
const measuredNote = measured.length ? `; rows measured again: median ${med(measured)}, by round ${measured.slice(0, 12).join(' ')}${measured.length > 12 ? ' …' : ''}` : '';
const msgs = ipc.length ? `; messages: to the worker ${med(num(/to the worker ([0-9.]+)/)).toFixed(2)}, in the worker ${med(num(/in the worker ([0-9.]+)/)).toFixed(2)}, back ${med(num(/back ([0-9.]+)/)).toFixed(2)} ms` : '';
console.log(`rounds ${starts.length - 1} on ${workers} worker(s): parent span median ${med(spans).toFixed(2)} ms, start-to-start median ${med(gaps).toFixed(2)} ms; worker record ${med(field('record')).toFixed(2)}, submit+readback ${med(field('submit and read back')).toFixed(2)}, decode ${med(field('decode')).toFixed(2)} ms (medians; ${phases.length} worker lines)${msgs}${measuredNote}`);
// With several GPU workers: each worker's span of a round, from the round's first start (medians).
if (workers > 1) {
  const byTs = [...ev].sort((a, b) => a.ts - b.ts), offsets = new Map();
  for (let i = workers; i + workers <= byTs.length; i += workers) {
    const round = byTs.slice(i, i + workers);
    if (new Set(round.map((e) => e.tid)).size !== workers) continue;
    for (const e of round) {
      const o = offsets.get(e.tid) ?? { start: [], end: [] };
      o.start.push((e.ts - round[0].ts) / 1000); o.end.push((e.ts + e.dur - round[0].ts) / 1000);
      offsets.set(e.tid, o);
    }
  }
  const names = new Map((t.traceEvents ?? t).filter((e) => e.ph === 'M' && e.name === 'thread_name').map((e) => [e.tid, e.args?.name]));
  console.log([...offsets].map(([tid, o]) => `${names.get(tid) ?? `tid ${tid}`}: starts +${med(o.start).toFixed(3)}, ends +${med(o.end).toFixed(3)} ms`).join('; '));
}
