// Linear-regression kernels on lavapipe against float64 references: the centred Gram matrix and
// Xᵀ y, column moments (the same kernel with a constant-1 column) and the residual sum of squares,
// in double-float, on data far from the origin (where f32 alone would lose the centred values),
// d = 1, d = 40 (more entries than threads: several passes over a block), and row counts that are
// not a multiple of a block or of a sub-tile. Gram entries within 1e-12 of the largest (measured
// 1e-14 to 8e-14: the double-float multiply-add keeps its exact product).

import { describe, expect, it } from 'vitest';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { StagingRing } from '../src/engine/gpu/buffers.js';
import type { GpuContext } from '../src/engine/gpu/device.js';
import { gramCpu, gramOnGpu, gramPairs, momentPairs, recordGram, recordResidual } from '../src/kernels/linreg.js';
import { MAX_GRAM_COLUMNS } from '../src/kernels/linreg.wgsl.js';
import { freeMatrix, GpuWork, uploadMatrix, type DeviceMatrix } from '../src/kernels/ml-matrix.js';
import { Rng } from '../src/engine/ml/random.js';

let ring: StagingRing | null = null;
function upload(ctx: GpuContext, x: Float64Array, y: Float64Array, rows: number, d: number): Promise<DeviceMatrix> {
  ring ??= new StagingRing(ctx, 1 << 16, 2);
  return uploadMatrix(ctx, ring, x, y, rows, d);
}

function regressionData(seed: number, rows: number, d: number, offset: number) {
  const rng = new Rng(seed, 'linreg-kernel');
  const x = new Float64Array(rows * d).map(() => offset + rng.normal());
  const w = Float64Array.from({ length: d }, (_, j) => j + 0.5);
  const y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 3;
    for (let j = 0; j < d; j++) s += w[j] * x[r * d + j];
    y[r] = s + 0.1 * rng.normal();
  }
  return { x, y, w };
}

function mean(v: ArrayLike<number>, stride: number, at: number, rows: number): number {
  let s = 0;
  for (let r = 0; r < rows; r++) s += v[r * stride + at];
  return s / rows;
}

describe.skipIf(skipGpuTests)('linear-regression kernels', () => {
  for (const [rows, d, offset] of [[10_000, 4, 1000], [4097, 1, 0], [777, 6, -50], [2500, 40, 20]] as const) {
    it(`gram, moments and residuals: ${rows} rows, d = ${d}, values around ${offset}`, async () => {
      const ctx = await testGpu();
      const { x, y, w } = regressionData(rows + d, rows, d, offset);
      const m = await upload(ctx, x, y, rows, d);
      const shift = [...Array.from({ length: d }, (_, j) => mean(x, d, j, rows)), mean(y, 1, 0, rows)];
      const gp = gramPairs(d), mp = momentPairs(d + 1);
      const zeros = new Float64Array(d + 1);
      const work = new GpuWork(ctx);
      const ng = gp.length / 2, nm = mp.length / 2;
      const out = work.temp((ng + nm + 1) * 8, 'out');
      recordGram(work, m, shift, gp, out, 0);
      recordGram(work, m, zeros, mp, out, ng);
      const intercept = 3;
      recordResidual(work, m, w, intercept, out, ng + nm);
      const [pairs] = await work.finish([{ buf: out, floats: (ng + nm + 1) * 2 }]);
      freeMatrix(ctx, m);
      const got = (e: number) => pairs[2 * e] + pairs[2 * e + 1];

      const gram = gramCpu(x, y, rows, d, shift, gp);
      const scale = Math.max(...gram.map(Math.abs));
      gram.forEach((v, e) => expect(Math.abs(got(e) - v), `gram entry ${e}`).toBeLessThanOrEqual(1e-12 * scale));
      const moments = gramCpu(x, y, rows, d, zeros, mp);
      moments.forEach((v, e) => expect(Math.abs(got(ng + e) - v), `moment ${e}`).toBeLessThanOrEqual(1e-11 * Math.max(1, Math.abs(v))));
      let sse = 0;
      for (let r = 0; r < rows; r++) {
        let pred = intercept;
        for (let j = 0; j < d; j++) pred += w[j] * x[r * d + j];
        sse += (y[r] - pred) ** 2;
      }
      expect(Math.abs(got(ng + nm) - sse) / sse).toBeLessThan(1e-5);
    });
  }

  it(`more than ${MAX_GRAM_COLUMNS} columns are left to the CPU code`, () => {
    expect(gramOnGpu(MAX_GRAM_COLUMNS)).toBe(true);
    expect(gramOnGpu(MAX_GRAM_COLUMNS + 1)).toBe(false);
  });
});
