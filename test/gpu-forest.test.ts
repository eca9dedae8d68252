// Random-forest trees grown by the GPU split finder (lavapipe) against the CPU finder: the same
// accuracy on held-out rows of the breast-cancer and digits fixtures, mostly the same nodes (only
// the choice among splits is scored in f32 on the device), the same forest whichever way trees are
// grouped into tasks and batches, and a GPU-grown model that loads and predicts on the CPU.
// Regression trees too: the same trees alone or in a batch, leaf values the float64 means of their
// rows, held-out R² close to the CPU forest's, and rf-train --device gpu through the CLI.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { growTreesOnGpu } from '../src/engine/exec/gpu-forest.js';
import { fitRandomForest, type ForestParams, type TreeGrower } from '../src/engine/ml/forest.js';
import { growTreesOnCpu } from '../src/engine/ml/forest-split-cpu.js';
import type { BinnedData, GrownTree, TreeSpec } from '../src/engine/ml/forest-tree.js';
import { accuracy, r2 } from '../src/engine/ml/metrics.js';
import { generateChunk } from '../src/engine/ml/generate.js';
import { treeWeights } from '../src/engine/ml/forest-tree.js';
import { parseModel, serializeModel } from '../src/engine/ml/model-file.js';
import { inMemoryPartitions, splitRows } from '../src/engine/ml/partitioned.js';
import { predictBatch } from '../src/engine/ml/predict.js';
import { Rng } from '../src/engine/ml/random.js';
import { loadFixture, split, type Dataset } from './ml-helpers.js';
import { gpuframe } from './helpers/cli.js';
import { tempDir } from './helpers/data.js';

/** Grows trees on the test GPU, the way GPU workers do. */
async function gpuGrower(): Promise<TreeGrower> {
  const ctx = await testGpu();
  return { grow: (data, spec, trees) => growTreesOnGpu(ctx, data, spec, trees) };
}

const partitioned = (ds: Dataset, rowsPerPartition: number) => inMemoryPartitions(ds.names, splitRows(ds.x, ds.y, ds.cols, rowsPerPartition));

async function heldOutAccuracy(ds: Dataset, params: ForestParams) {
  const { train, test } = split(ds);
  const cpu = await fitRandomForest(partitioned(train, 200), params);
  const gpu = await fitRandomForest(partitioned(train, 200), params, await gpuGrower());
  const score = (m: typeof cpu) => accuracy(test.y, predictBatch(m, test.x, test.rows).prediction);
  return { cpu: score(cpu), gpu: score(gpu), cpuNodes: cpu.trees.feature, gpuNodes: gpu.trees.feature };
}

function randomBinned(seed: number, rows: number, cols: number, classes: number): BinnedData {
  const rng = new Rng(seed, 'gpu-forest-test');
  const binsPerFeature = Int32Array.from({ length: cols }, (_, f) => (f === 2 ? 1 : 2 + rng.nextInt(40)));
  const bins = new Uint8Array(rows * cols);
  for (let f = 0; f < cols; f++) for (let r = 0; r < rows; r++) bins[f * rows + r] = rng.nextInt(binsPerFeature[f]);
  const target = Int32Array.from({ length: rows }, (_, r) => (bins[r] * 3 + bins[3 * rows + r] + rng.nextInt(6)) % classes);
  return { rows, cols, bins, binsPerFeature, target, nClasses: classes };
}

describe.skipIf(skipGpuTests)('random forest on the GPU', () => {
  it('breast cancer: held-out accuracy within 1 point of the CPU forest, mostly the same splits', async () => {
    const r = await heldOutAccuracy(loadFixture('breast-cancer.csv'), { nEstimators: 20, maxDepth: 10, seed: 3 });
    expect(r.gpu).toBeGreaterThan(0.9);
    expect(Math.abs(r.gpu - r.cpu)).toBeLessThanOrEqual(0.01);
    // Only f32 near-ties within a feature can make the forests differ: their sizes stay close.
    expect(r.gpuNodes.length).toBeGreaterThan(100);
    expect(Math.abs(r.gpuNodes.length - r.cpuNodes.length)).toBeLessThanOrEqual(0.02 * r.cpuNodes.length);
  }, 60_000);

  it('digits (10 classes, entropy): held-out accuracy within 1 point of the CPU forest', async () => {
    const r = await heldOutAccuracy(loadFixture('digits.csv'), { nEstimators: 10, maxDepth: 12, criterion: 'entropy', seed: 5 });
    expect(r.gpu).toBeGreaterThan(0.85);
    expect(Math.abs(r.gpu - r.cpu)).toBeLessThanOrEqual(0.01);
    expect(Math.abs(r.gpuNodes.length - r.cpuNodes.length)).toBeLessThanOrEqual(0.02 * r.cpuNodes.length);
  }, 60_000);

  it('grows the trees the CPU finder grows (bar f32 near-ties), the same alone or in a batch', async () => {
    const ctx = await testGpu();
    // Few rows per node relative to bins: scores rarely tie, and any tie shows up as a difference.
    const data = randomBinned(1, 5000, 6, 3);
    const spec: TreeSpec = { task: 'classification', criterion: 'gini', maxDepth: 6, minSamplesLeaf: 3, maxFeatures: 3, bootstrap: true, seed: 2 };
    const gpu = await growTreesOnGpu(ctx, data, spec, [0, 1, 2]);
    const cpu = growTreesOnCpu(data, spec, [0, 1, 2]);
    const same = gpu.filter((t, i) => JSON.stringify(t) === JSON.stringify(cpu[i])).length;
    expect(same).toBeGreaterThanOrEqual(2);
    const alone = [];
    for (const t of [0, 1, 2]) alone.push((await growTreesOnGpu(ctx, data, spec, [t]))[0]);
    expect(alone).toEqual(gpu);
    expect(Math.min(...gpu.map((t) => t.feature.length))).toBeGreaterThan(31);
  }, 60_000);

  it('the same model file whichever way trees are grouped into tasks and partitions; it loads and predicts', async () => {
    const { train, test } = split(loadFixture('breast-cancer.csv'));
    const gpu = await gpuGrower();
    /** Grows the trees in tasks of `size` trees, last task first (as workers might finish them). */
    const inTasks = (size: number): TreeGrower => ({
      async grow(data, spec, trees) {
        const groups: number[][] = [];
        for (let at = 0; at < trees.length; at += size) groups.push(trees.slice(at, at + size));
        const grown = new Map<number, GrownTree>();
        for (const g of groups.reverse()) (await gpu.grow(data, spec, g)).forEach((t, i) => grown.set(g[i], t));
        return trees.map((t) => grown.get(t)!);
      },
    });
    const files = [];
    for (const [rows, size] of [[train.rows, 12], [Math.ceil(train.rows / 2), 5], [60, 1]]) {
      files.push(serializeModel(await fitRandomForest(partitioned(train, rows), { nEstimators: 12, seed: 4, criterion: 'entropy' }, inTasks(size))));
    }
    expect(files[1]).toBe(files[0]);
    expect(files[2]).toBe(files[0]);
    const loaded = parseModel(files[0], 'rf.json');
    expect(accuracy(test.y, predictBatch(loaded, test.x, test.rows).prediction)).toBeGreaterThan(0.9);
  }, 60_000);
});

/** make_regression rows (4 features, 2 informative, noise 1), the target shifted to be negative. */
function regressionData(rows: number, seed: number): Dataset {
  const b = generateChunk('regression', { nSamples: rows, nFeatures: 4, nInformative: 2, noise: 1, seed }, 0, rows);
  const names = ['x0', 'x1', 'x2', 'x3'];
  const x = new Float64Array(rows * 4);
  names.forEach((_, j) => (b.columns[j].values as Float64Array).forEach((v, r) => { x[r * 4 + j] = v; }));
  const y = Float64Array.from(b.columns[4].values as Float64Array, (v) => v - 1000);
  return { names, rows, cols: 4, x, y };
}

/** Random binned rows with a float target depending on features 0 and 1, around `offset`. */
function randomRegressionBinned(seed: number, rows: number, cols: number, offset: number): BinnedData {
  const data = randomBinned(seed, rows, cols, 2);
  const rng = new Rng(seed, 'regression target');
  const target = Float64Array.from({ length: rows }, (_, r) => offset + data.bins[r] * 0.37 - data.bins[rows + r] * 1.3 + rng.nextFloat());
  return { ...data, target, nClasses: 0 };
}

describe.skipIf(skipGpuTests)('regression forest on the GPU', () => {
  it('the same trees alone or in a batch; each leaf is the float64 mean of its in-bag rows', async () => {
    const ctx = await testGpu();
    const data = randomRegressionBinned(3, 6000, 6, -250);
    const spec: TreeSpec = { task: 'regression', criterion: 'gini', maxDepth: 8, minSamplesLeaf: 2, maxFeatures: 4, bootstrap: true, seed: 5 };
    const batch = await growTreesOnGpu(ctx, data, spec, [0, 1, 2, 3]);
    const alone = [];
    for (const t of [3, 1, 0, 2]) alone[t] = (await growTreesOnGpu(ctx, data, spec, [t]))[0];
    expect(alone).toEqual(batch);
    expect(Math.min(...batch.map((t) => t.feature.length))).toBeGreaterThan(63);
    batch.forEach((tree, t) => {
      const w = treeWeights(data.rows, spec, t);
      const sum = new Float64Array(tree.feature.length), weight = new Float64Array(tree.feature.length);
      for (let r = 0; r < data.rows; r++) {
        if (w[r] === 0) continue;
        let node = 0;
        while (tree.feature[node] >= 0) node = data.bins[tree.feature[node] * data.rows + r] <= tree.bin[node] ? tree.left[node] : tree.right[node];
        sum[node] += w[r] * data.target[r];
        weight[node] += w[r];
      }
      for (let node = 0; node < tree.feature.length; node++) {
        if (tree.feature[node] >= 0) continue;
        const mean = sum[node] / weight[node];
        expect(Math.abs(tree.value[node] - mean), `tree ${t} leaf ${node}`).toBeLessThanOrEqual(1e-12 * Math.abs(mean));
      }
    });
  }, 60_000);

  it('make_regression: held-out R² within 0.02 of the CPU forest', async () => {
    const { train, test } = split(regressionData(4000, 8));
    const params: ForestParams = { task: 'regression', nEstimators: 20, nBins: 64, seed: 2 };
    const cpu = await fitRandomForest(partitioned(train, 1000), params);
    const gpu = await fitRandomForest(partitioned(train, 1000), params, await gpuGrower());
    const score = (m: typeof cpu) => r2(test.y, predictBatch(m, test.x, test.rows).prediction);
    expect(score(gpu)).toBeGreaterThan(0.8);
    expect(Math.abs(score(gpu) - score(cpu))).toBeLessThanOrEqual(0.02);
  }, 60_000);

  it('rf-train --device gpu --workers 0 grows regression trees on the device; the model predicts held-out rows', async () => {
    const dir = tempDir('gpu-forest');
    const path = (name: string) => join(dir, name);
    const gen = await gpuframe(['make-regression', '--n-samples', '5000', '--n-features', '4', '--n-informative', '2', '--noise', '1', '--bias', '-500', '--seed', '3', '-o', path('reg.csv')]);
    expect(gen.code, gen.stderr).toBe(0);
    const lines = readFileSync(path('reg.csv'), 'utf8').trimEnd().split('\n');
    writeFileSync(path('train.csv'), lines.slice(0, 4001).join('\n') + '\n');
    writeFileSync(path('test.csv'), [lines[0], ...lines.slice(4001)].join('\n') + '\n');
    const train = await gpuframe(['rf-train', path('train.csv'), '--target', 'y', '--n-estimators', '20', '--n-bins', '64', '--seed', '1', '--device', 'gpu', '--workers', '0', '--model-out', path('rf.json')],
      { env: { GPUFRAME_GPU_PHASES: '1' } });
    expect(train.code, train.stderr).toBe(0);
    // The phase report of a device-grown batch: the trees did not fall back to the CPU finder.
    expect(train.stderr).toMatch(/forest batch of \d+ trees/);
    expect(JSON.parse(readFileSync(path('rf.json'), 'utf8')).task).toBe('regression');
    const scored = await gpuframe(['predict', path('test.csv'), '--model', path('rf.json'), '-o', path('pred.csv')]);
    expect(scored.code, scored.stderr).toBe(0);
    expect(Number(/R² (\S+) over/.exec(scored.stderr)![1])).toBeGreaterThan(0.8);
  }, 120_000);
});
