// k-means kernels on lavapipe against their CPU twins: the f64 -> (xr, xl) decode; the Lloyd step
// (nearest centres, per-cluster counts and exact fixed-point sums of features and distances) word
// for word against kmeansStepCpu, the same words with workgroup or device-memory sums and any
// number of workgroups, partitions' words added exactly (StepWords), decoded sums against float64
// ones; the k-means++ steps (nearest distance kept on the device, totals, potentials); the first
// centre by row hash. Awkward shapes: k = 1,
// d = 1, ties, all rows equal, row counts that are not a multiple of the workgroup, k and d that
// are not a multiple of anything, the largest k and d the kernels take, one cluster holding every
// row while others stay empty, magnitudes over 60 binades in a column, non-finite data.

import { describe, expect, it } from 'vitest';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { StagingRing } from '../src/engine/gpu/buffers.js';
import type { GpuContext } from '../src/engine/gpu/device.js';
import { centreExponent, kmeansOnGpu, kmeansStepCpu, MAX_GPU_FEATURES, maxBitsOfColumns, parSampleCpu, ppUpdateCpu, recordMaxAbs, recordParSample, sampledRows, recordPotential, recordPpUpdate, recordSmallestHash, recordStep, recordTotal, smallestHashRow, smallestHashWorkgroups, STEP_ROWS_PER_WORKGROUP, stepPairs, stepResultOf, stepSumsLocal, StepWords } from '../src/kernels/kmeans.js';
import { MAX_GPU_CLUSTERS, stepLayout } from '../src/kernels/kmeans.wgsl.js';
import { decodeCpu, freeMatrix, GpuWork, uploadBlocks, uploadColumns, uploadMatrix, type DeviceMatrix } from '../src/kernels/ml-matrix.js';
import { mkdtempSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { float64Extents, planArrowChunks } from '../src/engine/io/arrow.js';
import { ArrowFileColumns } from '../src/engine/io/arrow-file-columns.js';
import { memoryPiece } from '../src/engine/io/byte-pieces.js';
import { openArrowBatchWriter } from './io-formats-fixture.js';
import { Rng, rowKey, rowUniform } from '../src/engine/ml/random.js';

function randomRows(rng: Rng, rows: number, d: number, scale = 10, round = false): Float64Array {
  const x = new Float64Array(rows * d);
  for (let i = 0; i < x.length; i++) x[i] = round ? Math.round((rng.nextFloat() - 0.5) * scale) : (rng.nextFloat() - 0.5) * scale;
  return x;
}

/** The decoded f32 columns the kernels read, computed on the CPU (column-major). */
function columnsCpu(x: Float64Array, rows: number, d: number): Float32Array {
  const out = new Float32Array(rows * d);
  for (let r = 0; r < rows; r++) for (let j = 0; j < d; j++) out[j * rows + r] = decodeCpu(x[r * d + j])[0];
  return out;
}

let ring: StagingRing | null = null;
/** Uploads through one small ring (1 MiB slots, so larger inputs take several). */
export function upload(ctx: GpuContext, x: Float64Array, y: Float64Array | null, rows: number, d: number): Promise<DeviceMatrix> {
  ring ??= new StagingRing(ctx, 1 << 16, 2);
  return uploadMatrix(ctx, ring, x, y, rows, d);
}

/**
 * The step on the GPU, its scales from `basis` (by default the partition's own rows and column
 * maxima): its words (stepLayout), written from pair 1 of the output (a partition that does not
 * start the buffer).
 */
async function stepOnGpu(ctx: GpuContext, m: DeviceMatrix, centres: Float64Array, k: number, options?: { local?: boolean; workgroups?: number }, basis?: { rows: number; maxBits: Uint32Array }): Promise<Uint32Array> {
  const work = new GpuWork(ctx);
  const pairs = stepPairs(k, m.cols);
  const out = work.temp((pairs + 1) * 8, 'out');
  let maxBits: GPUBuffer;
  if (basis) maxBits = work.input(basis.maxBits, 'maxima');
  else { maxBits = work.temp(m.cols * 4, 'maxima'); recordMaxAbs(work, m, maxBits, 0); }
  const f32 = new Float32Array(centres);
  recordStep(work, m, maxBits, basis?.rows ?? m.rows, work.input(f32, 'centres'), centreExponent(f32), k, out, 1, options);
  const [got] = await work.finish([{ buf: out, floats: (pairs + 1) * 2 }]);
  const words = new Uint32Array(got.buffer);
  expect([words[0], words[1]], 'the pair before the partition\'s').toEqual([0, 0]);
  return words.slice(2, 2 + stepLayout(k, m.cols).words);
}

/** Counts, sums and inertia in float64 from given labels and distances (the reference the exact sums round to). */
function float64Sums(x: Float32Array, rows: number, d: number, labels: Uint32Array, dist: Float32Array, k: number) {
  const counts = new Float64Array(k), sums = new Float64Array(k * d);
  let inertia = 0;
  for (let r = 0; r < rows; r++) {
    const c = labels[r];
    counts[c]++;
    inertia += dist[r];
    for (let j = 0; j < d; j++) sums[c * d + j] += x[j * rows + r];
  }
  return { counts, sums, inertia };
}

const relClose = (a: number, b: number, tol: number) => Math.abs(a - b) <= tol * Math.max(1, Math.abs(b));

describe.skipIf(skipGpuTests)('device matrix decode', () => {
  it('splits float64 values into xr + xl exactly as the CPU twin, within 2^-46 of the value', async () => {
    const ctx = await testGpu();
    const rng = new Rng(3, 'decode');
    const rows = 1000, d = 3;
    const x = new Float64Array(rows * d).map(() => (rng.nextFloat() - 0.5) * 10 ** Math.floor(rng.nextFloat() * 12 - 6));
    x.set([0, -0, 1, -1, 1e-30, 123456789.123456789, 2 ** 40 + 0.5, -3.5e20, 1 / 3]);
    const y = new Float64Array(rows).map((_, r) => r * 0.1 - 7);
    const m = await upload(ctx, x, y, rows, d);
    const work = new GpuWork(ctx);
    const [xr, xl] = await work.finish([{ buf: m.xr, floats: rows * (d + 1) }, { buf: m.xl, floats: rows * (d + 1) }]);
    freeMatrix(ctx, m);
    for (let r = 0; r < rows; r++) {
      for (let j = 0; j <= d; j++) {
        const v = j < d ? x[r * d + j] : y[r];
        const [er, el] = decodeCpu(v);
        expect([xr[j * rows + r], xl[j * rows + r]], `row ${r} col ${j}`).toEqual([er, el]);
        expect(Math.abs(xr[j * rows + r] + xl[j * rows + r] - v)).toBeLessThanOrEqual(Math.abs(v) * 2 ** -46);
      }
    }
  });

  it('columns uploaded in uneven pieces (one per batch), from memory or read from an Arrow file, give the same device matrix as whole', async () => {
    const ctx = await testGpu();
    const rng = new Rng(4, 'pieces');
    const rows = 70_000, d = 2;
    const x = new Float64Array(rows * d).map(() => rng.nextFloat() * 100 - 50);
    const y = new Float64Array(rows).map(() => rng.nextFloat());
    const column = (j: number) => Float64Array.from({ length: rows }, (_, r) => (j < d ? x[r * d + j] : y[r]));
    // Piece sizes: 1 row, a few, many, and the rest; a staging slot (1 MiB in the test ring) ends inside a piece.
    const cuts = [0, 1, 5, 40_000, rows];
    const pieces = (c: Float64Array) => cuts.slice(1).map((end, i) => c.subarray(cuts[i], end));
    ring ??= new StagingRing(ctx, 1 << 16, 2);
    const whole = await upload(ctx, x, y, rows, d);
    const split = await uploadColumns(ctx, ring, [0, 1, 2].map((j) => pieces(column(j)).map(memoryPiece)), rows, true);
    // The same pieces as record batches of an Arrow file, read from it straight into staging memory.
    const path = join(mkdtempSync(join(tmpdir(), 'gpuframe-upload-')), 'm.arrow');
    const schema = ['a', 'b', 'y'].map((name) => ({ name, type: 'float64' as const }));
    const w = await openArrowBatchWriter(path, schema);
    for (let i = 0; i + 1 < cuts.length; i++) await w.write({ schema, length: cuts[i + 1] - cuts[i], columns: [0, 1, 2].map((j) => ({ type: 'float64' as const, values: column(j).slice(cuts[i], cuts[i + 1]), valid: null })) });
    await w.close();
    const chunk = (await planArrowChunks({ path, displayName: path }, 'file', 1 << 30)).chunks[0];
    const file = new ArrowFileColumns(chunk, (await float64Extents(chunk, ['a', 'b', 'y']))!);
    const handle = await open(path, 'r');
    const fromFile = await uploadColumns(ctx, ring, [0, 1, 2].map((j) => file.pieces(handle, j)), rows, true);
    // And whole batches read at once, decoded from where each column lies in them.
    const blocks = file.blocks(handle)!;
    expect(blocks.map((b) => b.rows)).toEqual(cuts.slice(1).map((end, i) => end - cuts[i]));
    const fromBlocks = await uploadBlocks(ctx, ring, blocks, rows, true);
    // A source buffer of one block at a time (the largest), as when batches outgrow it.
    const oneAtATime = await uploadBlocks(ctx, ring, blocks, rows, true, 8).finally(() => handle.close());
    const work = new GpuWork(ctx);
    const matrices = [whole, split, fromFile, fromBlocks, oneAtATime];
    const got = await work.finish(matrices.flatMap((m) => [m.xr, m.xl]).map((buf) => ({ buf, floats: rows * (d + 1) })));
    for (const m of matrices) freeMatrix(ctx, m);
    for (let i = 2; i < got.length; i += 2) {
      expect(Array.from(got[i]), `matrix ${i / 2} xr`).toEqual(Array.from(got[0]));
      expect(Array.from(got[i + 1]), `matrix ${i / 2} xl`).toEqual(Array.from(got[1]));
    }
  });

  it('whole batches are read only where the wanted columns lie close together in them', async () => {
    const rows = 1000;
    const schema = ['a', 'wide', 'b'].map((name) => ({ name, type: name === 'wide' ? 'string' as const : 'float64' as const }));
    const path = join(mkdtempSync(join(tmpdir(), 'gpuframe-blocks-')), 'm.arrow');
    const w = await openArrowBatchWriter(path, schema);
    const text = 'x'.repeat(100);
    const strings = { type: 'string' as const, offsets: Int32Array.from({ length: rows + 1 }, (_, i) => i * text.length), data: new TextEncoder().encode(text.repeat(rows)), valid: null };
    await w.write({ schema, length: rows, columns: [{ type: 'float64' as const, values: new Float64Array(rows), valid: null }, strings, { type: 'float64' as const, values: new Float64Array(rows), valid: null }] });
    await w.close();
    const chunk = (await planArrowChunks({ path, displayName: path }, 'file', 1 << 30)).chunks[0];
    const handle = await open(path, 'r');
    try {
      // a and b have 100 bytes of text a row between them: read column by column.
      expect(new ArrowFileColumns(chunk, (await float64Extents(chunk, ['a', 'b']))!).blocks(handle)).toBeNull();
      const one = new ArrowFileColumns(chunk, (await float64Extents(chunk, ['b']))!).blocks(handle)!;
      expect(one.map((b) => [b.rows, b.byteLength, ...b.columnOffsets])).toEqual([[rows, rows * 8, 0]]);
    } finally {
      await handle.close();
    }
  });
});

describe.skipIf(skipGpuTests)('k-means step: nearest centres and exact per-cluster sums', () => {
  const cases: [string, number, number, number, 'uniform' | 'integers' | 'wide'][] = [
    // name, rows, d, k, data: uniform in ±5, integers (exact ties), or magnitudes 2^-30..2^30 in one column (values truncate)
    ['random 5000 x 4, k 7', 5000, 4, 7, 'uniform'],
    ['k = 1', 3001, 3, 1, 'uniform'],
    ['d = 1, integer data with ties', 4097, 1, 5, 'integers'],
    ['rows not a multiple of 256, integer ties', 9999, 2, 9, 'integers'],
    ['many centres: several workgroup tiles (k 300, d 16)', 700, 16, 300, 'uniform'],
    ['d 32, k 64 (the benchmark shape: four rows per thread)', 3000, 32, 64, 'uniform'],
    ['d 70, k 5 (one row per thread, padded to vec4s)', 1500, 70, 5, 'uniform'],
    ['k 37, d 7, rows of several workgroups, integer ties', 3 * STEP_ROWS_PER_WORKGROUP + 77, 7, 37, 'integers'],
    [`k ${MAX_GPU_CLUSTERS} (the most the kernels take), d 3`, 2999, 3, MAX_GPU_CLUSTERS, 'integers'],
    [`d ${MAX_GPU_FEATURES} (the most features), k 5`, 1100, MAX_GPU_FEATURES, 5, 'uniform'],
    ['magnitudes from 2^-30 to 2^30 in each column, d 6, k 9', 20_000, 6, 9, 'wide'],
  ];
  for (const [name, rows, d, k, data] of cases) {
    it(`${name}: the CPU twin's words, whichever sums and workgroups; float64 sums`, async () => {
      const ctx = await testGpu();
      const rng = new Rng(rows, name);
      const wide = () => (rng.nextFloat() - 0.5) * 2 ** (rng.nextInt(61) - 30);
      const x = data === 'wide' ? Float64Array.from({ length: rows * d }, wide) : randomRows(rng, rows, d, 10, data === 'integers');
      const centres = data === 'wide' ? Float64Array.from({ length: k * d }, wide) : randomRows(rng, k, d, 10, data === 'integers');
      const m = await upload(ctx, x, null, rows, d);
      const got = await stepOnGpu(ctx, m, centres, k);
      // The sums are exact: workgroup or device-memory sums and any number of workgroups give the same words.
      const local = stepSumsLocal(ctx, k, d);
      // (Device-memory sums for the small shapes only: each shape is another compile, tens of seconds on lavapipe for the large ones.)
      if (local && k * d <= 300) expect(Array.from(await stepOnGpu(ctx, m, centres, k, { local: false })), 'device-memory sums').toEqual(Array.from(got));
      expect(Array.from(await stepOnGpu(ctx, m, centres, k, { local, workgroups: 2 })), '2 workgroups').toEqual(Array.from(got));
      freeMatrix(ctx, m);
      const columns = columnsCpu(x, rows, d);
      const want = kmeansStepCpu(columns, rows, d, new Float32Array(centres), k);
      // Word for word (lavapipe does not contract the distances into FMAs; NVIDIA's driver does, so there the distance sums' low words differ).
      expect(Array.from(got)).toEqual(Array.from(want.words));
      const result = stepResultOf(got, k, d), ref = float64Sums(columns, rows, d, want.labels, want.dist, k);
      expect(Array.from(result.counts)).toEqual(Array.from(ref.counts));
      // Each value truncated to a whole unit of 2^-F (F: the scale word) errs by less than one unit;
      // the float64 reference's own rounding errs by at most rows × 2^-53 of its magnitude.
      const layout = stepLayout(k, d), unit = (v: number) => 2 ** -(got[layout.scales + v] | 0);
      const close = (a: number, b: number, v: number) => Math.abs(a - b) <= rows * unit(v) + Math.abs(b) * rows * 2 ** -53;
      for (let c = 0; c < k; c++) {
        for (let j = 0; j < d; j++) {
          const sum = result.sums.hi[c * d + j] + result.sums.lo[c * d + j];
          if (data === 'integers') expect(sum, `cluster ${c} feature ${j}`).toBe(ref.sums[c * d + j]);
          else expect(close(sum, ref.sums[c * d + j], j), `cluster ${c} feature ${j}: ${sum} against ${ref.sums[c * d + j]}`).toBe(true);
        }
      }
      expect(close(result.inertia.hi[0] + result.inertia.lo[0], ref.inertia, d), 'inertia').toBe(true);
      if (data !== 'wide') expect(relClose(result.inertia.hi[0] + result.inertia.lo[0], ref.inertia, 1e-12)).toBe(true);
    });
  }

  it('data far from the origin (10^4 ± 5): the rows go to their float64 nearest centres', async () => {
    // Guards the f32 distances: a dot-product form |c|² - 2 x·c without a shift would lose every digit here (|x|² ≈ 10^9).
    const ctx = await testGpu();
    const rng = new Rng(11, 'far from the origin');
    const rows = 4000, d = 8, k = 16;
    const x = randomRows(rng, rows, d, 10).map((v) => v + 1e4);
    const centres = randomRows(rng, k, d, 10).map((v) => v + 1e4);
    const m = await upload(ctx, x, null, rows, d);
    const got = stepResultOf(await stepOnGpu(ctx, m, centres, k), k, d);
    freeMatrix(ctx, m);
    const f32Centres = new Float32Array(centres), columns = columnsCpu(x, rows, d);
    const counts = new Float64Array(k);
    for (let r = 0; r < rows; r++) {
      const d2 = (c: number) => { let s = 0; for (let j = 0; j < d; j++) s += (columns[j * rows + r] - f32Centres[c * d + j]) ** 2; return s; };
      let best = 0;
      for (let c = 1; c < k; c++) if (d2(c) < d2(best)) best = c;
      counts[best]++;
    }
    expect(Array.from(got.counts)).toEqual(Array.from(counts));
  });

  it('one cluster takes every row, the others stay empty; the same words when run again', async () => {
    const ctx = await testGpu();
    const rng = new Rng(5, 'one cluster');
    const rows = 4 * STEP_ROWS_PER_WORKGROUP + 300, d = 5, k = 11;
    const x = randomRows(rng, rows, d, 4);
    // Centre 6 at the origin; the others far away, so empty.
    const centres = new Float64Array(k * d).map((_, i) => (Math.floor(i / d) === 6 ? 0 : 1000 + i));
    const m = await upload(ctx, x, null, rows, d);
    const words = await stepOnGpu(ctx, m, centres, k);
    const again = await stepOnGpu(ctx, m, centres, k);
    freeMatrix(ctx, m);
    const got = stepResultOf(words, k, d);
    expect(Array.from(got.counts)).toEqual(Array.from({ length: k }, (_, c) => (c === 6 ? rows : 0)));
    const columns = columnsCpu(x, rows, d);
    for (let i = 0; i < k * d; i++) {
      const v = got.sums.hi[i] + got.sums.lo[i];
      if (Math.floor(i / d) === 6) expect(v, `sum ${i}`).toBeCloseTo(columns.subarray((i % d) * rows, (i % d + 1) * rows).reduce((s, t) => s + t, 0), 9);
      else expect(v, `sum ${i}`).toBe(0);
    }
    expect(Array.from(again)).toEqual(Array.from(words));
    // Counts alone (k-means|| weights): the same counts, no sums.
    const m2 = await upload(ctx, x, null, rows, d);
    const work = new GpuWork(ctx), layout = stepLayout(k, d);
    const out = work.temp(stepPairs(k, d) * 8, 'out'), maxBits = work.temp(d * 4, 'maxima');
    recordMaxAbs(work, m2, maxBits, 0);
    recordStep(work, m2, maxBits, rows, work.input(new Float32Array(centres), 'centres'), centreExponent(new Float32Array(centres)), k, out, 0, { countsOnly: true });
    const [counted] = await work.finish([{ buf: out, floats: layout.words }]);
    freeMatrix(ctx, m2);
    const countWords = new Uint32Array(counted.buffer);
    expect(Array.from(countWords.subarray(layout.counts, layout.scales))).toEqual(Array.from(words.subarray(layout.counts, layout.scales)));
    expect(countWords.subarray(0, layout.counts).every((w) => w === 0)).toBe(true);
  });

  it('two partitions on the whole matrix\'s basis add up to the whole\'s words exactly; column maxima as the CPU finds them', async () => {
    const ctx = await testGpu();
    const rng = new Rng(21, 'partitions');
    const rows = 7000, cut = 2345, d = 6, k = 9;
    const wide = () => (rng.nextFloat() - 0.5) * 2 ** (rng.nextInt(41) - 20);
    const x = Float64Array.from({ length: rows * d }, wide), centres = Float64Array.from({ length: k * d }, wide);
    const columns = columnsCpu(x, rows, d), basis = { rows, maxBits: maxBitsOfColumns(columns, rows, d) };
    const whole = await upload(ctx, x, null, rows, d);
    const work = new GpuWork(ctx);
    const maxima = work.temp(d * 4, 'maxima');
    recordMaxAbs(work, whole, maxima, 0);
    const [found] = await work.finish([{ buf: maxima, floats: d }]);
    expect(Array.from(new Uint32Array(found.buffer))).toEqual(Array.from(basis.maxBits));
    const all = await stepOnGpu(ctx, whole, centres, k, undefined, basis);
    freeMatrix(ctx, whole);
    const parts: Uint32Array[] = [];
    for (const [from, to] of [[0, cut], [cut, rows]]) {
      const m = await upload(ctx, x.subarray(from * d, to * d), null, to - from, d);
      parts.push(await stepOnGpu(ctx, m, centres, k, undefined, basis));
      freeMatrix(ctx, m);
    }
    const layout = stepLayout(k, d);
    const otherScaleOf = (w: Uint32Array) => { const o = w.slice(); o[layout.scales] ^= 1; return o; };
    const sum64 = (w: Uint32Array, i: number) => BigInt.asIntN(64, (BigInt(w[layout.hi + i]) << 32n) | BigInt(w[i]));
    for (let i = 0; i < layout.hi; i++) expect(sum64(parts[0], i) + sum64(parts[1], i), `sum ${i}`).toBe(sum64(all, i));
    for (let c = 0; c < k; c++) expect(parts[0][layout.counts + c] + parts[1][layout.counts + c]).toBe(all[layout.counts + c]);
    expect(Array.from(parts[0].subarray(layout.scales))).toEqual(Array.from(all.subarray(layout.scales)));
    expect(Array.from(all)).toEqual(Array.from(kmeansStepCpu(columns, rows, d, new Float32Array(centres), k).words));
    // As the trainer adds them (StepWords), in either order: the whole's words.
    const [a, b] = parts.map((w) => new StepWords(w, k, d));
    expect(Array.from(a.plus(b).words)).toEqual(Array.from(all));
    expect(Array.from(b.plus(a).words)).toEqual(Array.from(all));
    expect(Array.from(a.plus(b.zero()).words)).toEqual(Array.from(parts[0]));
    expect(Array.from(b.zero().plus(a).words)).toEqual(Array.from(parts[0]));
    expect(Array.from(a.zero().plus(b.zero()).plus(b).plus(a.zero()).words)).toEqual(Array.from(parts[1]));
    expect(() => a.plus(new StepWords(otherScaleOf(parts[1]), k, d).zero())).toThrow(/different scales/);
    expect(() => a.plus(new StepWords(otherScaleOf(parts[1]), k, d))).toThrow(/different scales/);
  });

  it(`k above ${MAX_GPU_CLUSTERS} is left to the CPU code`, () => {
    expect(kmeansOnGpu(3, MAX_GPU_CLUSTERS)).toBe(true);
    expect(kmeansOnGpu(3, MAX_GPU_CLUSTERS + 1)).toBe(false);
  });

  it('all rows equal: one cluster takes every row (the lowest index among equal centres)', async () => {
    const ctx = await testGpu();
    const rows = 1234, d = 3;
    const x = new Float64Array(rows * d).fill(2.5);
    const centres = new Float64Array([9, 9, 9, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5]);
    const m = await upload(ctx, x, null, rows, d);
    const got = stepResultOf(await stepOnGpu(ctx, m, centres, 3), 3, d);
    freeMatrix(ctx, m);
    expect(Array.from(got.counts)).toEqual([0, rows, 0]);
    expect(got.sums.hi[3] + got.sums.lo[3]).toBe(2.5 * rows);
    expect(got.inertia.hi[0]).toBe(0);
  });

  it('non-finite data gives non-finite sums; finite data whose distances may overflow f32, an infinite inertia', async () => {
    const ctx = await testGpu();
    const rows = 600, d = 2, k = 2;
    const x = randomRows(new Rng(1, 'inf'), rows, d);
    x[2 * 17 + 1] = Infinity; // column 1
    let m = await upload(ctx, x, null, rows, d);
    let got = stepResultOf(await stepOnGpu(ctx, m, new Float64Array([0, 0, 1, 1]), k), k, d);
    freeMatrix(ctx, m);
    expect(got.sums.hi.filter((_, i) => i % d === 0).every(Number.isFinite)).toBe(true);
    expect(got.sums.hi.filter((_, i) => i % d === 1).every(Number.isNaN)).toBe(true);
    expect(Number.isNaN(got.inertia.hi[0])).toBe(true);
    const huge = randomRows(new Rng(2, 'huge'), rows, d).map((v) => v * 1e19);
    m = await upload(ctx, huge, null, rows, d);
    got = stepResultOf(await stepOnGpu(ctx, m, new Float64Array([0, 0, 1e19, 1e19]), k), k, d);
    freeMatrix(ctx, m);
    expect(got.sums.hi.every(Number.isFinite)).toBe(true);
    expect(got.inertia.hi[0]).toBe(Infinity);
  });
});

describe.skipIf(skipGpuTests)('k-means first centre: the row with the smallest hash', () => {
  // rowUniform's order on the CPU, ties (none expected) to the lower row: what kmeans.smallestHash picks.
  const smallestOnCpu = (rows: number, key: number, firstRow: number) => {
    let best = -1, bestScore = Infinity;
    for (let r = 0; r < rows; r++) { const s = rowUniform(key, firstRow + r); if (s < bestScore) { bestScore = s; best = firstRow + r; } }
    return best;
  };
  // Rows not a multiple of a workgroup, more rows than 1024 workgroups take at once (a grid-stride
  // loop), one row, and global rows that cross 2^32 (the carry into the high word).
  for (const [rows, firstRow] of [[1000, 0], [300_000, 123_456], [1, 7], [5000, 2 ** 32 - 2500], [777, 2 ** 33 + 5]] as const) {
    it(`${rows} rows from global row ${firstRow}`, async () => {
      const ctx = await testGpu();
      for (const purpose of ['a', 'b']) {
        const key = rowKey(rows, purpose);
        const work = new GpuWork(ctx);
        const pairs = 2 * smallestHashWorkgroups(rows);
        const out = work.temp(pairs * 8, 'out');
        recordSmallestHash(work, rows, key, firstRow, out, 0);
        const [got] = await work.finish([{ buf: out, floats: pairs * 2 }]);
        expect(smallestHashRow(new Uint32Array(got.buffer)), `key ${purpose}`).toBe(smallestOnCpu(rows, key, firstRow));
      }
    });
  }
});

describe.skipIf(skipGpuTests)('k-means|| sampling kernel', () => {
  it('samples the CPU twin\'s rows (about `oversampling` of them), from global rows across 2^32; more than cap shows as a count', async () => {
    const ctx = await testGpu();
    const rows = 50_000, key = rowKey(3, 'sample');
    const rng = new Rng(3, 'sample');
    const minD2 = Float32Array.from({ length: rows }, () => rng.nextFloat() * 10);
    minD2[7] = 0; // on a centre: never sampled
    const phi = minD2.reduce((s, v) => s + v, 0);
    for (const [firstRow, oversampling, cap] of [[0, 60, 1000], [2 ** 32 - 20_000, 60, 1000], [5, 2000, 100]]) {
      const work = new GpuWork(ctx);
      const out = work.temp((1 + cap) * 4, 'out');
      recordParSample(work, rows, work.input(minD2, 'minD2'), key, firstRow, oversampling, phi, cap, out, 0);
      const [got] = await work.finish([{ buf: out, floats: 1 + cap }]);
      const words = new Uint32Array(got.buffer);
      const want = parSampleCpu(minD2, key, firstRow, oversampling, phi);
      expect(want.length, 'about oversampling rows').toBeGreaterThan(oversampling * 0.6);
      expect(want.length).toBeLessThan(oversampling * 1.4);
      expect(want).not.toContain(7);
      if (want.length <= cap) expect(sampledRows(words, cap), `from row ${firstRow}`).toEqual(want);
      else { expect(sampledRows(words, cap)).toBeNull(); expect(words[0]).toBe(want.length); }
    }
  });
});

describe.skipIf(skipGpuTests)('k-means++ kernels', () => {
  it('nearest distances updated in steps, totals and potentials match the CPU twin', async () => {
    const ctx = await testGpu();
    const rng = new Rng(9, 'pp');
    const rows = 5003, d = 5, k = 4, trials = 3;
    const x = randomRows(rng, rows, d);
    const centres = randomRows(rng, k, d);
    const candidates = randomRows(rng, trials, d);
    const m = await upload(ctx, x, null, rows, d);
    const minD2 = ctx.device.createBuffer({ size: rows * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const cols = columnsCpu(x, rows, d);
    const want = new Float32Array(rows);
    for (const [from, to] of [[0, 1], [1, 3], [3, 4]]) {
      const work = new GpuWork(ctx);
      recordPpUpdate(work, m, minD2, work.input(new Float32Array(centres.subarray(0, to * d)), 'centres'), from, to);
      const out = work.temp((1 + trials) * 8, 'out');
      recordTotal(work, m, minD2, out, 0);
      recordPotential(work, m, minD2, work.input(new Float32Array(candidates), 'candidates'), trials, out, 1);
      const [pairs, got] = await work.finish([{ buf: out, floats: (1 + trials) * 2 }, { buf: minD2, floats: rows }]);
      ppUpdateCpu(cols, rows, d, want, new Float32Array(centres), from, to);
      let far = 0;
      for (let r = 0; r < rows; r++) if (!relClose(got[r], want[r], 1e-5)) far++;
      expect(far, `after centres ${from}..${to}`).toBe(0);
      const total = want.reduce((s, v) => s + v, 0);
      expect(relClose(pairs[0] + pairs[1], total, 1e-6)).toBe(true);
      for (let t = 0; t < trials; t++) {
        const cand = new Float32Array(candidates.subarray(t * d, (t + 1) * d));
        let pot = 0;
        for (let r = 0; r < rows; r++) {
          let s = 0;
          for (let j = 0; j < d; j++) s += (cols[j * rows + r] - cand[j]) ** 2;
          pot += Math.min(want[r], s);
        }
        expect(relClose(pairs[2 + 2 * t] + pairs[3 + 2 * t], pot, 1e-5), `potential ${t}`).toBe(true);
      }
    }
    minD2.destroy();
    freeMatrix(ctx, m);
  });
});
