// GPU executor check for the GPU machine: generates flights-like CSV data (bench/generate.mjs),
// runs groupby (also over the rows as Parquet), merge and read-csv -o with --device cpu, --device gpu --gpus 0 and --device gpu --gpus 0,1,
// checks that every GPU output has the CPU output's bytes, and prints timings as a markdown table.
//   source .devkit/env.sh; node bench/gpu-check.mjs [--bytes 1e9] [--copies 1] [--dir /tmp/gpuframe-check] [--timeout 240]
//   env: JOBS (job names or name prefixes, comma-separated), CONFIGS (cpu,gpu_0_only,gpu_0_1_only,gpus_cpu_workers), DUCKDB=0
// Progress lines and each result go to stdout as they happen, so a run cut short still reports.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { BIN, log, ROOT, runGpuframe } from './common.mjs';
import { generateFlights } from './generate.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const bytes = Number(arg('bytes', '1e9'));
// --copies N: generate bytes/N once and repeat its rows N times (generation is single-threaded JS).
const copies = Math.max(1, Number(arg('copies', '1')));
const dir = arg('dir', '/tmp/gpuframe-check');
const timeoutS = Number(arg('timeout', '240'));
const gpuframe = (args, env = {}) => runGpuframe(args, { timeoutS, env });

/** The 300 airport codes generate.mjs uses, with a made-up region each: the merge's right side. */
function writeDimension(path) {
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  const lines = ['origin,region,elevation'];
  for (let i = 0; i < 300; i++) {
    const code = letters[i % 26] + letters[Math.floor(i / 26) % 26] + letters[(i * 7) % 26];
    lines.push(`${code},R${i % 9},${(i * 37) % 3000}`);
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
}

mkdirSync(dir, { recursive: true });
const data = join(dir, `flights-${bytes}.csv`);
const dim = join(dir, 'airports.csv');
if (!existsSync(data)) {
  const base = copies > 1 ? join(dir, `flights-${bytes / copies}.csv`) : data;
  if (!existsSync(base)) {
    log(`generating ${(bytes / copies / 1e9).toFixed(2)} GB of CSV at ${base}`);
    const g = await generateFlights(base, bytes / copies);
    log(`generated ${g.rows} rows`);
  }
  if (copies > 1) {
    log(`${data}: ${copies} copies of ${base}'s rows`);
    spawnSync('bash', ['-c', `cp '${base}' '${data}' && for i in $(seq 2 ${copies}); do tail -n +2 '${base}' >> '${data}'; done`], { stdio: 'inherit' });
  }
} else {
  log(`reusing ${data} (${(statSync(data).size / 1e9).toFixed(2)} GB)`);
}
writeDimension(dim);
// The same rows as Parquet, for the Parquet-input job: written by gpuframe on first use and reused.
const parquet = join(dir, `flights-${bytes}.parquet`);
function ensureParquet() {
  if (existsSync(parquet)) return;
  log(`writing ${parquet} (gpuframe read-csv --device cpu)`);
  const r = gpuframe(['read-csv', data, '-o', parquet, '--device', 'cpu', '--no-progress']);
  log(r.code === 0 ? `  ${r.seconds.toFixed(2)} s, ${(statSync(parquet).size / 1e9).toFixed(2)} GB` : `  failed (exit ${r.code}): ${r.stderr.slice(-300)}`);
}

log('gpuframe devices --json --device gpu');
const devices = gpuframe(['devices', '--json', '--device', 'gpu']);
let gpuCount = 0;
try {
  const d = JSON.parse(devices.stdout);
  gpuCount = d.gpus.filter((g) => g.name !== null).length;
  for (const g of d.gpus) log(`  GPU ${g.index}: ${g.name} bus ${g.busId} software=${g.isSoftware} storage binding ${g.limits.maxStorageBufferBindingSize}`);
  log(`  executor: ${d.executor.reason}`);
} catch {
  log(`devices failed (exit ${devices.code}): ${devices.stderr || devices.stdout.slice(0, 500)}`);
}

const configs = [
  { name: 'cpu', flags: ['--device', 'cpu', '--workers', String(availableParallelism())] },
  { name: 'gpu 0 only', flags: ['--device', 'gpu', '--gpus', '0', '--workers', '0'] },
  ...(gpuCount >= 2 ? [{ name: 'gpu 0,1 only', flags: ['--device', 'gpu', '--gpus', '0,1', '--workers', '0'] }] : []),
  { name: 'gpus + cpu workers', flags: ['--device', 'gpu'] },
].filter((c) => !process.env.CONFIGS || process.env.CONFIGS.split(',').includes(c.name.replace(/\W+/g, '_')));
const AGGS = 'count(),sum(delay),mean(price),min(delay),max(distance),mean(delay)';
// DuckDB on the same cores, the peer the issue compares against.
const duckSql = {
  'groupby origin': `select origin, count(*), sum(delay), avg(price), min(delay), max(distance), avg(delay) from read_csv('${data}') group by origin order by origin`,
  'groupby origin (Parquet input)': `select origin, count(*), sum(delay), avg(price), min(delay), max(distance), avg(delay) from read_parquet('${parquet}') group by origin order by origin`,
  'groupby origin+dest': `select origin, dest, count(*), sum(delay), avg(price), min(delay), max(distance), avg(delay) from read_csv('${data}') group by origin, dest order by origin, dest`,
  'groupby delay (int key)': `select delay, count(*), sum(delay), avg(price), min(delay), max(distance), avg(delay) from read_csv('${data}') group by delay order by delay`,
  'groupby id (a group per id)': `select id, count(*), sum(delay), max(price) from read_csv('${data}') group by id order by id`,
  'groupby dest+distance': `select dest, distance, count(*), sum(delay), max(price) from read_csv('${data}') group by dest, distance order by dest, distance`,
  'read-csv -o csv': `select * from read_csv('${data}')`,
  'merge (broadcast) -o csv': `select * from read_csv('${data}') f join read_csv('${dim}') d using (origin)`,
  'merge (partitioned) -o csv': `select * from read_csv('${data}') a join read_csv('${data}') b using (id)`,
  'merge then groupby region': `select region, count(*), sum(delay), avg(price), min(delay), max(distance), avg(elevation) from read_csv('${data}') f join read_csv('${dim}') d using (origin) group by region order by region`,
};
function duckdb(sql, out) {
  const script = `import('@duckdb/node-api').then(async (d) => { const c = await (await d.DuckDBInstance.create(':memory:')).connect(); await c.run(${JSON.stringify(`copy (${sql}) to '${out}'`)}); })`;
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: timeoutS * 1000 });
  return { ok: r.status === 0, seconds: (performance.now() - t0) / 1000, stderr: (r.stderr ?? '').slice(0, 300) };
}

const jobs = [
  { name: 'groupby origin', args: (out) => ['groupby', data, '--by', 'origin', '--agg', AGGS, '-o', out] },
  // The query of 'groupby origin' on the same rows as Parquet: decoding instead of parsing.
  { name: 'groupby origin (Parquet input)', parquet: true, args: (out) => ['groupby', parquet, '--by', 'origin', '--agg', AGGS, '-o', out] },
  { name: 'groupby origin+dest', args: (out) => ['groupby', data, '--by', 'origin,dest', '--agg', AGGS, '-o', out] },
  { name: 'groupby delay (int key)', args: (out) => ['groupby', data, '--by', 'delay', '--agg', AGGS, '-o', out] },
  // As many groups as distinct ids (rows / copies): the key tables are large and every partial is.
  { name: 'groupby id (a group per id)', args: (out) => ['groupby', data, '--by', 'id', '--agg', 'count(),sum(delay),max(price)', '-o', out] },
  // A string and an int key: 1.47 M groups (300 airports × 4,900 distances), most in every partition.
  { name: 'groupby dest+distance', args: (out) => ['groupby', data, '--by', 'dest,distance', '--agg', 'count(),sum(delay),max(price)', '-o', out] },
  // Rows parsed and written again: work without an aggregate, on the CPU workers.
  { name: 'read-csv -o csv', args: (out) => ['read-csv', data, '-o', out] },
  { name: 'merge (broadcast) -o csv', args: (out) => ['merge', data, dim, '--on', 'origin', '-o', out] },
  // The file joined with itself on its unique id: too large to broadcast under a memory limit of
  // 4 × the file, so both sides are hash-partitioned and spilled.
  { name: 'merge (partitioned) -o csv', args: (out) => ['merge', data, data, '--on', 'id', '-o', out, '--memory-limit', String(Math.max(4 * bytes, 1e9))] },
  // read-csv -> merge -> groupby through shell pipes: the stages pass the plan, the last one runs it.
  { name: 'merge then groupby region', pipe: (out) => [['read-csv', data], ['merge', '-', dim, '--on', 'origin'], ['groupby', '--by', 'region', '--agg', 'count(),sum(delay),mean(price),min(delay),max(distance),mean(elevation)', '-o', out]] },
];

/** Runs the stages of a shell pipeline, run flags on the last stage (which runs the whole plan). */
function gpuframePipe(stages, flags) {
  const q = (a) => `'${String(a).replace(/'/g, "'\\''")}'`;
  const cmd = stages.map((st, i) => [process.execPath, BIN, ...st, ...(i === stages.length - 1 ? flags : [])].map(q).join(' ')).join(' | ');
  const t0 = performance.now();
  const r = spawnSync('bash', ['-o', 'pipefail', '-c', cmd], { env: process.env, encoding: 'utf8', timeout: timeoutS * 1000, maxBuffer: 64 << 20 });
  return { code: r.status ?? (r.signal ? `signal ${r.signal}` : 'no exit code'), stdout: r.stdout ?? '', stderr: (r.stderr ?? '').trim(), seconds: (performance.now() - t0) / 1000 };
}

const rows = [];
const table = () => {
  const header = `| job | DuckDB | ${configs.map((c) => c.name).join(' | ')} | GPU output = CPU output |\n| --- | --- | ${configs.map(() => '---').join(' | ')} | --- |`;
  return [header, ...rows.map((r) => `| ${r.job} | ${r.duck} | ${configs.map((c) => r.cells[c.name] ?? 'not run').join(' | ')} | ${r.agree} |`)].join('\n');
};

// JOBS: comma-separated job names, or prefixes of names (an exact name selects only that job).
const wanted = process.env.JOBS?.split(',').map((x) => x.trim()).filter(Boolean);
const selected = (name) => !wanted || wanted.some((x) => name === x || (name.startsWith(x) && !jobs.some((j) => j.name === x)));
for (const job of jobs.filter((j) => selected(j.name))) {
  const row = { job: job.name, cells: {}, agree: 'n/a', duck: 'not run' };
  rows.push(row);
  if (job.parquet) ensureParquet();
  if (process.env.DUCKDB !== '0') {
    log(`${job.name} with DuckDB ...`);
    const d = duckdb(duckSql[job.name], join(dir, 'duck-out.csv'));
    row.duck = d.ok ? `${d.seconds.toFixed(2)} s` : 'failed';
    log(`  ${row.duck}${d.ok ? '' : ` ${d.stderr}`}`);
  }
  let reference = null;
  const verdicts = [];
  for (const c of configs) {
    const out = join(dir, `${job.name.replace(/\W+/g, '_')}-${c.name.replace(/\W+/g, '_')}.csv`);
    log(`${job.name} with ${c.flags.join(' ')} ...`);
    const r = job.pipe ? gpuframePipe(job.pipe(out), [...c.flags, '--no-progress']) : gpuframe([...job.args(out), ...c.flags, '--no-progress']);
    if (r.stderr) log(`  stderr: ${r.stderr.split('\n').slice(-6).join(' | ')}`);
    if (r.code !== 0) {
      row.cells[c.name] = `failed (exit ${r.code})`;
      verdicts.push(`${c.name}: failed`);
      log(`  failed after ${r.seconds.toFixed(2)} s`);
      continue;
    }
    row.cells[c.name] = `${r.seconds.toFixed(2)} s`;
    log(`  ${r.seconds.toFixed(2)} s`);
    if (c.name === 'cpu') { reference = out; continue; }
    if (reference === null) { verdicts.push(`${c.name}: no CPU reference`); continue; }
    // cmp, not readFileSync: outputs may pass Node's 2 GiB buffer limit.
    const cmp = spawnSync('cmp', [reference, out], { encoding: 'utf8' });
    if (cmp.status === 0) { verdicts.push(`${c.name}: identical`); continue; }
    verdicts.push(`${c.name}: DIFFERS`);
    log(`  DIFFERS: ${cmp.stdout.trim() || cmp.stderr.trim()}`);
  }
  row.agree = verdicts.join(', ') || 'n/a';
  console.log(`\n${table()}\n`);
}
log('done');
