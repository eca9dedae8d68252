// k-means kernels on lavapipe against their CPU twins: the f64 -> (xr, xl) decode, assignment with
// per-cluster counts, sums and inertia, and the k-means++ steps (nearest distance kept on the
// device, totals, potentials), on random data and awkward shapes: k = 1, d = 1, ties, all rows
// equal, row counts that are not a multiple of the workgroup or of a block, k and d that are not a
// multiple of anything, the largest k the sums kernel takes, one cluster holding every row of many
// blocks while others stay empty, and the same bits when run again; the per-cluster sums of the
// GPU's labels equal their CPU twin's bit for bit, and so do the sums kernel's per-block partials.

import { describe, expect, it } from 'vitest';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { StagingRing } from '../src/engine/gpu/buffers.js';
import type { GpuContext } from '../src/engine/gpu/device.js';
import { assignEntries, assignResultOf, kmeansAssignCpu, kmeansOnGpu, kmeansSumPartialsCpu, kmeansSumsCpu, MAX_GPU_FEATURES, ppUpdateCpu, recordAssign, recordPotential, recordPpUpdate, recordSmallestHash, recordTotal, smallestHashRow, smallestHashWorkgroups } from '../src/kernels/kmeans.js';
import { kmeansSumsWgsl, MAX_SUM_CLUSTERS, sumBlockRows, sumsWorkgroups } from '../src/kernels/kmeans.wgsl.js';
import { decodeCpu, freeMatrix, GpuWork, uploadColumns, uploadMatrix, type DeviceMatrix } from '../src/kernels/ml-matrix.js';
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

async function assignOnGpu(ctx: GpuContext, m: DeviceMatrix, centres: Float64Array, k: number) {
  const work = new GpuWork(ctx);
  const entries = assignEntries(k, m.cols);
  const out = work.temp(entries * 8, 'out');
  const { labels, dist } = recordAssign(work, m, work.input(new Float32Array(centres), 'centres'), k, out, 0);
  const [pairs, labelWords, distances] = await work.finish([{ buf: out, floats: entries * 2 }, { buf: labels, floats: m.rows }, { buf: dist, floats: m.rows }]);
  return { pairs, result: assignResultOf(pairs, k, m.cols), labels: new Uint32Array(labelWords.buffer), dist: distances };
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

  it('columns uploaded in uneven pieces (one per batch) give the same device matrix as whole', async () => {
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
    const split = await uploadColumns(ctx, ring, [0, 1, 2].map((j) => pieces(column(j))), rows, true);
    const work = new GpuWork(ctx);
    const got = await work.finish([whole.xr, whole.xl, split.xr, split.xl].map((buf) => ({ buf, floats: rows * (d + 1) })));
    freeMatrix(ctx, whole);
    freeMatrix(ctx, split);
    expect(Array.from(got[2])).toEqual(Array.from(got[0]));
    expect(Array.from(got[3])).toEqual(Array.from(got[1]));
  });
});

describe.skipIf(skipGpuTests)('k-means assignment kernel', () => {
  const cases: [string, number, number, number, boolean][] = [
    // name, rows, d, k, integer data (exact ties)
    ['random 5000 x 4, k 7', 5000, 4, 7, false],
    ['k = 1', 3001, 3, 1, false],
    ['d = 1, integer data with ties', 4097, 1, 5, true],
    ['rows not a multiple of 256, integer ties', 9999, 2, 9, true],
    ['many centres: several workgroup tiles (k 300, d 16)', 700, 16, 300, false],
    ['d 32, k 64 (the benchmark shape: two rows per thread)', 3000, 32, 64, false],
    ['d 70, k 5 (one row per thread, padded to vec4s)', 1500, 70, 5, false],
    ['k 37, d 7 (no multiple of 4 or 256), integer ties, several sum blocks', 3 * sumBlockRows(37) + 77, 7, 37, true],
    [`k ${MAX_SUM_CLUSTERS} (the most the sums kernel takes), d 3, integer ties, two sum blocks`, sumBlockRows(MAX_SUM_CLUSTERS) + 999, 3, MAX_SUM_CLUSTERS, true],
  ];
  for (const [name, rows, d, k, round] of cases) {
    it(name, async () => {
      const ctx = await testGpu();
      const rng = new Rng(rows, name);
      const x = randomRows(rng, rows, d, 10, round);
      const centres = randomRows(rng, k, d, 10, round);
      const m = await upload(ctx, x, null, rows, d);
      const got = await assignOnGpu(ctx, m, centres, k);
      freeMatrix(ctx, m);
      const columns = columnsCpu(x, rows, d);
      // The sums of the GPU's own labels and distances: the CPU twin's bits exactly.
      expect(Array.from(new Uint32Array(got.pairs.buffer))).toEqual(Array.from(new Uint32Array(kmeansSumsCpu(columns, rows, d, got.labels, got.dist, k).buffer)));
      const want = kmeansAssignCpu(columns, rows, d, new Float32Array(centres), k);
      // Labels: equal, except where two centres are within f32 rounding (FMA contraction may differ).
      let differ = 0;
      for (let r = 0; r < rows; r++) if (got.labels[r] !== want.labels[r]) differ++;
      expect(differ).toBeLessThanOrEqual(round ? 0 : 2);
      if (differ === 0) {
        expect(Array.from(got.result.counts)).toEqual(Array.from(want.counts));
        for (let i = 0; i < k * d; i++) expect(got.result.sums.hi[i] + got.result.sums.lo[i], `sum ${i}`).toBeCloseTo(want.sums[i], 6);
        // Integer data: every partial sum is exact, so the sums are equal.
        if (round) for (let i = 0; i < k * d; i++) expect(got.result.sums.hi[i] + got.result.sums.lo[i], `sum ${i}`).toBe(want.sums[i]);
      }
      expect(relClose(got.result.inertia.hi[0] + got.result.inertia.lo[0], want.inertia, 1e-6)).toBe(true);
      if (round) expect(got.result.inertia.hi[0] + got.result.inertia.lo[0]).toBe(want.inertia);
    });
  }

  it('data far from the origin (10^4 ± 5): labels are the float64 nearest centres, up to near-ties', async () => {
    // Guards the f32 distances: a dot-product form |c|² - 2 x·c without a shift would lose every digit here (|x|² ≈ 10^9).
    const ctx = await testGpu();
    const rng = new Rng(11, 'far from the origin');
    const rows = 4000, d = 8, k = 16;
    const x = randomRows(rng, rows, d, 10).map((v) => v + 1e4);
    const centres = randomRows(rng, k, d, 10).map((v) => v + 1e4);
    const m = await upload(ctx, x, null, rows, d);
    const got = await assignOnGpu(ctx, m, centres, k);
    freeMatrix(ctx, m);
    const f32Centres = new Float32Array(centres), columns = columnsCpu(x, rows, d);
    let far = 0;
    for (let r = 0; r < rows; r++) {
      const d2 = (c: number) => { let s = 0; for (let j = 0; j < d; j++) s += (columns[j * rows + r] - f32Centres[c * d + j]) ** 2; return s; };
      let best = 0;
      for (let c = 1; c < k; c++) if (d2(c) < d2(best)) best = c;
      // The GPU's choice is the nearest, or within f32 rounding of it; its distance is that centre's.
      if (d2(got.labels[r]) > d2(best) * (1 + 1e-5)) far++;
      expect(relClose(got.dist[r], d2(got.labels[r]), 1e-4), `row ${r} distance`).toBe(true);
    }
    expect(far).toBe(0);
  });

  it('one cluster takes every row of many blocks, the others stay empty; the same bits when run again', async () => {
    const ctx = await testGpu();
    const rng = new Rng(5, 'one cluster');
    const rows = 4 * sumBlockRows(11) + 300, d = 5, k = 11;
    const x = randomRows(rng, rows, d, 4);
    // Centre 6 at the origin; the others far away, so empty.
    const centres = new Float64Array(k * d).map((_, i) => (Math.floor(i / d) === 6 ? 0 : 1000 + i));
    const m = await upload(ctx, x, null, rows, d);
    const got = await assignOnGpu(ctx, m, centres, k);
    const again = await assignOnGpu(ctx, m, centres, k);
    freeMatrix(ctx, m);
    expect(Array.from(got.result.counts)).toEqual(Array.from({ length: k }, (_, c) => (c === 6 ? rows : 0)));
    const want = kmeansAssignCpu(columnsCpu(x, rows, d), rows, d, new Float32Array(centres), k);
    for (let i = 0; i < k * d; i++) {
      const v = got.result.sums.hi[i] + got.result.sums.lo[i];
      if (Math.floor(i / d) === 6) expect(v, `sum ${i}`).toBeCloseTo(want.sums[i], 8);
      else expect(v, `sum ${i}`).toBe(0);
    }
    expect(relClose(got.result.inertia.hi[0] + got.result.inertia.lo[0], want.inertia, 1e-6)).toBe(true);
    expect(Array.from(new Uint32Array(again.pairs.buffer))).toEqual(Array.from(new Uint32Array(got.pairs.buffer)));
  });

  it(`k above ${MAX_SUM_CLUSTERS} is left to the CPU code`, () => {
    expect(kmeansOnGpu(3, MAX_SUM_CLUSTERS)).toBe(true);
    expect(kmeansOnGpu(3, MAX_SUM_CLUSTERS + 1)).toBe(false);
  });

  it('all rows equal: one cluster takes every row (the lowest index among equal centres)', async () => {
    const ctx = await testGpu();
    const rows = 1234, d = 3;
    const x = new Float64Array(rows * d).fill(2.5);
    const centres = new Float64Array([9, 9, 9, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5]);
    const m = await upload(ctx, x, null, rows, d);
    const got = await assignOnGpu(ctx, m, centres, 3);
    freeMatrix(ctx, m);
    expect(Array.from(got.result.counts)).toEqual([0, rows, 0]);
    expect(got.result.sums.hi[3] + got.result.sums.lo[3]).toBe(2.5 * rows);
    expect(got.result.inertia.hi[0]).toBe(0);
  });
});

/**
 * The sums kernel alone on given labels and distances, with `tileRows` rows per sub-tile (by
 * default its own choice): its per-block partials as u32 bits. The buffer starts as NaN bits, so
 * an entry the kernel leaves unwritten shows.
 */
async function sumPartialsOnGpu(ctx: GpuContext, m: DeviceMatrix, labels: Uint32Array, dist: Float32Array, k: number, tileRows?: number, workgroups = sumsWorkgroups(m.rows, k, m.cols)): Promise<Uint32Array> {
  const work = new GpuWork(ctx);
  const floats = Math.ceil(m.rows / sumBlockRows(k)) * assignEntries(k, m.cols) * 2;
  const partials = work.input(new Uint32Array(floats).fill(0x7fc0dead), 'partials');
  const label = `sums-${m.cols}-${k}-${tileRows ?? 'default'}`;
  work.dispatch(label, kmeansSumsWgsl(m.cols, k, tileRows), 'sums', [work.params([m.rows, k, 0, 0]), m.xr, work.input(labels, 'labels'), work.input(dist, 'dist'), partials], workgroups);
  const [got] = await work.finish([{ buf: partials, floats }]);
  return new Uint32Array(got.buffer);
}

/** Where two partials buffers first differ (block, entry, hi or lo), or undefined. */
function firstDifference(got: Uint32Array, want: Uint32Array, entries: number): string | undefined {
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) return `block ${Math.floor(i / 2 / entries)} entry ${Math.floor(i / 2) % entries} ${i % 2 ? 'lo' : 'hi'}: 0x${got[i].toString(16)}, not 0x${want[i].toString(16)}`;
  }
  return undefined;
}

describe.skipIf(skipGpuTests)('k-means sums kernel: per-block partials bit for bit', () => {
  const cases: [string, number, number, number, (r: number, rng: Rng) => number][] = [
    // name, rows, d, k, label of row r
    ['d 6, k 9, a last partial block', 2 * sumBlockRows(9) + 101, 6, 9, (_, rng) => rng.nextInt(9)],
    ['d 32, k 64 (the benchmark shape)', 2 * sumBlockRows(64) + 517, 32, 64, (_, rng) => rng.nextInt(64)],
    ['d 1, k 1', 1500, 1, 1, () => 0],
    [`k ${MAX_SUM_CLUSTERS} (several cluster ranges), d 3`, sumBlockRows(MAX_SUM_CLUSTERS) + 999, 3, MAX_SUM_CLUSTERS, (_, rng) => rng.nextInt(MAX_SUM_CLUSTERS)],
    ['d 31 (33 values: groups that straddle warps), k 300 (several cluster ranges)', 1300, 31, 300, (_, rng) => rng.nextInt(300)],
    ['d 70 (more values than a warp), k 20', 2100, 70, 20, (_, rng) => rng.nextInt(20)],
    [`d ${MAX_GPU_FEATURES} (the most features: two value ranges), k 5`, 1100, MAX_GPU_FEATURES, 5, (_, rng) => rng.nextInt(5)],
    ['empty clusters: k 40, runs of 50 rows of clusters 3, 17, 39', 3000, 5, 40, (r) => [3, 17, 39][Math.floor(r / 50) % 3]],
    ['one cluster holds every row', 3 * sumBlockRows(11) + 300, 5, 11, () => 6],
  ];
  // Two shapes also with other rows per sub-tile (1 row, rows that fill no whole mask word, several
  // words, more than the default; 112 the most that fit 16 KiB for d 32, k 64), and with 2
  // workgroups, fewer than blocks × passes, so each takes several in turn.
  const sweeps: Record<string, number[]> = {
    'd 6, k 9, a last partial block': [1, 37, 64, 96, 256],
    'd 32, k 64 (the benchmark shape)': [1, 37, 96, 112],
  };
  for (const [name, rows, d, k, labelOf] of cases) {
    const also = sweeps[name] ? `, also with ${sweeps[name].join(', ')} rows per sub-tile and with 2 workgroups` : '';
    it(`${name}: the CPU twin's partials, every entry written${also}`, async () => {
      const ctx = await testGpu();
      const rng = new Rng(rows, name);
      // Magnitudes from 2^-30 to 2^30: exact sums need more than a double-float's 48 bits, so the bits depend on the order of the rows.
      const wide = () => (rng.nextFloat() - 0.5) * 2 ** (rng.nextInt(61) - 30);
      const x = Float64Array.from({ length: rows * d }, wide);
      const labels = Uint32Array.from({ length: rows }, (_, r) => labelOf(r, rng));
      const dist = Float32Array.from({ length: rows }, () => Math.abs(wide()));
      const m = await upload(ctx, x, null, rows, d);
      const want = new Uint32Array(kmeansSumPartialsCpu(columnsCpu(x, rows, d), rows, d, labels, dist, k).buffer);
      const entries = assignEntries(k, d);
      expect(firstDifference(await sumPartialsOnGpu(ctx, m, labels, dist, k), want, entries), 'default rows per sub-tile').toBeUndefined();
      for (const tileRows of sweeps[name] ?? []) {
        expect(firstDifference(await sumPartialsOnGpu(ctx, m, labels, dist, k, tileRows), want, entries), `${tileRows} rows per sub-tile`).toBeUndefined();
      }
      if (sweeps[name]) expect(firstDifference(await sumPartialsOnGpu(ctx, m, labels, dist, k, undefined, 2), want, entries), '2 workgroups').toBeUndefined();
      freeMatrix(ctx, m);
    });
  }
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
