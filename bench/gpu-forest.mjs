// rf-train on the GPU machine: ROWS x 32 make-classification rows (75/25 train/test split of one
// generated file), 100 trees of depth 16, with --device cpu, one GPU, two GPUs, and two GPUs with CPU
// workers (they load and bin the rows; the trees grow on the GPUs), against
// scikit-learn's RandomForestClassifier on all cores with the same trees, depth and features.
// Checks the 1- and 2-GPU model files are byte-identical; accuracy on the held-out rows for all.
// TASK=regression: make-regression rows, R² instead of accuracy, RandomForestRegressor as the peer.
//   source .devkit/env.sh; node bench/gpu-forest.mjs   (env: ROWS=1e6 TREES=100 DEPTH=16 DIR=/tmp/gpuframe-rf
//   TIMEOUT=300 CONFIGS=gpu_0,gpu_0_1,gpus_cpu_workers,cpu PEERS=0 BLOCKSIZE=16MB TASK=classification ROUNDS=2)
// The time of the trees alone comes from the run's --trace ('ml grow trees' slices); the
// command's total includes start-up, reading and binning. `--kernels` times the tree kernels alone.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC, tableToIPC } from 'apache-arrow';
import { dist, log, marginalMs, resultTable, runGpuframe, traceSpanSeconds } from './common.mjs';

const ROWS = Number(process.env.ROWS ?? 1e6), TEST = Math.round(ROWS / 3), D = 32;
const TREES = Number(process.env.TREES ?? 100), DEPTH = Number(process.env.DEPTH ?? 16);
const DIR = process.env.DIR ?? '/tmp/gpuframe-rf';
const TIMEOUT_S = Number(process.env.TIMEOUT ?? 300);
const BLOCKSIZE = ['--blocksize', process.env.BLOCKSIZE ?? '16MB'];
const REGRESSION = process.env.TASK === 'regression';
/** The held-out score predict prints: accuracy, or R² for regression. */
const SCORE = REGRESSION ? 'R²' : 'accuracy';
const { add, print } = resultTable();
const gpuframe = (args) => runGpuframe([...args, '--no-progress'], { timeoutS: TIMEOUT_S });

/** When each kind of slice starts and ends (s from the first slice), e.g. 'load rows 0.00-0.61'. */
function breakdown(tracePath) {
  const events = JSON.parse(readFileSync(tracePath, 'utf8')).traceEvents.filter((e) => e.ph === 'X');
  const t0 = Math.min(...events.map((e) => e.ts));
  const spans = new Map();
  for (const e of events) {
    const name = e.name.replace(/ #\d+.*$/, '');
    const s = spans.get(name) ?? { start: Infinity, end: 0 };
    s.start = Math.min(s.start, e.ts); s.end = Math.max(s.end, e.ts + e.dur);
    spans.set(name, s);
  }
  return [...spans].sort((a, b) => a[1].start - b[1].start).map(([n, s]) => `${n} ${((s.start - t0) / 1e6).toFixed(2)}-${((s.end - t0) / 1e6).toFixed(2)}`).join(', ');
}

if (process.argv[2] === '--kernels') {
  await kernelTimings();
  process.exit(0);
}

/**
 * `node bench/gpu-forest.mjs --kernels`: the tree-growing kernels alone on one device, per level of
 * ROWS rows × KERNEL_TREES trees (5 candidates of 20 features, 256 bins, 2 classes, bootstrap-like
 * weights): the histogram in both variants, best splits and routing, each the marginal time of 3
 * more in one submission, with the bytes each must move as a fraction of the H200's 4.2 TB/s.
 */
async function kernelTimings() {
  const { openGpu } = await dist('engine/gpu/device.js');
  const { StagingRing, uploadNew, storageBuffer } = await dist('engine/gpu/buffers.js');
  const { GpuWork } = await dist('kernels/ml-matrix.js');
  const f = await dist('kernels/forest.js');
  const ctx = await openGpu({ allowSoftware: true });
  const trees = Number(process.env.KERNEL_TREES ?? 50), cols = 20, maxF = 5, nBins = 256, classes = 2, REPS = 3;
  let seed = 1;
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8);
  const bins = new Uint8Array(ROWS * cols).map(() => rand() & 255);
  const labels = Uint32Array.from({ length: ROWS }, () => rand() & 1);
  // About 37% zeros, as bootstrap counts.
  const weight = Uint32Array.from({ length: trees * ROWS }, () => { const u = rand() & 255; return u < 94 ? 0 : u < 188 ? 1 : u < 235 ? 2 : 3; });
  const active = weight.reduce((n, w) => n + (w > 0 ? 1 : 0), 0);
  const binsBuf = await f.uploadForestBins(ctx, new StagingRing(ctx), bins, ROWS, cols);
  const weightBuf = await uploadNew(ctx, weight, 'weight'), labelsBuf = await uploadNew(ctx, labels, 'labels');
  const binsPerFeature = new Uint32Array(cols).fill(nBins);
  const marginal = (record) => marginalMs(ctx, GpuWork, record, REPS);
  const hbm = (bytes, ms) => `${(100 * bytes / 4.2e12 / (ms / 1e3)).toPrecision(3)}% of HBM`;
  for (const level of [0, 2, 4, 8, 12]) {
    const perTree = 2 ** level, slotCount = trees * perTree;
    if (f.forestHistogramBytes(slotCount, maxF, nBins, classes) > ctx.device.limits.maxStorageBufferBindingSize) break;
    const slot = Uint32Array.from({ length: trees * ROWS }, (_, i) => (weight[i] === 0 ? f.NONE : Math.floor(i / ROWS) * perTree + (rand() % perTree)));
    const nodeFeatures = Uint32Array.from({ length: slotCount * maxF }, () => rand() % cols);
    const slotBuf = await uploadNew(ctx, slot, 'slot'), nfBuf = await uploadNew(ctx, nodeFeatures, 'node features');
    const hist = storageBuffer(ctx, f.forestHistogramBytes(slotCount, maxF, nBins, classes), 'hist'), totals = storageBuffer(ctx, slotCount * classes * 4, 'totals');
    const args = { bins: binsBuf, rows: ROWS, trees, slotBase: 0, slotCount, maxF, nBins, classes, weight: weightBuf, slot: slotBuf, labels: labelsBuf, nodeFeatures: nfBuf, hist, totals };
    // Weight and slot of every (tree, row); per active one its label and maxF bin bytes; the histogram cleared.
    const histBytes = trees * ROWS * 8 + active * (4 + maxF) + f.forestHistogramBytes(slotCount, maxF, nBins, classes);
    const line = { level, slots: slotCount, rows: ROWS, trees };
    for (const variant of ['global', 'shared']) {
      const ms = await marginal((work) => { f.recordForestHistogram(work, args, variant); return totals; });
      line[`histogram ${variant}`] = `${ms.toFixed(2)} ms, ${hbm(histBytes, ms)}`;
    }
    const out = storageBuffer(ctx, slotCount * maxF * f.splitRecordWords(classes) * 4, 'out');
    const bestMs = await marginal((work) => {
      f.recordBestSplits(work, { hist, totals, slotCount, maxF, nBins, classes, nodeFeatures: nfBuf, slotBase: 0, binsPerFeature: work.input(binsPerFeature, 'bins per feature'), criterion: 'gini', minSamplesLeaf: 1, out });
      return out;
    });
    line['best splits'] = `${bestMs.toFixed(2)} ms, ${hbm(f.forestHistogramBytes(slotCount, maxF, nBins, classes), bestMs)}`;
    const decisions = Uint32Array.from({ length: 4 * slotCount }, (_, j) => (j % 4 === 0 ? nodeFeatures[Math.floor(j / 4) * maxF] : j % 4 === 1 ? 127 : j % 4 === 2 ? 2 * Math.floor(j / 4) : 2 * Math.floor(j / 4) + 1));
    const routeMs = await marginal((work) => {
      f.recordRoute(work, { bins: binsBuf, rows: ROWS, trees, slot: slotBuf, decisions: work.input(decisions, 'decisions') });
      return slotBuf;
    });
    line.route = `${routeMs.toFixed(2)} ms, ${hbm(trees * ROWS * 8 + active, routeMs)}`;
    console.log(JSON.stringify(line));
  }
}

mkdirSync(DIR, { recursive: true });
const kind = REGRESSION ? 'reg' : 'cls';
const all = join(DIR, `${kind}-${ROWS + TEST}x${D}.arrow`), train = join(DIR, `${kind}-train-${ROWS}.arrow`), test = join(DIR, `${kind}-test-${TEST}.arrow`);
if (!existsSync(train)) {
  const generator = REGRESSION
    ? ['make-regression', '--n-samples', String(ROWS + TEST), '--n-features', String(D), '--n-informative', '16', '--noise', '1', '--seed', '1', '-o', all]
    : ['make-classification', '--n-samples', String(ROWS + TEST), '--n-features', String(D), '--n-informative', '16', '--n-redundant', '4', '--seed', '1', '-o', all];
  log(`${generator[0]} ${ROWS + TEST} x ${D} ...`);
  const r = gpuframe(generator);
  if (r.code !== 0) throw new Error(`${generator[0]} failed: ${r.stderr.slice(-300)}`);
  const table = tableFromIPC(readFileSync(all));
  writeFileSync(train, tableToIPC(table.slice(0, ROWS), 'file'));
  writeFileSync(test, tableToIPC(table.slice(ROWS), 'file'));
  add(`${generator[0]} ${ROWS + TEST} x ${D}, split ${ROWS} / ${TEST}`, `${r.seconds.toFixed(1)} s`);
}

const configs = [
  { name: 'gpu 0', flags: ['--device', 'gpu', '--gpus', '0', '--workers', '0'] },
  { name: 'gpu 0,1', flags: ['--device', 'gpu', '--gpus', '0,1', '--workers', '0'] },
  { name: 'gpus + cpu workers', flags: ['--device', 'gpu', '--gpus', '0,1', '--workers', String(availableParallelism())] },
  { name: 'cpu', flags: ['--device', 'cpu', '--workers', String(availableParallelism())] },
].filter((c) => !process.env.CONFIGS || process.env.CONFIGS.split(',').includes(c.name.replace(/\W+/g, '_')));

// A GPU left idle sits at a low clock and takes about a second of work to reach its full one, a
// large share of a 1-2 s forest: so all GPUs are warmed first (an untimed forest of 20 trees), and
// each configuration runs ROUNDS times, interleaved, its fastest trees reported.
const ROUNDS = Number(process.env.ROUNDS ?? 2);
if (configs.some((c) => c.flags.includes('gpu'))) {
  log('warming the GPUs (rf-train, 20 trees, all GPUs, untimed) ...');
  gpuframe(['rf-train', train, '--target', 'y', '--n-estimators', '20', '--max-depth', String(DEPTH), '--seed', '2', '--model-out', join(DIR, 'rf-warm.json'), ...BLOCKSIZE, '--device', 'gpu', '--workers', '0']);
}
const runs = Object.fromEntries(configs.map((c) => [c.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const c of configs) {
    const tag = c.name.replace(/\W+/g, '_'), model = join(DIR, `rf-${tag}.json`), trace = join(DIR, `rf-${tag}.trace.json`);
    log(`rf-train with ${c.flags.join(' ')} (round ${round + 1} of ${ROUNDS}) ...`);
    const r = gpuframe(['rf-train', train, '--target', 'y', '--n-estimators', String(TREES), '--max-depth', String(DEPTH), '--seed', '1', '--model-out', model, '--trace', trace, ...BLOCKSIZE, ...c.flags]);
    if (r.code !== 0) { add(`rf-train ${c.name}`, `failed (exit ${r.code})`, r.stderr.slice(-400)); continue; }
    log(`  trace: ${breakdown(trace)}`);
    for (const line of r.stderr.split('\n').filter((l) => l.startsWith('forest batch'))) log(`  ${line}`);
    runs[c.name].push({ seconds: r.seconds, forest: traceSpanSeconds(trace, 'ml grow trees'), text: readFileSync(model, 'utf8'), warning: r.stderr.match(/warning[^\n]*/i)?.[0] });
  }
}
const models = {};
for (const c of configs) {
  if (runs[c.name].length === 0) continue;
  const tag = c.name.replace(/\W+/g, '_'), model = join(DIR, `rf-${tag}.json`);
  const best = runs[c.name].reduce((a, b) => (b.forest < a.forest ? b : a));
  const sameModel = runs[c.name].every((run) => run.text === best.text);
  // Arrow output keeping only y: the time is the model's, not formatting 32 float columns as text.
  const proba = REGRESSION ? [] : ['--proba'];
  const p = gpuframe(['predict', test, '--model', model, ...proba, '--keep', 'y', '-o', join(DIR, `pred-${tag}.arrow`), ...BLOCKSIZE, ...c.flags]);
  const acc = Number(new RegExp(`${SCORE} ([\\d.e-]+)`).exec(p.stderr)?.[1]);
  models[c.name] = { text: best.text, seconds: best.seconds, forest: best.forest, acc, predicted: join(DIR, `pred-${tag}.arrow`) };
  const all = runs[c.name].map((run) => `${run.seconds.toFixed(2)} / ${run.forest.toFixed(2)} s`).join(', ');
  add(`rf-train ${c.name}`, `${best.seconds.toFixed(2)} s total, trees ${best.forest.toFixed(2)} s (fastest trees of ${runs[c.name].length}: total / trees ${all})`,
    `held-out ${SCORE} ${acc.toFixed(4)}${sameModel ? '' : ' — MODEL DIFFERS BETWEEN ROUNDS'}${best.warning ? ` — ${best.warning}` : ''}`);
  add(`predict ${TEST} rows (${proba.join("")} --keep y, Arrow out), ${c.name}`, p.code === 0 ? `${p.seconds.toFixed(2)} s` : `failed (exit ${p.code})`, p.code === 0 ? '' : p.stderr.slice(-300));
}
if (models['gpu 0,1']) {
  // The same GPU-grown model predicted on CPU workers: the bytes must equal the GPU prediction.
  const out = join(DIR, 'pred-gpu-model-on-cpu.arrow');
  const p = gpuframe(['predict', test, '--model', join(DIR, 'rf-gpu_0_1.json'), ...(REGRESSION ? [] : ['--proba']), '--keep', 'y', '-o', out, ...BLOCKSIZE, '--device', 'cpu', '--workers', String(availableParallelism())]);
  add(`predict ${TEST} rows, GPU-grown model on ${availableParallelism()} CPU workers`, p.code === 0 ? `${p.seconds.toFixed(2)} s` : `failed (exit ${p.code})`,
    p.code === 0 ? (readFileSync(out).equals(readFileSync(models['gpu 0,1'].predicted)) ? 'output identical to the GPUs\' prediction' : 'OUTPUT DIFFERS from the GPUs\' prediction') : p.stderr.slice(-300));
}
if (models['gpu 0'] && models['gpu 0,1']) {
  add('rf model 1 GPU = 2 GPUs', models['gpu 0'].text === models['gpu 0,1'].text ? 'identical bytes' : 'DIFFERENT');
  add('rf 2 GPUs speed-up', `${(models['gpu 0'].seconds / models['gpu 0,1'].seconds).toFixed(2)}× total, ${(models['gpu 0'].forest / models['gpu 0,1'].forest).toFixed(2)}× trees`, 'goal ≥ 1.8×');
}

// ---- scikit-learn on the same rows (read from raw float32 files written here) ----
if (process.env.PEERS !== '0') {
  const raw = (arrowPath, rows) => {
    const table = tableFromIPC(readFileSync(arrowPath));
    const x = new Float32Array(rows * D), y = new Float32Array(rows);
    for (let j = 0; j < D; j++) { const col = table.getChild(`x${j}`).toArray(); for (let r = 0; r < rows; r++) x[r * D + j] = col[r]; }
    const yc = table.getChild('y').toArray();
    for (let r = 0; r < rows; r++) y[r] = Number(yc[r]);
    writeFileSync(`${arrowPath}.x.f32`, x); writeFileSync(`${arrowPath}.y.f32`, y);
  };
  raw(train, ROWS); raw(test, TEST);
  const script = `
import time, numpy as np, os
from sklearn.ensemble import ${REGRESSION ? 'RandomForestRegressor as Forest' : 'RandomForestClassifier as Forest'}
ld = lambda p, n: (np.fromfile(p + '.x.f32', dtype=np.float32).reshape(n, ${D}), np.fromfile(p + '.y.f32', dtype=np.float32))
xt, yt = ld('${train}', ${ROWS}); xs, ys = ld('${test}', ${TEST})
t = time.perf_counter()
rf = Forest(n_estimators=${TREES}, max_depth=${DEPTH}, max_features='sqrt', n_jobs=-1, random_state=1).fit(xt, yt)
fit = time.perf_counter() - t
t = time.perf_counter()
proba = ${REGRESSION ? 'rf.predict(xs)' : 'rf.predict_proba(xs)'}
pred = time.perf_counter() - t
print(f"{fit:.2f} s fit on {os.cpu_count()} cores, held-out ${SCORE} {rf.score(xs, ys):.4f}, predict {pred:.2f} s")`;
  log(`scikit-learn ${REGRESSION ? 'RandomForestRegressor' : 'RandomForestClassifier'} ...`);
  const t0 = performance.now();
  const r = spawnSync('python3', ['-c', script], { encoding: 'utf8', timeout: TIMEOUT_S * 1000 });
  add(`scikit-learn ${REGRESSION ? 'RandomForestRegressor' : 'RandomForestClassifier'}, all cores`, r.status === 0 ? r.stdout.trim() : 'failed', r.status === 0 ? `${((performance.now() - t0) / 1000).toFixed(1)} s with loading` : (r.stderr ?? '').trim().split('\n').slice(-2).join(' | '));
  const fit = Number(/^([\d.]+) s fit/.exec(r.stdout ?? '')?.[1]);
  for (const [name, m] of Object.entries(models)) {
    if (fit > 0) add(`scikit-learn fit / gpuframe ${name}`, `${(fit / m.seconds).toFixed(1)}× (whole command), ${(fit / m.forest).toFixed(1)}× (trees)`, `goal ≥ 10× at ${SCORE} within 1 point`);
  }
}

print();
log('done');
