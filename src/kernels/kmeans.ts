// k-means on a device matrix: the Lloyd step (nearest centres with per-cluster counts, sums and
// inertia in one pass), and the k-means++ and k-means|| seeding steps over each row's nearest
// squared distance kept on the device (minD2). Functions record into a GpuWork, so every partition of a worker
// shares one submission and one readback. WGSL: kmeans.wgsl.ts. CPU twins: kmeansStepCpu (word
// for word), ppUpdateCpu.

import type { GpuContext } from '../engine/gpu/device.js';
import { ddAddPair, ddZeros, type DDArray } from '../engine/ml/double-double.js';
import type { AssignResult, ExactAssignment } from '../engine/ml/kmeans-tasks.js';
import { rowHash32 } from '../engine/ml/random.js';
import { BLOCK_SUMS, blocksOf, recordBlockSums, recordReduceBlocks, REDUCE_BLOCKS, type DeviceMatrix, type GpuWork, type KernelSource } from './ml-matrix.js';
import { boundSlack, CENTRE_TILE, kmeansBoundCheckWgsl, KMEANS_MAX_ABS_WGSL, KMEANS_PAR_SAMPLE_WGSL, KMEANS_SMALLEST_HASH_WGSL, kmeansPpPotentialWgsl, kmeansPpUpdateWgsl, kmeansStepWgsl, MAX_GPU_CLUSTERS, STEP_NON_FINITE, STEP_SUM_BITS, stepLayout, stepRowsPerThread, stepWorkgroupBytes } from './kmeans.wgsl.js';

/** Feature counts the kernels take (a row lives in registers; more runs the CPU code). */
export const MAX_GPU_FEATURES = 256;

/** Whether the kernels take `cols` features (and, for the assignment, `k` clusters). */
export function kmeansOnGpu(cols: number, k = 1): boolean {
  return cols >= 1 && cols <= MAX_GPU_FEATURES && cols <= CENTRE_TILE && k >= 1 && k <= MAX_GPU_CLUSTERS;
}

export const MAX_ABS: KernelSource = ['kmeans-max-abs', KMEANS_MAX_ABS_WGSL, 'max_abs'];
const SMALLEST_HASH: KernelSource = ['kmeans-smallest-hash', KMEANS_SMALLEST_HASH_WGSL, 'smallest_hash'];
const PAR_SAMPLE: KernelSource = ['kmeans-par-sample', KMEANS_PAR_SAMPLE_WGSL, 'par_sample'];
const stepKernel = (d: number, k: number, local: boolean, countsOnly: boolean): KernelSource =>
  [`kmeans-step-${d}-${k}-${local ? 'local' : 'device'}${countsOnly ? '-counts' : ''}`, kmeansStepWgsl(d, k, local, { countsOnly }), 'step'];
const boundedStepKernel = (d: number, k: number, local: boolean): KernelSource =>
  [`kmeans-bounded-step-${d}-${k}-${local ? 'local' : 'device'}`, kmeansStepWgsl(d, k, local, { bounded: true }), 'step'];
const boundCheckKernel = (d: number): KernelSource => [`kmeans-bound-check-${d}`, kmeansBoundCheckWgsl(d), 'bound_check'];
const ppUpdateKernel = (d: number): KernelSource => [`kmeans-pp-update-${d}`, kmeansPpUpdateWgsl(d), 'pp_update'];
const ppPotentialKernel = (d: number): KernelSource => [`kmeans-pp-potential-${d}`, kmeansPpPotentialWgsl(d), 'pp_potential'];

/**
 * Every kernel k-means may dispatch on a partition of d features (its step, with and without the
 * sums; seeding's), for compiling while the rows load: the step alone takes ~1 s on a fresh machine.
 */
export function kmeansKernels(ctx: GpuContext, d: number, k: number): KernelSource[] {
  if (!kmeansOnGpu(d, k)) return [];
  const local = stepSumsLocal(ctx, k, d);
  return [stepKernel(d, k, local, false), stepKernel(d, k, local, true), boundedStepKernel(d, k, local), boundCheckKernel(d), ppUpdateKernel(d), ppPotentialKernel(d), SMALLEST_HASH, PAR_SAMPLE, BLOCK_SUMS, REDUCE_BLOCKS];
}

function rowWorkgroups(rows: number): number {
  return Math.ceil(rows / 256);
}

/** Whether the step's per-cluster sums fit the device's workgroup memory (then each workgroup adds its rows there first). */
export function stepSumsLocal(ctx: GpuContext, k: number, d: number): boolean {
  return stepWorkgroupBytes(d, k, true) <= ctx.device.limits.maxComputeWorkgroupStorageSize;
}

/**
 * Rows a workgroup of the step takes when its sums are local (one pass of its 256 threads at four
 * rows each), up to MAX_STEP_WORKGROUPS workgroups. Each workgroup adds its k × (d + 1) sums to
 * device memory once; still, a partition's dispatch must fill the GPU alone, since dispatches that
 * add to one output buffer run one after another. 8 partitions of 1.25 M rows × 32, k = 64 on an
 * H200: 3.89 ms with 1024 rows a workgroup, 4.25–4.32 ms with 2048–4096, 8.16 ms with 8192.
 */
export const STEP_ROWS_PER_WORKGROUP = 1024;
const MAX_STEP_WORKGROUPS = 4096;

/** Workgroups of a step over `rows` rows (any number gives the same sums). */
export function stepWorkgroups(rows: number, d: number, local: boolean): number {
  const perThread = Math.ceil(rows / (256 * stepRowsPerThread(d)));
  return Math.max(1, local ? Math.min(perThread, MAX_STEP_WORKGROUPS, Math.ceil(rows / STEP_ROWS_PER_WORKGROUP)) : perThread);
}

/** Pairs (8 bytes) of a partition's step result in the shared output buffer. */
export function stepPairs(k: number, d: number): number {
  return Math.ceil(stepLayout(k, d).words / 2);
}

/** f32 bits of a number (rounded to f32), e.g. as a kernel parameter word. */
function f32Bits(v: number): number {
  F32[0] = v;
  return U32[0];
}
const F32 = new Float32Array(1), U32 = new Uint32Array(F32.buffer);
/** Bits of |v| for an f32 value v (NaN above infinity). */
const absBitsF32 = (v: number) => f32Bits(v) & 0x7fffffff;
/** e with |v| < 2^e from the bits of |v|, as the kernel's exponentOf. */
const exponentOf = (absBits: number) => (absBits >>> 23) - 126;

/** e with every |centre value| < 2^e (f32 centres), for the step's bound of a distance; 129 or more when one is not finite. */
export function centreExponent(centres: Float32Array): number {
  let m = 0;
  for (const v of centres) m = Math.max(m, absBitsF32(v));
  return exponentOf(m);
}

/** Records per column of `m` the largest |x| as f32 bits into out from word `outWord` (zeroed there before); the column statistics carry them to the step's scales. */
export function recordMaxAbs(work: GpuWork, m: DeviceMatrix, out: GPUBuffer, outWord: number): void {
  const chunks = Math.max(1, Math.min(Math.ceil(m.rows / (256 * 16)), Math.ceil(4096 / m.cols)));
  work.dispatch(...MAX_ABS, [work.params([m.rows, m.cols, chunks, outWord]), m.xr, out], m.cols * chunks);
}

/** The words of a FixedPointBasis's maxima as the step reads them: f32 bits of each column's largest |x|. */
export function maxBitsOf(maxAbs: Float64Array): Uint32Array {
  return new Uint32Array(new Float32Array(maxAbs).buffer);
}

/**
 * Records the k-means step of `m` against `centres` (k × d, f32, on the device; every |value| below
 * 2^centreExp): per-cluster counts and exact sums of features and squared distances into out from
 * pair `outOffset` (stepLayout; `out` zeroed there before). The fixed-point scales come from
 * `maxBits` (maxBitsOf the matrix's column maxima, on the device) and `scaleRows` (the matrix's
 * rows), the same for every partition. `local` and `workgroups` (defaults from the device and the
 * rows) change the speed, not the result; `countsOnly` leaves the sums 0.
 */
export function recordStep(work: GpuWork, m: DeviceMatrix, maxBits: GPUBuffer, scaleRows: number, centres: GPUBuffer, centreExp: number, k: number, out: GPUBuffer, outOffset: number,
                           options: { local?: boolean; workgroups?: number; countsOnly?: boolean } = {}): void {
  recordStepWith(work, m, work.params(stepParams(m, scaleRows, centreExp, outOffset)), maxBits, centres, k, out, options);
}

/** The step's parameters (StepParams) for partition `m`, as recordStep passes them. */
export function stepParams(m: DeviceMatrix, scaleRows: number, centreExp: number, outOffset: number): number[] {
  if (!(scaleRows >= m.rows && scaleRows < 2 ** 32)) throw new Error(`the step's scales cover ${scaleRows} rows, fewer than the partition's ${m.rows}`);
  return [m.rows, 2 * outOffset, Math.min(centreExp, 255), scaleRows];
}

/** recordStep with its parameters (stepParams' words) in a uniform buffer of the caller's, which it may write again before the commands run. */
export function recordStepWith(work: GpuWork, m: DeviceMatrix, params: GPUBuffer, maxBits: GPUBuffer, centres: GPUBuffer, k: number, out: GPUBuffer,
                               { local = stepSumsLocal(work.ctx, k, m.cols), workgroups, countsOnly = false }: { local?: boolean; workgroups?: number; countsOnly?: boolean } = {}): void {
  const d = m.cols;
  if (!kmeansOnGpu(d, k)) throw new Error(`k-means kernels take 1..${MAX_GPU_FEATURES} features and 1..${MAX_GPU_CLUSTERS} clusters, not ${d} and ${k}`);
  work.dispatch(...stepKernel(d, k, local, countsOnly), [params, m.xr, centres, maxBits, out], workgroups ?? stepWorkgroups(m.rows, d, local));
}

/** A partition's state of the bounded step: each row's nearest centre (NO_LABEL before its first) and bounds, and the rows a round lists. */
export interface RowBounds { labels: GPUBuffer; bounds: GPUBuffer; list: GPUBuffer; checkParams: GPUBuffer }

/**
 * Records the bounded step of `m` (kmeans.wgsl.ts): Hamerly's test of every row against `drift`
 * (centreDrifts), then the listed rows against every centre, their moves between clusters added
 * to the sums in `totals` (stepLayout words from word 0, kept from round to round). `list` word 0
 * must be 0 when the commands run. Labels and sums are those of recordStep at the same centres.
 */
export function recordBoundedStep(work: GpuWork, m: DeviceMatrix, params: GPUBuffer, maxBits: GPUBuffer, centres: GPUBuffer, k: number, drift: GPUBuffer,
                                  state: RowBounds, totals: GPUBuffer, local = stepSumsLocal(work.ctx, k, m.cols)): void {
  const d = m.cols;
  if (!kmeansOnGpu(d, k)) throw new Error(`k-means kernels take 1..${MAX_GPU_FEATURES} features and 1..${MAX_GPU_CLUSTERS} clusters, not ${d} and ${k}`);
  work.dispatch(...boundCheckKernel(d), [state.checkParams, state.labels, state.bounds, drift, state.list, m.xr, centres], rowWorkgroups(m.rows));
  work.dispatch(...boundedStepKernel(d, k, local), [params, m.xr, centres, maxBits, totals, state.list, state.labels, state.bounds], stepWorkgroups(m.rows, d, local));
}

/** The words of a partition's bound_check parameters (CheckParams). */
export function boundCheckParams(rows: number, k: number, d: number): number[] {
  return [rows, k, f32Bits(1 + 4 * boundSlack(d)), 0];
}

/**
 * The drift words of the bound check (kmeansBoundCheckWgsl), from the centres the bounds were
 * made for (`before`, f32) to `after` (f32), k × d each: per centre how far it moved (rounded up)
 * and half the distance to its nearest other centre (rounded down), then the largest move and the
 * second largest, then the bits of the largest's index. Null when a distance is not finite.
 */
export function centreDrifts(before: Float32Array, after: Float32Array, k: number, d: number): Float32Array | null {
  const out = new Float32Array(2 * k + 4), bits = new Uint32Array(out.buffer);
  const up = 1 + 2 ** -20, down = 1 - 2 ** -20;
  // The half gaps (a test that needs no lower bound) cost k² × d / 2 here: left at 0 for many centres.
  const gaps = new Float64Array(k).fill(Infinity);
  if (k > 1 && k * k * d <= 2 ** 22) {
    for (let c = 0; c < k; c++) {
      for (let o = c + 1; o < k; o++) {
        let g = 0;
        for (let j = 0; j < d; j++) { const t = after[c * d + j] - after[o * d + j]; g += t * t; }
        if (g < gaps[c]) gaps[c] = g;
        if (g < gaps[o]) gaps[o] = g;
      }
    }
  } else gaps.fill(0);
  let most = 0, second = 0, mostAt = 0;
  for (let c = 0; c < k; c++) {
    let s = 0;
    for (let j = 0; j < d; j++) { const t = after[c * d + j] - before[c * d + j]; s += t * t; }
    const moved = Math.sqrt(s) * up;
    if (!Number.isFinite(moved)) return null; // so are the gaps of centres that are not finite
    out[2 * c] = moved;
    out[2 * c + 1] = Number.isFinite(gaps[c]) ? Math.sqrt(gaps[c]) / 2 * down : 0;
    if (moved > most) { second = most; most = moved; mostAt = c; } else if (moved > second) second = moved;
  }
  out[2 * k] = most;
  out[2 * k + 1] = second;
  bits[2 * k + 2] = mostAt;
  return out;
}

/**
 * A partition's step words (stepLayout) as the trainer takes them: added to other partitions'
 * words exactly (64-bit sums with carries, counts), then decoded once. Every partition of a matrix
 * sums on one scale, so their scale words are the same.
 */
export class StepWords implements ExactAssignment {
  readonly words: Uint32Array;

  /**
   * `words`: from the step's first word (a partition's pairs may end in one word of padding).
   * `isZero`: the words of no rows (zero()), which plus() skips rather than adds.
   */
  constructor(words: Uint32Array, readonly k: number, readonly d: number, readonly isZero = false) {
    const n = stepLayout(k, d).words;
    if (words.length < n) throw new Error(`k-means step words: ${words.length}, not ${n}`);
    this.words = words.subarray(0, n);
  }

  plus(other: ExactAssignment): StepWords {
    const a = this.words, b = (other as StepWords).words, { hi, counts, scales, words } = stepLayout(this.k, this.d);
    if (b.length !== words) throw new Error('k-means step words of different shapes');
    for (let i = scales; i < words; i++) if (a[i] !== b[i]) throw new Error('k-means step words on different scales');
    // A GPU worker answers for all its partitions with one sum and a zero for each of the others:
    // adding those zeros word by word was most of the parent's time in a Lloyd round.
    if ((other as StepWords).isZero) return this;
    if (this.isZero) return other as StepWords;
    const out = a.slice();
    for (let i = 0; i < hi; i++) {
      const lo = a[i] + b[i];
      out[i] = lo >>> 0;
      out[hi + i] = (a[hi + i] + b[hi + i] + (lo > 0xffffffff ? 1 : 0)) >>> 0;
    }
    for (let i = counts; i < scales; i++) out[i] = (a[i] + b[i]) >>> 0;
    return new StepWords(out, this.k, this.d);
  }

  result(): AssignResult {
    return stepResultOf(this.words, this.k, this.d);
  }

  /** No rows on the same scale: what adding nothing gives (a partition whose rows another's words hold). */
  zero(): StepWords {
    const { scales } = stepLayout(this.k, this.d), out = new Uint32Array(this.words.length);
    out.set(this.words.subarray(scales), scales);
    return new StepWords(out, this.k, this.d, true);
  }
}

/** The trainer's AssignResult from a partition's step words (stepLayout): sums scaled back by 2^-F exactly, as double-doubles. */
export function stepResultOf(words: Uint32Array, k: number, d: number): AssignResult {
  const layout = stepLayout(k, d);
  const value = (v: number, c: number, scale: number, out: DDArray, at: number) => {
    const i = v * k + c;
    // hi × 2^32 and lo are exact doubles; their sum as a double-double (|hi part| ≥ 2^32 > lo, or 0).
    const a = (words[layout.hi + i] | 0) * 4294967296, b = words[i];
    const s = a + b;
    out.hi[at] = s * scale;
    out.lo[at] = (b - (s - a)) * scale;
  };
  const scaleOf = (v: number) => {
    const f = words[layout.scales + v];
    return f === STEP_NON_FINITE ? NaN : 2 ** -(f | 0);
  };
  const sums = ddZeros(k * d);
  for (let j = 0; j < d; j++) {
    const scale = scaleOf(j);
    for (let c = 0; c < k; c++) value(j, c, scale, sums, c * d + j);
  }
  const counts = Float64Array.from(words.subarray(layout.counts, layout.counts + k));
  // The clusters' distance sums in cluster order (double-double, as the trainer combines partitions).
  const distScale = scaleOf(d), cluster = ddZeros(1), inertia = ddZeros(1);
  for (let c = 0; c < k; c++) {
    value(d, c, distScale, cluster, 0);
    ddAddPair(inertia, 0, cluster.hi[0], cluster.lo[0]);
  }
  if (Number.isNaN(distScale) && sums.hi.every((v) => !Number.isNaN(v))) inertia.hi[0] = Infinity; // finite data: the distances overflow f32
  return { counts, sums, inertia };
}

/** Each column's largest |x| as f32 bits, for column-major f32 `x` (what recordMaxAbs writes). */
export function maxBitsOfColumns(x: Float32Array, rows: number, d: number): Uint32Array {
  return Uint32Array.from({ length: d }, (_, j) => { let m = 0; for (let r = 0; r < rows; r++) m = Math.max(m, absBitsF32(x[j * rows + r])); return m; });
}

/**
 * CPU twin of recordStep, word for word: labels and distances in f32 (nearestF32), and the
 * step's words (stepLayout), each value truncated to an integer after scaling and summed exactly
 * (BigInt). `basis`: the scales' row count and column maxima (by default these rows alone).
 * Assumes no subnormal inputs (a GPU may flush them to zero).
 */
export function kmeansStepCpu(x: Float32Array, rows: number, d: number, centres: Float32Array, k: number,
                              basis: { rows: number; maxBits: Uint32Array } = { rows, maxBits: maxBitsOfColumns(x, rows, d) }): { labels: Uint32Array; dist: Float32Array; words: Uint32Array } {
  const { labels, dist } = nearestF32(x, rows, d, centres, k);
  const layout = stepLayout(k, d), words = new Uint32Array(layout.words);
  const rowBits = 32 - Math.clz32(basis.rows);
  const scaleExp = (e: number) => Math.min(127, Math.max(-126, STEP_SUM_BITS - rowBits - e));
  const maxBits = Array.from(basis.maxBits);
  const finite = maxBits.every((b) => b < 0x7f800000);
  const m = Math.max(Math.min(centreExponent(centres), 255), ...maxBits.map(exponentOf));
  const distExp = Math.ceil(Math.log2(d)) + 2 * m + 3;
  const f = [...maxBits.map((b) => scaleExp(exponentOf(b))), scaleExp(distExp)];
  const sums = new Array<bigint>(k * (d + 1)).fill(0n);
  const fixed = (v: number, e: number) => { const y = Math.fround(v * 2 ** e); return BigInt(Math.sign(y) * Math.trunc(Math.abs(y))); };
  for (let r = 0; r < rows; r++) {
    const c = labels[r];
    for (let j = 0; j < d; j++) sums[j * k + c] += fixed(x[j * rows + r], f[j]);
    sums[d * k + c] += fixed(dist[r], f[d]);
    words[layout.counts + c]++;
  }
  sums.forEach((s, i) => { const w = BigInt.asUintN(64, s); words[i] = Number(w & 0xffffffffn); words[layout.hi + i] = Number(w >> 32n); });
  for (let j = 0; j < d; j++) words[layout.scales + j] = maxBits[j] >= 0x7f800000 ? STEP_NON_FINITE : f[j] >>> 0;
  words[layout.scales + d] = !finite || distExp >= 128 ? STEP_NON_FINITE : f[d] >>> 0;
  return { labels, dist, words };
}

/** Records minD2 = min(minD2, distance to centres [from, to)) per row; from = 0 starts afresh. */
export function recordPpUpdate(work: GpuWork, m: DeviceMatrix, minD2: GPUBuffer, centres: GPUBuffer, from: number, to: number): void {
  if (to <= from) return;
  const d = m.cols;
  work.dispatch(...ppUpdateKernel(d), [work.params([m.rows, 0, from, to]), m.xr, centres, minD2], rowWorkgroups(m.rows));
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
  work.dispatch(...ppPotentialKernel(d), [work.params([m.rows, trials, 0, 0]), m.xr, candidates, minD2, potential], rowWorkgroups(m.rows));
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
  work.dispatch(...SMALLEST_HASH, [params, best], groups);
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

/**
 * Records k-means|| sampling of rows firstRow + r (r < rows) against their nearest squared
 * distances `minD2` (KMEANS_PAR_SAMPLE_WGSL) into out from word `outWord`: the count, then up to
 * `cap` row numbers (words zeroed before). sampledRows reads them.
 */
export function recordParSample(work: GpuWork, rows: number, minD2: GPUBuffer, key: number, firstRow: number, oversampling: number, phi: number, cap: number, out: GPUBuffer, outWord: number): void {
  // The hash word sampled by depends on the global row's low word only.
  const params = work.params([rows, key >>> 0, firstRow % 2 ** 32, 0, f32Bits(oversampling), f32Bits(phi), cap, outWord]);
  work.dispatch(...PAR_SAMPLE, [params, minD2, out], rowWorkgroups(rows));
}

/** The rows recordParSample listed, ascending; null when more than `cap` were sampled (then parSampleCpu over the distances). */
export function sampledRows(words: Uint32Array, cap: number): number[] | null {
  const count = words[0];
  return count > cap ? null : Array.from(words.subarray(1, 1 + count)).sort((a, b) => a - b);
}

/** CPU twin of recordParSample: the sampled rows r, ascending. */
export function parSampleCpu(minD2: Float32Array, key: number, firstRow: number, oversampling: number, phi: number): number[] {
  const out: number[] = [];
  const phi32 = Math.fround(phi), over32 = Math.fround(oversampling);
  for (let r = 0; r < minD2.length; r++) {
    const u = Math.fround((rowHash32(key, (firstRow + r) >>> 0) >>> 8) * 2 ** -24); // the first word of rowUniform's hash
    if (Math.fround(u * phi32) < Math.fround(over32 * minD2[r])) out.push(r);
  }
  return out;
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

/** Each row's nearest centre (the lowest index on ties) and its f32 squared distance, as the step finds them. */
function nearestF32(x: Float32Array, rows: number, d: number, centres: Float32Array, k: number): { labels: Uint32Array; dist: Float32Array } {
  const labels = new Uint32Array(rows), dist = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    let best = 0, bestD = 3.4028234663852886e38;
    for (let c = 0; c < k; c++) {
      const s = distF32(x, rows, r, centres, c, d);
      if (s < bestD) { bestD = s; best = c; }
    }
    labels[r] = best;
    dist[r] = bestD;
  }
  return { labels, dist };
}

/** CPU twin of recordPpUpdate. */
export function ppUpdateCpu(x: Float32Array, rows: number, d: number, minD2: Float32Array, centres: Float32Array, from: number, to: number): void {
  for (let r = 0; r < rows; r++) {
    let m = from === 0 ? 3.4028234663852886e38 : minD2[r];
    for (let c = from; c < to; c++) m = Math.min(m, distF32(x, rows, r, centres, c, d));
    minD2[r] = m;
  }
}
