// Linear-regression kernels on lavapipe against float64 references: the centred Gram matrix and
// Xᵀ y, column moments (the same kernel with a constant-1 column) and the residual sum of squares,
// in double-float, on data far from the origin (where f32 alone would lose the centred values),
// d = 1, d = 40 (more entries than threads: several passes over a block), and row counts that are
// not a multiple of a block or of a sub-tile. Gram entries within 1e-12 of the largest (measured
// 1e-14 to 8e-14: the double-float multiply-add keeps its exact product). Both Gram variants
// ('entry-per-thread', the default, and 'row-ranges') get the same checks, and the row-ranges one
// more: its pre-split multiply-add gives dfMulAdd's bits, it repeats its bits, it gives the other
// variant's bits when it takes one range per block, and both give exact sums of integers exactly.

import { describe, expect, it } from 'vitest';
import { firstDifference, skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { StagingRing } from '../src/engine/gpu/buffers.js';
import type { GpuContext } from '../src/engine/gpu/device.js';
import { gramCpu, gramOnGpu, gramPairs, momentPairs, recordGram, recordResidual, rowRangesShape } from '../src/kernels/linreg.js';
import { MAX_GRAM_COLUMNS, MAX_GRAM_COLUMNS_ROW_RANGES, WGSL_PRE_SPLIT, type GramVariant } from '../src/kernels/linreg.wgsl.js';
import { WGSL_DOUBLE_FLOAT } from '../src/kernels/ml-matrix.wgsl.js';
import { WGSL_GRID } from '../src/kernels/wgsl-common.js';
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

const VARIANTS: readonly GramVariant[] = ['entry-per-thread', 'row-ranges'];

/** Data, centring shifts and model of one test shape (d features and y). */
function caseOf(rows: number, d: number, offset: number) {
  const { x, y, w } = regressionData(rows + d, rows, d, offset);
  const means = [...Array.from({ length: d }, (_, j) => mean(x, d, j, rows)), mean(y, 1, 0, rows)];
  // One row would be centred to 0 by its means: an exact 0 on the CPU, an ulp of the decode (x to
  // 2^-48 relative) on the GPU. Shifted to 100 instead, the decode's error stays far below 1e-12.
  const shift = rows === 1 ? means.map((v) => v - 100) : means;
  return { x, y, w, rows, d, shift };
}
type Case = ReturnType<typeof caseOf>;

/**
 * The Gram entries of gramPairs(d), the moments of momentPairs(d + 1) and the residual sum of
 * squares (intercept 3), as (hi, lo) pairs from one submission.
 */
async function runKernels(ctx: GpuContext, c: Case, variant: GramVariant): Promise<Float32Array> {
  const m = await upload(ctx, c.x, c.y, c.rows, c.d);
  const gp = gramPairs(c.d), mp = momentPairs(c.d + 1);
  const ng = gp.length / 2, nm = mp.length / 2;
  const work = new GpuWork(ctx);
  const out = work.temp((ng + nm + 1) * 8, 'out');
  recordGram(work, m, c.shift, gp, out, 0, variant);
  recordGram(work, m, new Float64Array(c.d + 1), mp, out, ng, variant);
  recordResidual(work, m, c.w, 3, out, ng + nm);
  const [pairs] = await work.finish([{ buf: out, floats: (ng + nm + 1) * 2 }]);
  freeMatrix(ctx, m);
  return pairs;
}

/** The float64 references of runKernels' entries: Gram, moments, residual sum of squares. */
function referenceOf(c: Case) {
  const { x, y, w, rows, d } = c;
  const gram = gramCpu(x, y, rows, d, c.shift, gramPairs(d));
  const moments = gramCpu(x, y, rows, d, new Float64Array(d + 1), momentPairs(d + 1));
  let sse = 0;
  for (let r = 0; r < rows; r++) {
    let pred = 3;
    for (let j = 0; j < d; j++) pred += w[j] * x[r * d + j];
    sse += (y[r] - pred) ** 2;
  }
  return { gram, moments, sse };
}

function expectCloseToReference(c: Case, pairs: Float32Array): void {
  const got = (e: number) => pairs[2 * e] + pairs[2 * e + 1];
  const { gram, moments, sse } = referenceOf(c);
  const ng = gram.length, nm = moments.length;
  const scale = Math.max(...gram.map(Math.abs));
  gram.forEach((v, e) => expect(Math.abs(got(e) - v), `gram entry ${e}`).toBeLessThanOrEqual(1e-12 * scale));
  moments.forEach((v, e) => expect(Math.abs(got(ng + e) - v), `moment ${e}`).toBeLessThanOrEqual(1e-11 * Math.max(1, Math.abs(v))));
  if (sse > 0) expect(Math.abs(got(ng + nm) - sse) / sse).toBeLessThan(1e-5);
  else expect(got(ng + nm)).toBeLessThan(1e-20);
}

const bitsOf = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

/** Double-floats (hi, lo) of varied sign and magnitude (2^-20 … 2^20), a few zeros and exact powers of two. */
function doubleFloats(n: number, seed: number): Float32Array {
  const rng = new Rng(seed, 'linreg-pre-split');
  const out = new Float32Array(2 * n);
  for (let i = 0; i < n; i++) {
    const kind = rng.nextInt(16);
    const v = kind === 0 ? 0 : kind === 1 ? 2 ** (rng.nextInt(41) - 20) : (rng.nextFloat() < 0.5 ? -1 : 1) * 2 ** rng.uniform(-20, 20);
    out[2 * i] = v;
    out[2 * i + 1] = v - out[2 * i];
  }
  return out;
}

/** Stages values with preSplit (its own dispatch, as the Gram kernel stages them in workgroup memory). */
const STAGE_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
${WGSL_PRE_SPLIT}
struct Params { n: u32, _a: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> values: array<vec2f>;
@group(0) @binding(2) var<storage, read_write> staged: array<vec4f>;
@compute @workgroup_size(256)
fn stage(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) { staged[i] = preSplit(values[i]); }
}
`;

/** Per thread t: STEPS multiply-adds from accs[t] of operand pairs (values[2i], values[2i + 1]), with dfMulAdd and with dfMulAddPreSplit. */
const STEPS = 8;
const MULTIPLY_ADD_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
${WGSL_PRE_SPLIT}
struct Params { threads: u32, _a: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> values: array<vec2f>;
@group(0) @binding(2) var<storage, read> staged: array<vec4f>;
@group(0) @binding(3) var<storage, read> accs: array<vec2f>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4f>;
@compute @workgroup_size(256)
fn multiply_add(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  for (var t = gid.x; t < p.threads; t += gridStride(nwg)) {
    var plain = accs[t];
    var preSplitAcc = accs[t];
    for (var k = 0u; k < ${STEPS}u; k++) {
      let i = t * ${STEPS}u + k;
      plain = dfMulAdd(plain, values[2u * i], values[2u * i + 1u]);
      preSplitAcc = dfMulAddPreSplit(preSplitAcc, staged[2u * i], staged[2u * i + 1u]);
      out[i] = vec4f(plain, preSplitAcc);
    }
  }
}
`;

describe.skipIf(skipGpuTests)('linear-regression kernels', () => {
  const shapes = [[10_000, 4, 1000], [4097, 1, 0], [777, 6, -50], [2500, 40, 20], [1, 1, 1000], [1, 16, -3], [5000, 16, 1000], [3000, 30, 1000]] as const;
  for (const variant of VARIANTS) {
    for (const [rows, d, offset] of shapes) {
      it(`${variant}: gram, moments and residuals: ${rows} rows, d = ${d}, values around ${offset}`, async () => {
        const ctx = await testGpu();
        const c = caseOf(rows, d, offset);
        expectCloseToReference(c, await runKernels(ctx, c, variant));
      });
    }
  }

  it('row-ranges shapes: every thread of a group busy but the last few, the tile and the block covered', () => {
    // 16 features and y: 152 entries of 17 columns in 3 workgroups of 51 entries × 5 ranges (255 threads).
    expect(rowRangesShape(152, 17)).toEqual({ ranges: 5, rangeRows: 205, entriesPerGroup: 51, groups: 3, stepRows: 9 });
    for (let columns = 1; columns <= MAX_GRAM_COLUMNS_ROW_RANGES; columns++) {
      for (const entries of [1, 2 * columns, columns * (columns + 1) / 2 + columns - 1]) {
        const s = rowRangesShape(entries, columns);
        expect(s.ranges * s.entriesPerGroup).toBeLessThanOrEqual(256);
        expect(s.ranges * s.rangeRows).toBeGreaterThanOrEqual(1024);
        expect(s.stepRows).toBeGreaterThanOrEqual(1);
        expect(s.ranges * s.stepRows * (columns + 1)).toBeLessThanOrEqual(896);
      }
    }
  });

  it('row-ranges: the pre-split multiply-add gives the bits of dfMulAdd', async () => {
    const ctx = await testGpu();
    const threads = 4096, n = threads * STEPS * 2;
    const values = doubleFloats(n, 1), accs = doubleFloats(threads, 2).map((v) => v * 1e6);
    const work = new GpuWork(ctx);
    const valuesBuf = work.input(values, 'values'), staged = work.temp(n * 16, 'staged'), out = work.temp(threads * STEPS * 16, 'out');
    work.dispatch('test-pre-split-stage', STAGE_WGSL, 'stage', [work.params([n]), valuesBuf, staged], Math.ceil(n / 256));
    work.dispatch('test-pre-split-multiply-add', MULTIPLY_ADD_WGSL, 'multiply_add', [work.params([threads]), valuesBuf, staged, work.input(accs, 'accs'), out], Math.ceil(threads / 256));
    const [stagedOut, sums] = await work.finish([{ buf: staged, floats: n * 4 }, { buf: out, floats: threads * STEPS * 4 }]);
    const stagedBits = bitsOf(stagedOut), valueBits = bitsOf(values);
    let badSplits = 0;
    for (let i = 0; i < n; i++) {
      // (hi, lo) kept; hi1 = the top 12 significant bits of hi; hi1 + hi2 = hi exactly.
      const kept = stagedBits[4 * i] === valueBits[2 * i] && stagedBits[4 * i + 1] === valueBits[2 * i + 1];
      const hi1 = stagedBits[4 * i + 2] === ((valueBits[2 * i] & 0xfffff000) >>> 0);
      if (!kept || !hi1 || stagedOut[4 * i + 2] + stagedOut[4 * i + 3] !== stagedOut[4 * i]) badSplits++;
    }
    expect(badSplits).toBe(0);
    const sumBits = bitsOf(sums);
    let differ = 0;
    for (let i = 0; i < threads * STEPS; i++) {
      if (sumBits[4 * i] !== sumBits[4 * i + 2] || sumBits[4 * i + 1] !== sumBits[4 * i + 3]) differ++;
    }
    expect(differ).toBe(0);
    expect(new Set(sums).size).toBeGreaterThan(threads); // the sums are not all 0 or equal
  });

  it('row-ranges: the same bits when run twice', async () => {
    const ctx = await testGpu();
    const c = caseOf(5000, 16, 1000);
    const first = await runKernels(ctx, c, 'row-ranges'), second = await runKernels(ctx, c, 'row-ranges');
    expect(firstDifference(bitsOf(first), bitsOf(second))).toBe(-1);
  });

  it('row-ranges with one range per block (30 features and y) gives the bits of the default variant', async () => {
    const ctx = await testGpu();
    const c = caseOf(3000, 30, 1000);
    expect(rowRangesShape(gramPairs(30).length / 2, 31).ranges).toBe(1);
    const rowRanges = await runKernels(ctx, c, 'row-ranges'), entryPerThread = await runKernels(ctx, c, 'entry-per-thread');
    const grams = gramPairs(30).length; // (hi, lo) floats of the Gram entries
    expect(firstDifference(bitsOf(rowRanges.subarray(0, grams)), bitsOf(entryPerThread.subarray(0, grams)))).toBe(-1);
  });

  it('integer data: both variants give the float64 sums exactly (every double-float step exact)', async () => {
    const ctx = await testGpu();
    const rows = 5000, d = 16, rng = new Rng(7, 'linreg-integers');
    const x = new Float64Array(rows * d).map(() => 1000 + rng.nextInt(2001) - 1000);
    const y = new Float64Array(rows).map(() => rng.nextInt(2001) - 1000);
    // Sums of products up to 2000² × 5000 = 2e10: beyond f32, exact in double-float and float64.
    const c: Case = { x, y, w: new Float64Array(d), rows, d, shift: [...new Array(d).fill(1000), -7] };
    const { gram, moments } = referenceOf(c);
    for (const variant of VARIANTS) {
      const pairs = await runKernels(ctx, c, variant);
      const got = (e: number) => pairs[2 * e] + pairs[2 * e + 1];
      gram.forEach((v, e) => expect(got(e), `${variant} gram entry ${e}`).toBe(v));
      moments.forEach((v, e) => expect(got(gram.length + e), `${variant} moment ${e}`).toBe(v));
    }
  });

  it('one device column (no target): the moments of both variants', async () => {
    const ctx = await testGpu();
    const rows = 2100, rng = new Rng(11, 'linreg-one-column');
    const x = new Float64Array(rows).map(() => 1000 + rng.normal());
    const pairs = momentPairs(1), shift = [0];
    const reference = gramCpu(x, null, rows, 1, shift, pairs);
    for (const variant of VARIANTS) {
      ring ??= new StagingRing(ctx, 1 << 16, 2);
      const m = await uploadMatrix(ctx, ring, x, null, rows, 1);
      const work = new GpuWork(ctx);
      const out = work.temp(pairs.length * 4, 'out');
      recordGram(work, m, shift, pairs, out, 0, variant);
      const [sums] = await work.finish([{ buf: out, floats: pairs.length }]);
      freeMatrix(ctx, m);
      reference.forEach((v, e) => expect(Math.abs(sums[2 * e] + sums[2 * e + 1] - v), `${variant} moment ${e}`).toBeLessThanOrEqual(1e-11 * Math.abs(v)));
    }
  });

  it('as many columns as each variant takes', async () => {
    const ctx = await testGpu();
    for (const [variant, columns] of [['row-ranges', MAX_GRAM_COLUMNS_ROW_RANGES], ['entry-per-thread', MAX_GRAM_COLUMNS]] as const) {
      const d = columns - 1, rows = 3, rng = new Rng(columns, 'linreg-wide');
      const x = new Float64Array(rows * d).map(() => rng.normal()), y = new Float64Array(rows).map(() => rng.normal());
      const pairs = gramPairs(d), shift = new Array(columns).fill(0.25);
      const m = await upload(ctx, x, y, rows, d);
      const work = new GpuWork(ctx);
      const out = work.temp(pairs.length * 4, 'out');
      recordGram(work, m, shift, pairs, out, 0, variant);
      const [sums] = await work.finish([{ buf: out, floats: pairs.length }]);
      freeMatrix(ctx, m);
      const reference = gramCpu(x, y, rows, d, shift, pairs);
      let worst = 0, scale = 0;
      reference.forEach((v, e) => { worst = Math.max(worst, Math.abs(sums[2 * e] + sums[2 * e + 1] - v)); scale = Math.max(scale, Math.abs(v)); });
      expect(worst, variant).toBeLessThanOrEqual(1e-12 * scale);
    }
  });

  it(`more than ${MAX_GRAM_COLUMNS} columns (${MAX_GRAM_COLUMNS_ROW_RANGES} for the row-ranges variant) are left to the CPU code`, () => {
    expect(gramOnGpu(MAX_GRAM_COLUMNS)).toBe(true);
    expect(gramOnGpu(MAX_GRAM_COLUMNS + 1)).toBe(false);
    expect(gramOnGpu(MAX_GRAM_COLUMNS_ROW_RANGES, 'row-ranges')).toBe(true);
    expect(gramOnGpu(MAX_GRAM_COLUMNS_ROW_RANGES + 1, 'row-ranges')).toBe(false);
  });
});
