// npm run bench: gpuframe against its peers on the same machine, in the same run.
// Prints times, ratios and peak RSS (summed over the process tree) as a markdown table.
//   BENCH_BYTES=1e9 (default 1 GB) sets the generated CSV size; BENCH_DIR where data lives; then
//   machine learning against ml-kmeans, ml-random-forest and ml-regression-multivariate-linear
//   (bench/ml-cpu.mjs; BENCH_ML=0 skips it).

import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateFlights } from './generate.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = process.env.BENCH_DIR ?? join(root, 'bench', 'data');
const bytes = Number(process.env.BENCH_BYTES ?? 1e9);
mkdirSync(dir, { recursive: true });
const csv = join(dir, `flights-${bytes}.csv`);
if (!existsSync(csv)) {
  process.stderr.write(`generating ${csv} ...\n`);
  await generateFlights(csv, bytes);
}
const size = statSync(csv).size;

/** Runs a command, sampling the RSS of its whole process tree every 50 ms. */
function measure(cmd, args, env = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    let peak = 0;
    const timer = setInterval(() => { peak = Math.max(peak, treeRss(child.pid)); }, 50);
    child.on('close', (code) => {
      clearInterval(timer);
      if (code !== 0) reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${stderr}`));
      else resolve({ seconds: (performance.now() - started) / 1000, peakRss: peak });
    });
  });
}

function treeRss(pid) {
  let total = 0;
  const walk = (p) => {
    try {
      const status = readFileSync(`/proc/${p}/status`, 'utf8');
      total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
      const children = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim();
      for (const c of children ? children.split(/\s+/) : []) walk(Number(c));
    } catch { /* exited meanwhile */ }
  };
  walk(pid);
  return total;
}

const node = process.execPath;
const bin = join(root, 'bin', 'run.js');
const out = join(dir, 'out.csv');
const rows = [];
/** `versus`: the name of the DuckDB row running the same query (its time is the ratio's base). */
const record = (name, r, versus = 'DuckDB 1.5.6 (all cores)') => { rows.push({ name, versus, ...r }); process.stderr.write(`${name}: ${r.seconds.toFixed(2)} s, peak RSS ${(r.peakRss / 2 ** 20).toFixed(0)} MiB\n`); };
/** DuckDB writing the query's rows, sorted, as CSV (what gpuframe's -o out.csv does). */
const duckdb = (query) => `import('@duckdb/node-api').then(async (d) => { const c = await (await d.DuckDBInstance.create(':memory:')).connect(); await c.run(\`copy (${query}) to '${out}.duck.csv'\`); })`;

const query = `select origin, count(*), avg(delay), sum(distance), max(price), min(price) from read_csv('${csv}') group by origin order by origin`;
record('DuckDB 1.5.6 (all cores)', await measure(node, ['-e', duckdb(query)]));
const polars = `const pl = require('nodejs-polars'); pl.scanCSV('${csv}').groupBy('origin').agg(pl.len(), pl.col('delay').mean(), pl.col('distance').sum(), pl.col('price').max().alias('max_price'), pl.col('price').min().alias('min_price')).sort('origin').collectSync().writeCSV('${out}.polars.csv')`;
try { record('nodejs-polars 0.25.2 (all cores)', await measure(node, ['-e', polars])); } catch (e) { process.stderr.write(`polars skipped: ${e.message.split('\n')[0]}\n`); }
const agg = 'count(),mean(delay),sum(distance),max(price),min(price)';
const cpu = ['--device', 'cpu', '--quiet', '-o', out];
record('gpuframe groupby (CPU workers = cores)', await measure(node, [bin, 'groupby', csv, '--by', 'origin', '--agg', agg, ...cpu]));
record('gpuframe groupby --memory-limit 1GB', await measure(node, [bin, 'groupby', csv, '--by', 'origin', '--agg', agg, ...cpu, '--memory-limit', '1GB']));
const pairs = 'DuckDB --by origin,dest (all cores)';
const pairsQuery = `select origin, dest, count(*), avg(delay), sum(distance), max(price), min(price) from read_csv('${csv}') group by origin, dest order by origin, dest`;
record(pairs, await measure(node, ['-e', duckdb(pairsQuery)]), pairs);
record('gpuframe groupby --by origin,dest (90k groups)', await measure(node, [bin, 'groupby', csv, '--by', 'origin,dest', '--agg', agg, ...cpu]), pairs);
// A group every ~20 rows (1.47 M groups in 1 GB): the rows are exchanged by key range (row-exchange.ts).
const many = 'DuckDB --by dest,distance (all cores)';
const manyQuery = `select dest, distance, count(*), avg(delay), sum(distance), max(price), min(price) from read_csv('${csv}') group by dest, distance order by dest, distance`;
record(many, await measure(node, ['-e', duckdb(manyQuery)]), many);
record('gpuframe groupby --by dest,distance', await measure(node, [bin, 'groupby', csv, '--by', 'dest,distance', '--agg', agg, ...cpu]), many);

const seconds = new Map(rows.map((r) => [r.name, r.seconds]));
console.log(`\nread-csv -> groupby over ${(size / 1e9).toFixed(2)} GB CSV (${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${cpus()[0].model})\n`);
console.log('| run | time (s) | MB/s | vs DuckDB (same query) | peak RSS (MiB) |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const r of rows) console.log(`| ${r.name} | ${r.seconds.toFixed(2)} | ${(size / 1e6 / r.seconds).toFixed(0)} | ${(r.seconds / seconds.get(r.versus)).toFixed(2)}× | ${(r.peakRss / 2 ** 20).toFixed(0)} |`);

// Machine learning against the npm peers (bench/ml-cpu.mjs; BENCH_ML=0 skips it).
if (process.env.BENCH_ML !== '0') execFileSync(node, [join(root, 'bench', 'ml-cpu.mjs')], { stdio: 'inherit' });
