// k-means on a device matrix: Lloyd assignment with per-cluster counts, sums and inertia, and the
// k-means++ seeding steps over each row's nearest squared distance kept on the device (minD2).
// Functions record into a GpuWork, so every partition of a worker shares one submission and one
// readback. WGSL: kmeans.wgsl.ts. CPU twins (f32 distances, float64 sums): kmeansAssignCpu,
// ppUpdateCpu.

import { ddAddPair, ddZeros } from '../engine/ml/double-double.js';
import type { AssignResult } from '../engine/ml/kmeans-tasks.js';
import { blocksOf, dfAddFCpu, pairsToDD, recordBlockSums, recordReduceBlocks, reduceBlocksCpu, type DeviceMatrix, type GpuWork } from './ml-matrix.js';
import { assignRowsPerThread, CENTRE_TILE, KMEANS_SMALLEST_HASH_WGSL, kmeansAssignWgsl, kmeansPpPotentialWgsl, kmeansPpUpdateWgsl, kmeansSumsWgsl, MAX_SUM_CLUSTERS, sumBlockRows, sumsWorkgroups } from './kmeans.wgsl.js';

/** Feature counts the kernels take (a row lives in registers; more runs the CPU code). */
export const MAX_GPU_FEATURES = 256;

/** Whether the kernels take `cols` features (and, for the assignment, `k` clusters). */
export function kmeansOnGpu(cols: number, k = 1): boolean {
  return cols >= 1 && cols <= MAX_GPU_FEATURES && cols <= CENTRE_TILE && k >= 1 && k <= MAX_SUM_CLUSTERS;
}

/** Entries of the assignment result of one partition: k × d sums (feature-major), k counts, k per-cluster inertias. */
export function assignEntries(k: number, d: number): number {
  return k * d + 2 * k;
}

function rowWorkgroups(rows: number): number {
  return Math.ceil(rows / 256);
}

/** The working buffers of one partition's assignment (every word is written before it is read). */
export interface AssignBuffers { labels: GPUBuffer; dist: GPUBuffer; partials: GPUBuffer }

/** Byte sizes of the AssignBuffers for `rows` rows, k clusters and d features. */
export function assignBufferBytes(rows: number, k: number, d: number): { labels: number; dist: number; partials: number } {
  return { labels: rows * 4, dist: rows * 4, partials: Math.max(1, Math.ceil(rows / sumBlockRows(k))) * assignEntries(k, d) * 8 };
}

/**
 * Records assignment and per-cluster sums of `m` against `centres` (k × d, f32, on the device) into
 * out[outOffset …] as (hi, lo) pairs: sums, counts and inertia per block of sumBlockRows(k) rows,
 * then over blocks in a fixed tree. `buffers` (at least assignBufferBytes) may be kept by the
 * caller across Lloyd iterations; by default they are temporaries of `work`. Returns them.
 */
export function recordAssign(work: GpuWork, m: DeviceMatrix, centres: GPUBuffer, k: number, out: GPUBuffer, outOffset: number, buffers?: AssignBuffers): AssignBuffers {
  const assign = assignSteps(work, m, centres, k, out, outOffset, buffers);
  for (const step of assign.steps) step();
  return assign.buffers;
}

/**
 * recordAssign as three steps (assignment, per-block sums, sum over blocks), each recording its
 * dispatches when called, in order. A worker holding several partitions records step s of every
 * partition before step s + 1 of any: the device then runs one step's dispatches over different
 * partitions side by side, not each partition's small dispatches (a wave or two each) one after
 * another.
 */
export function assignSteps(work: GpuWork, m: DeviceMatrix, centres: GPUBuffer, k: number, out: GPUBuffer, outOffset: number, buffers?: AssignBuffers): { buffers: AssignBuffers; steps: (() => void)[] } {
  const d = m.cols, entries = assignEntries(k, d);
  if (!kmeansOnGpu(d, k)) throw new Error(`k-means kernels take 1..${MAX_GPU_FEATURES} features and 1..${MAX_SUM_CLUSTERS} clusters, not ${d} and ${k}`);
  const bytes = assignBufferBytes(m.rows, k, d);
  const { labels, dist, partials } = buffers ?? {
    labels: work.temp(bytes.labels, 'kmeans labels'), dist: work.temp(bytes.dist, 'kmeans distances'), partials: work.temp(bytes.partials, 'kmeans partial sums'),
  };
  const params = work.params([m.rows, k, 0, 0]);
  const blocks = Math.ceil(m.rows / sumBlockRows(k));
  return {
    buffers: { labels, dist, partials },
    steps: [
      () => work.dispatch(`kmeans-assign-${d}`, kmeansAssignWgsl(d), 'assign', [params, m.xr, centres, labels, dist], Math.ceil(m.rows / (256 * assignRowsPerThread(d)))),
      () => work.dispatch(`kmeans-sums-${d}-${k}`, kmeansSumsWgsl(d, k), 'sums', [params, m.xr, labels, dist, partials], sumsWorkgroups(m.rows, k, d)),
      () => recordReduceBlocks(work, partials, blocks, entries, out, outOffset, 'block-major'),
    ],
  };
}

/** The trainer's AssignResult from a partition's (hi, lo) pairs. */
export function assignResultOf(pairs: Float32Array, k: number, d: number): AssignResult {
  const feature = pairsToDD(pairs, k * d);
  // Kernel entries are feature-major (j × k + c); the trainer wants cluster-major (c × d + j).
  const sums = { hi: new Float64Array(k * d), lo: new Float64Array(k * d) };
  for (let j = 0; j < d; j++) {
    for (let c = 0; c < k; c++) {
      sums.hi[c * d + j] = feature.hi[j * k + c];
      sums.lo[c * d + j] = feature.lo[j * k + c];
    }
  }
  const counts = new Float64Array(k);
  for (let c = 0; c < k; c++) counts[c] = pairs[2 * (k * d + c)] + pairs[2 * (k * d + c) + 1];
  // The clusters' inertias summed in cluster order (double-double, as the trainer combines partitions).
  const inertia = ddZeros(1);
  for (let c = 0; c < k; c++) ddAddPair(inertia, 0, pairs[2 * (k * d + k + c)], pairs[2 * (k * d + k + c) + 1]);
  return { counts, sums, inertia };
}

/** Records minD2 = min(minD2, distance to centres [from, to)) per row; from = 0 starts afresh. */
export function recordPpUpdate(work: GpuWork, m: DeviceMatrix, minD2: GPUBuffer, centres: GPUBuffer, from: number, to: number): void {
  if (to <= from) return;
  const d = m.cols;
  work.dispatch(`kmeans-pp-update-${d}`, kmeansPpUpdateWgsl(d), 'pp_update', [work.params([m.rows, 0, from, to]), m.xr, centres, minD2], rowWorkgroups(m.rows));
}

/** Records Σ_r minD2[r] into out[outOffset] and returns the per-block partial sums (for ppPick). */
export function recordTotal(work: GpuWork, m: DeviceMatrix, minD2: GPUBuffer, out: GPUBuffer, outOffset: number): GPUBuffer {
  const partials = recordBlockSums(work, minD2, m.rows, 1);
  recordReduceBlocks(work, partials, blocksOf(m.rows), 1, out, outOffset);
  return partials;
}

/** Records, for each of `trials` candidates, Σ_r min(minD2[r], distance to the candidate) into out[outOffset + t]. */
export function recordPotential(work: GpuWork, m: DeviceMatrix, minD2: GPUBuffer, candidates: GPUBuffer, trials: number, out: GPUBuffer, outOffset: number): void {
  const d = m.cols;
  const potential = work.temp(m.rows * trials * 4, 'kmeans++ potentials');
  work.dispatch(`kmeans-pp-potential-${d}`, kmeansPpPotentialWgsl(d), 'pp_potential', [work.params([m.rows, trials, 0, 0]), m.xr, candidates, minD2, potential], rowWorkgroups(m.rows));
  const partials = recordBlockSums(work, potential, m.rows, trials);
  recordReduceBlocks(work, partials, blocksOf(m.rows), trials, out, outOffset);
}

/** Workgroups of a smallest-hash dispatch: each writes its best row (16 bytes). */
export function smallestHashWorkgroups(rows: number): number {
  return Math.max(1, Math.min(1024, Math.ceil(rows / 256)));
}

/**
 * Records, for rows firstRow + r (r < rows), each workgroup's row with the smallest rowUniform(key,
 * row) into out from pair `outOffset` on (two pairs, 16 bytes, a workgroup: smallestHashRow reads them).
 */
export function recordSmallestHash(work: GpuWork, rows: number, key: number, firstRow: number, out: GPUBuffer, outOffset: number): void {
  const groups = smallestHashWorkgroups(rows);
  const best = work.temp(groups * 16, 'kmeans smallest hashes');
  const params = work.params([rows, key >>> 0, firstRow % 2 ** 32, Math.floor(firstRow / 2 ** 32)]);
  work.dispatch('kmeans-smallest-hash', KMEANS_SMALLEST_HASH_WGSL, 'smallest_hash', [params, best], groups);
  work.encoder.copyBufferToBuffer(best, 0, out, outOffset * 8, groups * 16);
}

/** The global row with the smallest hash, from recordSmallestHash's words: (a >> 5, b >> 6, row lo, row hi) per workgroup. */
export function smallestHashRow(words: Uint32Array): number {
  let at = 0;
  const before = (i: number, j: number) => {
    for (const w of [0, 1, 3, 2]) if (words[i + w] !== words[j + w]) return words[i + w] < words[j + w];
    return false;
  };
  for (let i = 4; i < words.length; i += 4) if (before(i, at)) at = i;
  return words[at + 3] * 2 ** 32 + words[at + 2];
}

/** f32 squared distance of row r (column-major `x`) to centre c, summed over features in order. */
function distF32(x: Float32Array, rows: number, r: number, centres: Float32Array, c: number, d: number): number {
  let s = 0;
  for (let j = 0; j < d; j++) {
    const t = Math.fround(x[j * rows + r] - centres[c * d + j]);
    s = Math.fround(s + Math.fround(t * t));
  }
  return s;
}

/** CPU twin of recordAssign: labels and distances in f32, counts, float64 sums and inertia. */
export function kmeansAssignCpu(x: Float32Array, rows: number, d: number, centres: Float32Array, k: number) {
  const labels = new Uint32Array(rows), dist = new Float32Array(rows);
  const counts = new Float64Array(k), sums = new Float64Array(k * d);
  let inertia = 0;
  for (let r = 0; r < rows; r++) {
    let best = 0, bestD = 3.4028234663852886e38;
    for (let c = 0; c < k; c++) {
      const s = distF32(x, rows, r, centres, c, d);
      if (s < bestD) { bestD = s; best = c; }
    }
    labels[r] = best;
    dist[r] = bestD;
    counts[best]++;
    inertia += bestD;
    for (let j = 0; j < d; j++) sums[best * d + j] += x[j * rows + r];
  }
  return { labels, dist, counts, sums, inertia };
}

/** CPU twin of recordPpUpdate. */
export function ppUpdateCpu(x: Float32Array, rows: number, d: number, minD2: Float32Array, centres: Float32Array, from: number, to: number): void {
  for (let r = 0; r < rows; r++) {
    let m = from === 0 ? 3.4028234663852886e38 : minD2[r];
    for (let c = from; c < to; c++) m = Math.min(m, distF32(x, rows, r, centres, c, d));
    minD2[r] = m;
  }
}

/**
 * CPU twin of the sums kernel, bit for bit: its per-block partials, partial[b × entries + e] as
 * (hi, lo) pairs, each entry summed over its cluster's rows of block b (sumBlockRows(k) rows) in
 * row order in double-float f32 steps.
 */
export function kmeansSumPartialsCpu(x: Float32Array, rows: number, d: number, labels: Uint32Array, dist: Float32Array, k: number): Float32Array {
  const entries = assignEntries(k, d), blockRows = sumBlockRows(k);
  const partials = new Float32Array(Math.ceil(rows / blockRows) * entries * 2);
  const add = (at: number, v: number) => { [partials[2 * at], partials[2 * at + 1]] = dfAddFCpu(partials[2 * at], partials[2 * at + 1], v); };
  for (let r = 0; r < rows; r++) {
    const base = Math.floor(r / blockRows) * entries, c = labels[r];
    for (let j = 0; j < d; j++) add(base + j * k + c, x[j * rows + r]);
    add(base + k * d + c, 1);
    add(base + k * d + k + c, dist[r]);
  }
  return partials;
}

/** CPU twin of recordAssign's sums for given labels and distances, bit for bit: the per-block partials, then the sum over blocks; the (hi, lo) pairs recordAssign writes. */
export function kmeansSumsCpu(x: Float32Array, rows: number, d: number, labels: Uint32Array, dist: Float32Array, k: number): Float32Array {
  return reduceBlocksCpu(kmeansSumPartialsCpu(x, rows, d, labels, dist, k), Math.ceil(rows / sumBlockRows(k)), assignEntries(k, d), 'block-major');
}
