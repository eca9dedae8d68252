// Random-forest trees grown by the GPU split finder (lavapipe) against the CPU finder: the same
// accuracy on held-out rows of the breast-cancer and digits fixtures, mostly the same nodes (only
// the choice among splits is scored in f32 on the device), the same forest whichever way trees are
// grouped into tasks and batches, and a GPU-grown model that loads and predicts on the CPU.

import { describe, expect, it } from 'vitest';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { growTreesOnGpu } from '../src/engine/exec/gpu-forest.js';
import { fitRandomForest, type ForestParams, type TreeGrower } from '../src/engine/ml/forest.js';
import { growTreesOnCpu } from '../src/engine/ml/forest-split-cpu.js';
import type { BinnedData, GrownTree, TreeSpec } from '../src/engine/ml/forest-tree.js';
import { accuracy } from '../src/engine/ml/metrics.js';
import { parseModel, serializeModel } from '../src/engine/ml/model-file.js';
import { inMemoryPartitions, splitRows } from '../src/engine/ml/partitioned.js';
import { predictBatch } from '../src/engine/ml/predict.js';
import { Rng } from '../src/engine/ml/random.js';
import { loadFixture, split, type Dataset } from './ml-helpers.js';

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
