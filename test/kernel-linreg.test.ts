// Linear-regression kernels on lavapipe against float64 references: the centred Gram matrix and
// Xᵀ y, column moments (the same kernel with a constant-1 column) and the residual sum of squares,
// in double-float, on data far from the origin (where f32 alone would lose the centred values),
// d = 1, d = 50 (more tiles than threads: several passes over a block), and row counts that are
// not a multiple of a block or of a sub-tile. Gram entries within 1e-12 of the largest (measured
// 1e-14 to 8e-14: the double-float multiply-add keeps its exact product).

import { describe, expect, it } from 'vitest';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { StagingRing } from '../src/engine/gpu/buffers.js';
import type { GpuContext } from '../src/engine/gpu/device.js';
import { fmaCheckPairs, judgeFma } from '../src/engine/gpu/fma.js';
import { gramCpu, gramOnGpu, gramPairs, gramTiles, momentPairs, recordGram, recordResidual } from '../src/kernels/linreg.js';
import { GRAM_TILE_COLUMNS, MAX_GRAM_COLUMNS, NO_ENTRY, ONE_COLUMN } from '../src/kernels/linreg.wgsl.js';
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
  for (const [rows, d, offset] of [[10_000, 4, 1000], [4097, 1, 0], [777, 6, -50], [2500, 50, 20]] as const) {
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

  it('Gram tiles: every pair in one slot of one tile, on its two columns (a pair and its mirror alike)', () => {
    const columns = 7, pairs = new Uint32Array([...gramPairs(5), 6, 2, 6, 6, 0, ONE_COLUMN, ONE_COLUMN, ONE_COLUMN]);
    const { words, count } = gramTiles(pairs, columns);
    const b = GRAM_TILE_COLUMNS, per = 2 * b + b * b, seen = new Map<number, [number, number]>();
    for (let t = 0; t < count; t++) {
      for (let s = 0; s < b * b; s++) {
        const e = words[t * per + 2 * b + s];
        if (e === NO_ENTRY) continue;
        expect(seen.has(e), `entry ${e} twice`).toBe(false);
        seen.set(e, [words[t * per + Math.floor(s / b)], words[t * per + b + (s % b)]]);
      }
    }
    const index = (c: number) => (c === ONE_COLUMN ? columns : c);
    for (let e = 0; e < pairs.length / 2; e++) {
      const want = [index(pairs[2 * e]), index(pairs[2 * e + 1])].sort((x, y) => x - y);
      expect(seen.get(e), `entry ${e}`).toEqual(want);
    }
    expect(() => gramTiles(new Uint32Array([1, 2, 2, 1]), columns)).toThrow(/twice/);
  });

  it('the fused-fma Gram gives the bits of Dekker\'s split where the device\'s fma is fused', async (test) => {
    const ctx = await testGpu();
    if (!ctx.fusedFma) test.skip(); // lavapipe rounds fma's product: only Dekker's split is exact there
    const rows = 3000, d = 5;
    const { x, y } = regressionData(9, rows, d, 100);
    const m = await upload(ctx, x, y, rows, d);
    const shift = new Float64Array(d + 1).fill(99.5), pairs = gramPairs(d), n = pairs.length / 2;
    const work = new GpuWork(ctx);
    const outs = [false, true].map((fused) => { const out = work.temp(n * 8, 'out'); recordGram(work, m, shift, pairs, out, 0, { fused }); return { buf: out, floats: 2 * n }; });
    const [dekker, fused] = await work.finish(outs);
    freeMatrix(ctx, m);
    expect(Array.from(fused)).toEqual(Array.from(dekker));
  });

  it('the fma check: a product\'s exact rounding error means fused, the rounded product\'s 0 not', () => {
    const pairs = fmaCheckPairs(), n = (pairs.length - 2) / 2;
    const exact = Float32Array.from({ length: n }, (_, i) => pairs[2 * i] * pairs[2 * i + 1] - Math.fround(pairs[2 * i] * pairs[2 * i + 1]));
    expect(exact.filter((v) => v !== 0).length, 'products that need more than 24 bits').toBeGreaterThan(n * 0.9);
    expect(judgeFma(pairs, exact)).toBe(true);
    expect(judgeFma(pairs, new Float32Array(n))).toBe(false);
    const oneOff = exact.slice(); oneOff[n - 1] = 0;
    expect(judgeFma(pairs, oneOff)).toBe(false);
  });

  it(`more than ${MAX_GRAM_COLUMNS} columns are left to the CPU code`, () => {
    expect(gramOnGpu(MAX_GRAM_COLUMNS)).toBe(true);
    expect(gramOnGpu(MAX_GRAM_COLUMNS + 1)).toBe(false);
  });
});
