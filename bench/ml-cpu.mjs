// Machine learning on CPU workers against the npm peers, on the same machine in the same run:
// k-means against ml-kmeans, linreg against ml-regression-multivariate-linear, rf-train against
// ml-random-forest (on few rows: it takes ~37 s for 2 000 rows × 16 on 2 cores). Run by `npm run bench` after the group-by rows (BENCH_ML=0 skips it), or alone
// after `npm run build`: node bench/ml-cpu.mjs (env: ML_SCALE=1 multiplies the row counts,
// BENCH_DIR where data lives).
// gpuframe is timed as a user runs it (the whole command: start, reading the Arrow file, fitting,
// writing the model); a peer is timed on its fit alone, its data already in memory as the arrays
// it takes (the reading is timed apart). Each row also gives the model's quality on the same data,
// so speed is compared at equal quality.

import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tableFromIPC, tableToIPC } from 'apache-arrow';
import { kmeans } from 'ml-kmeans';
import MLR from 'ml-regression-multivariate-linear';
import { RandomForestClassifier } from 'ml-random-forest';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = process.env.BENCH_DIR ?? join(root, 'bench', 'data');
const scale = Number(process.env.ML_SCALE ?? 1);
mkdirSync(dir, { recursive: true });
const bin = join(root, 'bin', 'run.js');
const workers = String(cpus().length);

/** Runs the CLI; seconds and its stdout. */
function gpuframe(args) {
  const t0 = performance.now();
  const stdout = execFileSync(process.execPath, [bin, ...args, '--no-progress'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  return { seconds: (performance.now() - t0) / 1000, stdout };
}

/** An Arrow file's columns as row arrays (what the peers take) and the named target column; seconds to read. */
function readRows(path, target) {
  const t0 = performance.now();
  const table = tableFromIPC(readFileSync(path));
  const names = table.schema.fields.map((f) => f.name).filter((n) => n !== target);
  const columns = names.map((n) => table.getChild(n).toArray());
  const rows = Array.from({ length: table.numRows }, (_, r) => columns.map((c) => Number(c[r])));
  const y = Array.from(table.getChild(target).toArray(), Number);
  return { rows, y, names, seconds: (performance.now() - t0) / 1000 };
}

const results = [];
const add = (task, who, seconds, quality, note = '') => {
  results.push({ task, who, seconds, quality, note });
  process.stderr.write(`${task} ${who}: ${seconds.toFixed(2)} s, ${quality}\n`);
};

// ---- k-means: blobs, k = 8, 20 Lloyd iterations from k-means++ ----
{
  const n = Math.round(200_000 * scale), d = 16, k = 8;
  const path = join(dir, `ml-blobs-${n}.arrow`);
  // Overlapping blobs (std 3), so Lloyd keeps moving for several iterations.
  gpuframe(['make-blobs', '--n-samples', String(n), '--n-features', String(d), '--centers', String(k), '--cluster-std', '3', '--seed', '5', '-o', path]);
  const r = gpuframe(['kmeans', path, '--exclude', 'y', '--k', String(k), '--max-iter', '20', '--tol', '0', '--n-init', '1', '--seed', '1', '--json', '--model-out', join(dir, 'ml-km.json'), '--device', 'cpu', '--workers', workers]);
  const ours = JSON.parse(r.stdout);
  add(`k-means ${n} × ${d}, k = ${k}, 20 iterations`, 'gpuframe kmeans (whole command)', r.seconds, `inertia ${ours.inertia.toPrecision(8)}`, `${ours.iterations} iterations`);
  const { rows, seconds: readS } = readRows(path, 'y');
  const t0 = performance.now();
  const theirs = kmeans(rows, k, { initialization: 'kmeans++', maxIterations: 20, tolerance: 0, seed: 1 });
  const fitS = (performance.now() - t0) / 1000;
  let inertia = 0;
  rows.forEach((row, i) => { const c = theirs.centroids[theirs.clusters[i]]; for (let j = 0; j < d; j++) inertia += (row[j] - c[j]) ** 2; });
  add(`k-means ${n} × ${d}, k = ${k}, 20 iterations`, 'ml-kmeans 7.0.1 (fit)', fitS, `inertia ${inertia.toPrecision(8)}`, `${theirs.iterations} iterations; reading the rows ${readS.toFixed(2)} s`);
}

// ---- linear regression ----
{
  const n = Math.round(500_000 * scale), d = 16;
  const path = join(dir, `ml-reg-${n}.arrow`);
  gpuframe(['make-regression', '--n-samples', String(n), '--n-features', String(d), '--n-informative', String(d), '--noise', '1', '--bias', '3', '--seed', '5', '-o', path]);
  const r = gpuframe(['linreg', path, '--target', 'y', '--json', '--model-out', join(dir, 'ml-lr.json'), '--device', 'cpu', '--workers', workers]);
  add(`linreg ${n} × ${d}`, 'gpuframe linreg (whole command)', r.seconds, `R² ${JSON.parse(r.stdout).r2.toFixed(9)}`);
  const { rows, y, seconds: readS } = readRows(path, 'y');
  const t0 = performance.now();
  const theirs = new MLR(rows, y.map((v) => [v]), { statistics: false });
  const fitS = (performance.now() - t0) / 1000;
  let ss = 0, tot = 0;
  const mean = y.reduce((s, v) => s + v, 0) / n;
  rows.forEach((row, i) => { const p = theirs.predict(row)[0]; ss += (y[i] - p) ** 2; tot += (y[i] - mean) ** 2; });
  add(`linreg ${n} × ${d}`, 'ml-regression-multivariate-linear 2.0.4 (fit)', fitS, `R² ${(1 - ss / tot).toFixed(9)}`, `reading the rows ${readS.toFixed(2)} s`);
}

// ---- random forest: 20 trees of depth 8, sqrt(d) features a split, held-out accuracy ----
{
  const n = Math.round(4_000 * scale), d = 16, trees = 20, depth = 8, features = Math.floor(Math.sqrt(d));
  const train = join(dir, `ml-cls-${n}.arrow`), test = join(dir, `ml-cls-${n}-test.arrow`);
  // One generated set, split by row: the first 80% to train, the rest to test.
  const all = join(dir, `ml-cls-${n}-all.arrow`);
  gpuframe(['make-classification', '--n-samples', String(Math.round(n * 1.25)), '--n-features', String(d), '--n-informative', '8', '--n-classes', '3', '--seed', '5', '-o', all]);
  const table = tableFromIPC(readFileSync(all));
  writeFileSync(train, tableToIPC(table.slice(0, n), 'file'));
  writeFileSync(test, tableToIPC(table.slice(n), 'file'));
  const r = gpuframe(['rf-train', train, '--target', 'y', '--n-estimators', String(trees), '--max-depth', String(depth), '--max-features', String(features), '--seed', '1', '--model-out', join(dir, 'ml-rf.json'), '--device', 'cpu', '--workers', workers]);
  gpuframe(['predict', test, '--model', join(dir, 'ml-rf.json'), '-o', join(dir, 'ml-rf-pred.csv'), '--device', 'cpu']);
  const { y: testY, rows: testRows } = readRows(test, 'y');
  const predicted = readFileSync(join(dir, 'ml-rf-pred.csv'), 'utf8').trim().split('\n');
  const at = predicted[0].split(',').indexOf('prediction');
  const ourAcc = predicted.slice(1).filter((line, i) => Number(line.split(',')[at]) === testY[i]).length / testY.length;
  add(`rf-train ${n} × ${d}, ${trees} trees of depth ${depth}`, 'gpuframe rf-train (whole command)', r.seconds, `held-out accuracy ${ourAcc.toFixed(4)}`);
  const { rows, y, seconds: readS } = readRows(train, 'y');
  const t0 = performance.now();
  const rf = new RandomForestClassifier({ nEstimators: trees, maxFeatures: features, replacement: true, seed: 1, treeOptions: { maxDepth: depth }, noOOB: true });
  rf.train(rows, y);
  const fitS = (performance.now() - t0) / 1000;
  const theirAcc = rf.predict(testRows).filter((p, i) => p === testY[i]).length / testY.length;
  add(`rf-train ${n} × ${d}, ${trees} trees of depth ${depth}`, 'ml-random-forest 2.1.0 (fit)', fitS, `held-out accuracy ${theirAcc.toFixed(4)}`, `reading the rows ${readS.toFixed(2)} s`);
}

console.log(`\nMachine learning on CPU workers against npm peers (${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${cpus()[0].model})\n`);
console.log('| task | run | time (s) | peer ÷ gpuframe | quality | note |');
console.log('| --- | --- | ---: | ---: | --- | --- |');
for (const r of results) {
  const ours = results.find((o) => o.task === r.task && o.who.startsWith('gpuframe'));
  const ratio = r === ours ? '' : `${(r.seconds / ours.seconds).toFixed(2)}×`;
  console.log(`| ${r.task} | ${r.who} | ${r.seconds.toFixed(2)} | ${ratio} | ${r.quality} | ${r.note} |`);
}
