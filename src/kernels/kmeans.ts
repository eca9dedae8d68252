// k-means on a device matrix: Lloyd assignment with per-cluster counts, sums and inertia, and the
// k-means++ seeding steps over each row's nearest squared distance kept on the device (minD2).
// Functions record into a GpuWork, so every partition of a worker shares one submission and one
// readback. WGSL: kmeans.wgsl.ts. CPU twins: kmeansAssignCpu (f32 distances, float64 sums),
// kmeansSumsCpu (the kernels' double-float sums, bit for bit), ppUpdateCpu.

import { ddAddPair, ddZeros } from '../engine/ml/double-double.js';
import type { AssignResult } from '../engine/ml/kmeans-tasks.js';
import { blocksOf, dfAddCpu, dfAddFCpu, pairsToDD, recordBlockSums, recordReduceBlocks, type DeviceMatrix, type GpuWork } from './ml-matrix.js';
import { assignShape, assignWorkgroups, FMA_PROBE_WGSL, kmeansAssignWgsl, kmeansPpPotentialWgsl, kmeansPpUpdateWgsl, kmeansSumsWgsl, MAX_SUM_CLUSTERS, sumBlockRows, sumsShape } from './kmeans.wgsl.js';

/** Feature counts the kernels take (the k-means++ kernels keep a row in registers; more runs the CPU code). */
export const MAX_GPU_FEATURES = 256;

/** Whether the kernels take `cols` features (and, for the assignment, `k` clusters). */
export function kmeansOnGpu(cols: number, k = 1): boolean {
  return cols >= 1 && cols <= MAX_GPU_FEATURES && k >= 1 && k <= MAX_SUM_CLUSTERS;
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
 * each in row order, then over blocks in order. `buffers` (at least assignBufferBytes) may be kept
 * by the caller across Lloyd iterations; by default they are temporaries of `work`. Returns them.
 */
export function recordAssign(work: GpuWork, m: DeviceMatrix, centres: GPUBuffer, k: number, out: GPUBuffer, outOffset: number, buffers?: AssignBuffers): AssignBuffers {
  const d = m.cols, entries = assignEntries(k, d);
  if (!kmeansOnGpu(d, k)) throw new Error(`k-means kernels take 1..${MAX_GPU_FEATURES} features and 1..${MAX_SUM_CLUSTERS} clusters, not ${d} and ${k}`);
  const bytes = assignBufferBytes(m.rows, k, d);
  const { labels, dist, partials } = buffers ?? {
    labels: work.temp(bytes.labels, 'kmeans labels'), dist: work.temp(bytes.dist, 'kmeans distances'), partials: work.temp(bytes.partials, 'kmeans partial sums'),
  };
  const params = work.params([m.rows, k, 0, 0]);
  const blocks = Math.ceil(m.rows / sumBlockRows(k));
  work.dispatch(`kmeans-assign-${d}-${assignShape(k).groups}`, kmeansAssignWgsl(d, k), 'assign', [params, m.xr, centres, labels, dist], assignWorkgroups(m.rows, k));
  work.dispatch(`kmeans-sums-${d}-${k}`, kmeansSumsWgsl(d, k), 'sums', [params, m.xr, labels, dist, partials], blocks * sumsShape(k, d).passes);
  recordReduceBlocks(work, partials, blocks, entries, out, outOffset, 'block-major');
  return { labels, dist, partials };
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

/** fma(a, b, c) in f32, rounded once (ties to even), for f32 a, b, c: the kernels' Math.fma. */
export function fmaF32(a: number, b: number, c: number): number {
  const p = a * b; // exact: two 24-bit significands
  const hi = p + c;
  const bb = hi - p;
  const err = (p - (hi - bb)) + (c - bb); // p + c = hi + err exactly
  const r = Math.fround(hi);
  // hi rounds to f32 as p + c does, unless hi lies halfway between two f32s and err breaks the tie.
  const mirror = 2 * hi - r;
  if (err === 0 || hi === r || Math.fround(mirror) !== mirror) return r;
  return (err > 0) === (hi > r) ? mirror : r;
}

/**
 * Whether the device's WGSL fma rounds once (NVIDIA) or rounds the product first (lavapipe; Vulkan
 * allows both): the distances' arithmetic, which the CPU twins take as their `fused` argument.
 */
export async function deviceFmaIsFused(work: GpuWork): Promise<boolean> {
  const out = work.temp(4, 'fma probe');
  const a = 1 + 2 ** -12; // a × a = 1 + 2^-11 + 2^-24: fused, a × a - (1 + 2^-11) = 2^-24; rounded first, 0
  work.dispatch('kmeans-fma-probe', FMA_PROBE_WGSL, 'probe', [work.input(new Float32Array([a, -(1 + 2 ** -11)]), 'fma probe in'), out], 1);
  const [got] = await work.finish([{ buf: out, floats: 1 }]);
  return got[0] !== 0;
}

/** f32 squared distance of row r (column-major `x`) to centre c: s = fma(t, t, s) over features in order. */
function distF32(x: Float32Array, rows: number, r: number, centres: Float32Array, c: number, d: number, fused: boolean): number {
  let s = 0;
  for (let j = 0; j < d; j++) {
    const t = Math.fround(x[j * rows + r] - centres[c * d + j]);
    s = fused ? fmaF32(t, t, s) : Math.fround(s + Math.fround(t * t));
  }
  return s;
}

/** CPU twin of recordAssign: labels and distances in f32 (the same bits, given deviceFmaIsFused), counts, float64 sums and inertia. */
export function kmeansAssignCpu(x: Float32Array, rows: number, d: number, centres: Float32Array, k: number, fused: boolean) {
  const labels = new Uint32Array(rows), dist = new Float32Array(rows);
  const counts = new Float64Array(k), sums = new Float64Array(k * d);
  let inertia = 0;
  for (let r = 0; r < rows; r++) {
    let best = 0, bestD = 3.4028234663852886e38;
    for (let c = 0; c < k; c++) {
      const s = distF32(x, rows, r, centres, c, d, fused);
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

/**
 * CPU twin of the sums recordAssign writes, given the rows' labels and distances: the (hi, lo)
 * pairs of its out range, bit for bit (each entry summed in double-float over a block's rows of
 * its cluster in row order, then over blocks in order).
 */
export function kmeansSumsCpu(x: Float32Array, rows: number, d: number, labels: Uint32Array, dist: Float32Array, k: number): Float32Array {
  const entries = assignEntries(k, d), blockRows = sumBlockRows(k);
  const total = new Float32Array(entries * 2);
  const block = new Float32Array(entries * 2);
  // Entry of column q (feature j < d, then the count, then the distance) of cluster c: q × k + c.
  const add = (e: number, v: number) => { [block[2 * e], block[2 * e + 1]] = dfAddFCpu(block[2 * e], block[2 * e + 1], v); };
  for (let r0 = 0; r0 < rows; r0 += blockRows) {
    block.fill(0);
    for (let r = r0; r < Math.min(rows, r0 + blockRows); r++) {
      const c = labels[r];
      for (let j = 0; j < d; j++) add(j * k + c, x[j * rows + r]);
      add(d * k + c, 1);
      add((d + 1) * k + c, dist[r]);
    }
    for (let e = 0; e < entries; e++) [total[2 * e], total[2 * e + 1]] = dfAddCpu(total[2 * e], total[2 * e + 1], block[2 * e], block[2 * e + 1]);
  }
  return total;
}

/** CPU twin of recordPpUpdate. */
export function ppUpdateCpu(x: Float32Array, rows: number, d: number, minD2: Float32Array, centres: Float32Array, from: number, to: number, fused: boolean): void {
  for (let r = 0; r < rows; r++) {
    let m = from === 0 ? 3.4028234663852886e38 : minD2[r];
    for (let c = from; c < to; c++) m = Math.min(m, distF32(x, rows, r, centres, c, d, fused));
    minD2[r] = m;
  }
}
