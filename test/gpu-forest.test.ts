// Random-forest trees grown by the GPU split finder (lavapipe) against the CPU finder: the same
// accuracy on held-out rows of the breast-cancer and digits fixtures, mostly the same nodes (only
// the bin choice within a feature is scored in f32 on the device), the same forest whichever way
// trees are spread over workers and batches, and a GPU-grown model that loads and predicts on the CPU.

import { describe, expect, it } from 'vitest';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { growTreesOnGpu, trainTreesOnGpu } from '../src/engine/exec/gpu-forest.js';
import { fitRandomForest, type ForestParams } from '../src/engine/ml/forest.js';
import { growTreesOnCpu } from '../src/engine/ml/forest-split-cpu.js';
import type { BinnedData, TreeSpec } from '../src/engine/ml/forest-tree.js';
import { accuracy } from '../src/engine/ml/metrics.js';
import { parseModel, serializeModel } from '../src/engine/ml/model-file.js';
import { inMemoryPartitions, splitRows, type PartitionedMatrix } from '../src/engine/ml/partitioned.js';
import { predictBatch } from '../src/engine/ml/predict.js';
import { Rng } from '../src/engine/ml/random.js';
import { loadFixture, split, type Dataset } from './ml-helpers.js';

/** Partitions in this process whose workers grow trees on the test GPU (every other task on the CPU). */
async function onGpu(ds: Dataset, rowsPerPartition: number): Promise<PartitionedMatrix> {
  const ctx = await testGpu();
  const parts = splitRows(ds.x, ds.y, ds.cols, rowsPerPartition);
  const cpu = inMemoryPartitions(ds.names, parts);
  return {
    ...cpu,
    async map<R>(task: string, args: unknown): Promise<R[]> {
      if (task !== 'rf.trainTrees') return cpu.map<R>(task, args);
      return (await trainTreesOnGpu(ctx, parts, args as never)) as R[];
    },
  };
}

async function heldOutAccuracy(ds: Dataset, params: ForestParams) {
  const { train, test } = split(ds);
  const cpu = await fitRandomForest(inMemoryPartitions(train.names, splitRows(train.x, train.y, train.cols, 200)), params);
  const gpu = await fitRandomForest(await onGpu(train, 200), params);
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

  it('the same model file for 1, 2 and 7 partitions (trees spread differently over workers); it loads and predicts', async () => {
    const { train, test } = split(loadFixture('breast-cancer.csv'));
    const files = [];
    for (const size of [train.rows, Math.ceil(train.rows / 2), 60]) {
      files.push(serializeModel(await fitRandomForest(await onGpu(train, size), { nEstimators: 12, seed: 4, criterion: 'entropy' })));
    }
    expect(files[1]).toBe(files[0]);
    expect(files[2]).toBe(files[0]);
    const loaded = parseModel(files[0], 'rf.json');
    expect(accuracy(test.y, predictBatch(loaded, test.x, test.rows).prediction)).toBeGreaterThan(0.9);
  }, 60_000);
});
