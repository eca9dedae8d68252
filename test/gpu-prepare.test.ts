// Kernels compiled while a matrix loads (gpu-matrix.ts): the list each trainer prepares holds every
// kernel its tasks dispatch (a kernel missing from it would compile at its first dispatch, on the
// worker's thread, as before), and kernelsPrepared waits for the compiles.

import { describe, expect, it } from 'vitest';
import { kernelFor, kernelsPrepared } from '../src/engine/gpu/buffers.js';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { kmeansKernels, MAX_ABS, recordMaxAbs, recordParSample, recordPotential, recordPpUpdate, recordSmallestHash, recordStep, recordTotal, stepPairs } from '../src/kernels/kmeans.js';
import { gramKernels, gramPairs, linregKernels, momentPairs, recordGram, recordResidual } from '../src/kernels/linreg.js';
import { freeMatrix, GpuWork, prepareKernels, uploadMatrix, type KernelSource } from '../src/kernels/ml-matrix.js';
import { StagingRing } from '../src/engine/gpu/buffers.js';
import { growTreesOnGpu } from '../src/engine/exec/gpu-forest.js';
import type { BinnedData } from '../src/engine/ml/forest-tree.js';
import { Rng } from '../src/engine/ml/random.js';
import { forestKernels } from '../src/kernels/forest.js';

/** The labels a GpuWork dispatches while `record` runs. */
function dispatchedLabels(work: GpuWork, record: () => void): Set<string> {
  const labels = new Set<string>();
  const dispatch = work.dispatch;
  work.dispatch = (label, code, entry, buffers, workgroups) => { labels.add(label); dispatch.call(work, label, code, entry, buffers, workgroups); };
  try { record(); } finally { work.dispatch = dispatch; }
  return labels;
}

describe.skipIf(skipGpuTests)('kernels prepared while the rows load', () => {
  it('k-means and linreg prepare every kernel their tasks dispatch; kernelsPrepared waits for the compiles', async () => {
    const ctx = await testGpu();
    const rows = 3000, d = 6, k = 5;
    const x = Float64Array.from({ length: rows * d }, (_, i) => Math.sin(i) * 10);
    const y = Float64Array.from({ length: rows }, (_, i) => Math.cos(i));
    const m = await uploadMatrix(ctx, new StagingRing(ctx, 1 << 16, 2), x, y, rows, d);
    const work = new GpuWork(ctx);
    const out = work.temp(stepPairs(k, d) * 8 + 4096, 'out'), minD2 = work.temp(rows * 4, 'minD2');
    const centres = work.input(new Float32Array(k * d).fill(1), 'centres');
    const moments = dispatchedLabels(work, () => {
      recordGram(work, m, new Float64Array(d + 1), momentPairs(d + 1), out, 0);
      recordMaxAbs(work, m, out, 0);
    });
    const kmeans = dispatchedLabels(work, () => {
      recordStep(work, m, out, rows, centres, 1, k, out, 0);
      recordStep(work, m, out, rows, centres, 1, k, out, 0, { countsOnly: true });
      recordPpUpdate(work, m, minD2, centres, 0, 2);
      recordTotal(work, m, minD2, out, 0);
      recordPotential(work, m, minD2, centres, 2, out, 0);
      recordSmallestHash(work, rows, 7, 0, out, 0);
      recordParSample(work, rows, minD2, 7, 0, 2, 1, 16, out, 0);
    });
    const linreg = dispatchedLabels(work, () => {
      recordGram(work, m, new Float64Array(d + 1), gramPairs(d), out, 0);
      recordResidual(work, m, new Float64Array(d), 0, out, 0);
    });
    work.release();
    freeMatrix(ctx, m);
    const labels = (sources: KernelSource[]) => new Set(sources.map((s) => s[0]));
    const momentSources = [...gramKernels(ctx), MAX_ABS];
    const preparedKmeans = labels([...momentSources, ...kmeansKernels(ctx, d, k)]), preparedLinreg = labels([...momentSources, ...linregKernels()]);
    for (const l of [...moments, ...kmeans]) expect(preparedKmeans.has(l), `k-means dispatches ${l}`).toBe(true);
    for (const l of [...moments, ...linreg]) expect(preparedLinreg.has(l), `linreg dispatches ${l}`).toBe(true);

    // Kernels of another shape (not compiled by the dispatches above): compiled once kernelsPrepared resolves.
    const fresh = kmeansKernels(ctx, d + 1, k + 1);
    expect(fresh.some(([label, code, entry]) => !kernelFor(ctx, label, code).compiled(entry))).toBe(true);
    prepareKernels(ctx, fresh);
    await kernelsPrepared(ctx);
    for (const [label, code, entry] of fresh) expect(kernelFor(ctx, label, code).compiled(entry), label).toBe(true);
  });

  it('the forest\'s start-up compiles hold every kernel growing trees dispatches (classification and regression, shallow and deep)', async () => {
    const ctx = await testGpu();
    const labels = new Set<string>(), dispatch = GpuWork.prototype.dispatch;
    GpuWork.prototype.dispatch = function (this: GpuWork, label, code, entry, buffers, workgroups) { labels.add(label); dispatch.call(this, label, code, entry, buffers, workgroups); };
    try {
      const rows = 3000, cols = 5, rng = new Rng(7, 'prepare forest');
      const binsPerFeature = Int32Array.from({ length: cols }, () => 2 + rng.nextInt(60));
      const bins = new Uint8Array(rows * cols);
      for (let f = 0; f < cols; f++) for (let r = 0; r < rows; r++) bins[f * rows + r] = rng.nextInt(binsPerFeature[f]);
      const target = Int32Array.from({ length: rows }, (_, r) => (bins[r] + bins[rows + r]) % 4);
      const data: BinnedData = { rows, cols, bins, binsPerFeature, target, nClasses: 4 };
      await growTreesOnGpu(ctx, data, { task: 'classification', criterion: 'gini', maxDepth: 12, minSamplesLeaf: 1, maxFeatures: 3, bootstrap: true, seed: 1 }, [0, 1, 2, 3]);
      const yq = Float64Array.from({ length: rows }, (_, r) => bins[r] * 0.5 - bins[2 * rows + r]);
      await growTreesOnGpu(ctx, { ...data, target: yq, nClasses: 0 }, { task: 'regression', criterion: 'variance', maxDepth: 8, minSamplesLeaf: 2, maxFeatures: 5, bootstrap: false, seed: 2 }, [0, 1]);
    } finally {
      GpuWork.prototype.dispatch = dispatch;
    }
    const prepared = new Set(forestKernels(ctx).map((s) => s[0]));
    expect(labels.size).toBeGreaterThan(4);
    for (const l of labels) expect(prepared.has(l), `growing trees dispatches ${l}`).toBe(true);
  });
});
