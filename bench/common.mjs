// What the GPU-machine bench scripts share: running the CLI, importing built modules, a timestamped log, the table of
// results they print at the end, trace spans, and timing GPU work by its marginal cost.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const BIN = join(ROOT, 'bin/run.js');

/** A built module of the project (after `npm run build`), e.g. dist('kernels/forest.js'). */
export const dist = (path) => import(join(ROOT, 'dist', path));

export const log = (msg) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** Runs `gpuframe args` to the end; stderr without Dawn's start-up warnings about dynamic buffer limits. */
export function runGpuframe(args, { timeoutS, env = {} }) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: timeoutS * 1000, maxBuffer: 64 << 20 });
  const stderr = (r.stderr ?? '').split('\n').filter((l) => l && !/^Warning: maxDynamic/.test(l)).join('\n');
  return { code: r.status ?? (r.signal ? `signal ${r.signal}` : 'no exit code'), stdout: r.stdout ?? '', stderr, seconds: (performance.now() - t0) / 1000 };
}

/** Rows of the final table: `add` logs each as it comes, `print` writes the Markdown table. */
export function resultTable() {
  const rows = [];
  return {
    add(step, value, note = '') {
      rows.push({ step, value, note });
      log(`  ${step}: ${value}${note ? ` (${note})` : ''}`);
    },
    print() {
      console.log(`\n| step | result | note |\n| --- | --- | --- |\n${rows.map((r) => `| ${r.step} | ${r.value} | ${r.note} |`).join('\n')}\n`);
    },
  };
}

/** Seconds from the first start to the last end of the trace's slices whose names start with `prefix` (NaN if none). */
export function traceSpanSeconds(tracePath, prefix) {
  const events = JSON.parse(readFileSync(tracePath, 'utf8')).traceEvents.filter((e) => e.ph === 'X' && e.name.startsWith(prefix));
  if (events.length === 0) return NaN;
  return (Math.max(...events.map((e) => e.ts + e.dur)) - Math.min(...events.map((e) => e.ts))) / 1e6;
}

/**
 * Marginal ms of one more `record(work, out)` in a submission: (time of 1 + reps) - (time of 1),
 * over reps (the first run compiles). `out` is a 1 MiB temporary; what record returns (else out)
 * is read back to end the submission.
 */
export async function marginalMs(ctx, GpuWork, record, reps) {
  const wall = [];
  for (const n of [1, 1, 1 + reps]) {
    const work = new GpuWork(ctx);
    const t0 = performance.now();
    const out = work.temp(1 << 20, 'out');
    let read = out;
    for (let i = 0; i < n; i++) read = record(work, out) ?? out;
    await work.finish([{ buf: read, floats: 1 }]);
    wall.push(performance.now() - t0);
  }
  return (wall[2] - wall[1]) / reps;
}
