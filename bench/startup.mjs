// Start-up latency of the CLI and its worker processes (run `npm run build` first).
//
//   node bench/startup.mjs              times each case, median of 5 runs, and prints a table
//   node bench/startup.mjs --runs 9     more runs per case
//   node bench/startup.mjs --modules    also counts the modules each case loads, by package
//
// Every pipe stage is a process and every run forks workers, so these costs are paid many times.
// Module counts come from a module.register() load hook (ESM imports only; a CommonJS package's
// own require() calls are not seen, so cli-progress or webgpu's dawn.node show as one entry).

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const RUNS = args.includes('--runs') ? Number(args[args.indexOf('--runs') + 1]) : 5;
const COUNT_MODULES = args.includes('--modules');

const tmp = mkdtempSync(join(tmpdir(), 'gpuframe-startup-'));
const out = (name) => join(tmp, name);
const flights = 'fixtures/flights-sample.csv';
const ml = 'fixtures/ml/breast-cancer.csv';
const cpuRun = ['--device', 'cpu', '--no-progress', '-q'];

/** [label, node arguments] — each case is one process, started the way users and the pool start it. */
const CASES = [
  ['node -e 0 (floor)', ['-e', '0']],
  ['--version', ['bin/run.js', '--version']],
  ['--help', ['bin/run.js', '--help']],
  ['groupby --help', ['bin/run.js', 'groupby', '--help']],
  ['rf-train --help', ['bin/run.js', 'rf-train', '--help']],
  ['merge --help', ['bin/run.js', 'merge', '--help']],
  ['groupby csv -> csv, --workers 0', ['bin/run.js', 'groupby', flights, '--by', 'origin', '--agg', 'count(),mean(delay)', '-o', out('g.csv'), '--workers', '0', ...cpuRun]],
  ['groupby csv -> csv, --workers 2', ['bin/run.js', 'groupby', flights, '--by', 'origin', '--agg', 'count(),mean(delay)', '-o', out('g2.csv'), '--workers', '2', ...cpuRun]],
  ['read-csv csv -> parquet, --workers 0', ['bin/run.js', 'read-csv', flights, '-o', out('r.parquet'), '--workers', '0', ...cpuRun]],
  ['read-csv csv -> arrow, --workers 0', ['bin/run.js', 'read-csv', flights, '-o', out('r.arrow'), '--workers', '0', ...cpuRun]],
  ['read-csv csv, plan to a pipe', ['bin/run.js', 'read-csv', flights, '--format', 'plan']],
  ['rf-train 10 trees, --workers 0', ['bin/run.js', 'rf-train', ml, '--target', 'y', '--n-estimators', '10', '--model-out', out('rf.json'), '--workers', '0', ...cpuRun]],
  ['CPU worker entry (worker-main.js)', ['dist/engine/exec/worker-main.js']],
  ['import run-fragment.js', ['--input-type=module', '-e', "await import('./dist/engine/exec/run-fragment.js')"]],
  ['import gpu-task.js (GPU worker)', ['--input-type=module', '-e', "await import('./dist/engine/exec/gpu-task.js')"]],
];

/** A load hook that appends each loaded module's URL to $GPUFRAME_MODULE_LIST. */
const HOOK = `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  const r = await next(url, context);
  appendFileSync(process.env.GPUFRAME_MODULE_LIST, url + '\\n');
  return r;
}`;
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)});`;

function runOnce(nodeArgs, env = {}) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, nodeArgs, { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env } });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${nodeArgs.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Modules loaded, grouped: each npm package by name, gpuframe's own as 'gpuframe', builtins as 'node:'. */
function moduleCounts(nodeArgs) {
  const list = out('modules.txt');
  writeFileSync(list, '');
  runOnce(['--import', `data:text/javascript,${encodeURIComponent(REGISTER)}`, ...nodeArgs], { GPUFRAME_MODULE_LIST: list });
  const counts = new Map();
  for (const url of readFileSync(list, 'utf8').split('\n').filter(Boolean)) {
    const pkg = url.startsWith('node:') ? 'node:' : /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? (url.startsWith('data:') ? null : 'gpuframe');
    if (pkg) counts.set(pkg, (counts.get(pkg) ?? 0) + 1);
  }
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const top = [...counts].filter(([p]) => p !== 'node:').sort((a, b) => b[1] - a[1]).map(([p, n]) => `${p} ${n}`).join(', ');
  return `${total}: ${top}`;
}

try {
  runOnce(CASES[1][1]); // warm the file cache
  const rows = [];
  for (const [label, nodeArgs] of CASES) {
    const times = Array.from({ length: RUNS }, () => runOnce(nodeArgs));
    const row = { label, median: median(times), min: Math.min(...times), modules: COUNT_MODULES ? moduleCounts(nodeArgs) : '' };
    rows.push(row);
    console.error(`${label}: ${row.median.toFixed(0)} ms`);
  }
  console.log(`\nnode ${process.version}, median of ${RUNS} runs (ms)\n`);
  console.log(`| case | median | min |${COUNT_MODULES ? ' modules loaded |' : ''}\n| --- | ---: | ---: |${COUNT_MODULES ? ' --- |' : ''}`);
  for (const r of rows) console.log(`| ${r.label} | ${r.median.toFixed(0)} | ${r.min.toFixed(0)} |${COUNT_MODULES ? ` ${r.modules} |` : ''}`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
