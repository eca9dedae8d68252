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
});
