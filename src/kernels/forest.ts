// Random-forest split finding on the GPU, recorded into a GpuWork (ml-matrix.ts): per level of
// the trees grown together, a class histogram per (frontier slot, candidate feature), the best
// bin per candidate, and the routing of rows to their children's slots. WGSL: forest.wgsl.ts.
// Each recorder has a CPU twin on typed arrays (`...Cpu`): equal for histograms and routing; the
// best-split twin scores in float64, so only near-ties may pick another bin than the f32 kernel.

import type { GpuContext } from '../engine/gpu/device.js';
import { storageBuffer, workgroupsFor, type StagingRing } from '../engine/gpu/buffers.js';
import type { GpuWork } from './ml-matrix.js';
import { FOREST_BEST_SPLITS_WGSL, FOREST_BOOTSTRAP_WGSL, FOREST_PREDICT_WGSL, FOREST_HISTOGRAM_GLOBAL_WGSL, FOREST_ROUTE_WGSL, forestHistogramSharedWgsl, MAX_GPU_CLASSES } from './forest.wgsl.js';

export { MAX_GPU_CLASSES };

/** "No feature", "no slot" (row in no active node), "no bin": 0xFFFFFFFF in every u32 array. */
export const NONE = 0xffffffff;

/** Workgroup counters (u32) the 'shared' histogram may use at most, below the device's limit. */
const MAX_SHARED_COUNTERS = 8192;
/** (tree, row) indices per chunk of the 'shared' histogram: each chunk flushes its counters once. */
const SHARED_CHUNK = 256 * 64;
/** Workgroups of the 'shared' histogram (each takes chunks in turn). */
const SHARED_WORKGROUPS = 2048;

/** Bytes per feature column of the device bins: rows rounded up to whole u32 words. */
export function rowsPadded(rows: number): number {
  return Math.ceil(rows / 4) * 4;
}

/**
 * Uploads column-major bins (feature f of row r at f × rows + r, values < 256) as bytes packed
 * 4 per u32, each feature's column padded to rowsPadded(rows).
 */
export async function uploadForestBins(ctx: GpuContext, ring: StagingRing, bins: Uint8Array, rows: number, cols: number): Promise<GPUBuffer> {
  const padded = rowsPadded(rows);
  let host = bins.subarray(0, rows * cols);
  if (padded !== rows) {
    host = new Uint8Array(padded * cols);
    for (let f = 0; f < cols; f++) host.set(bins.subarray(f * rows, (f + 1) * rows), f * padded);
  }
  const buf = storageBuffer(ctx, Math.max(4, host.length), 'forest bins');
  if (host.length > 0) await ring.upload(host, buf);
  return buf;
}

/** The shape of one histogram: slots [slotBase, slotBase + slotCount) of a level. */
export interface HistogramShape {
  rows: number;
  trees: number;
  slotBase: number;
  slotCount: number;
  /** Candidate features per slot (nodeFeatures has maxF words per slot). */
  maxF: number;
  /** Most bins of any feature (≤ 256): the stride of the histogram. */
  nBins: number;
  classes: number;
}

/** Index of the counter of (slot s - slotBase, candidate k, bin b, class c) in the histogram. */
export function histIndex(shape: Pick<HistogramShape, 'maxF' | 'nBins' | 'classes'>, s: number, k: number, b: number, c: number): number {
  return ((s * shape.maxF + k) * shape.nBins + b) * shape.classes + c;
}

/** Bytes of the histogram of slotCount slots (the driver chunks the frontier under the binding limit). */
export function forestHistogramBytes(slotCount: number, maxF: number, nBins: number, classes: number): number {
  return slotCount * maxF * nBins * classes * 4;
}

/** Device buffers of the histogram kernel; hist and totals are outputs (zeroed by the recorder). */
export interface HistogramArgs extends HistogramShape {
  bins: GPUBuffer;
  weight: GPUBuffer;
  slot: GPUBuffer;
  labels: GPUBuffer;
  nodeFeatures: GPUBuffer;
  hist: GPUBuffer;
  totals: GPUBuffer;
}

function checkShape(a: HistogramShape): void {
  if (a.classes < 1 || a.classes > MAX_GPU_CLASSES) throw new Error(`forest kernels take 1..${MAX_GPU_CLASSES} classes, not ${a.classes}`);
  if (a.nBins < 1 || a.nBins > 256) throw new Error(`forest kernels take 1..256 bins, not ${a.nBins}`);
  if (a.trees * a.rows >= 2 ** 32) throw new Error(`forest kernels index trees × rows in u32: ${a.trees} × ${a.rows} is too many`);
}

/**
 * Slots whose counters a chunk of the 'shared' histogram is expected to hold: the chunk spans
 * ceil(chunk / rows) + 1 trees at most, each with slotCount / trees slots on average when the
 * driver numbers slots tree by tree (a guess for choosing the variant; exactness never needs it).
 */
function slotsPerChunk(a: HistogramShape): number {
  return Math.min(a.slotCount, (Math.ceil(SHARED_CHUNK / a.rows) + 1) * Math.ceil(a.slotCount / a.trees));
}

/**
 * Records hist[histIndex(s, k, bin, label)] += weight and totals[s × classes + label] += weight
 * for every (tree, row) of positive weight in slot slotBase + s. 'shared' accumulates each chunk
 * of rows in workgroup memory when the counters of the chunk's slots fit there (few nodes, hot
 * counters), 'global' atomically in device memory; both give the same exact counts. 'auto' picks
 * 'shared' when a chunk's slots are expected to fit. Returns the variant recorded.
 */
export function recordForestHistogram(work: GpuWork, a: HistogramArgs, variant: 'auto' | 'global' | 'shared' = 'auto'): 'global' | 'shared' {
  checkShape(a);
  const histPerSlot = a.maxF * a.nBins * a.classes, perSlot = histPerSlot + a.classes;
  // Workgroup memory also holds the slot window (64 bytes kept for it and its alignment).
  const sharedLimit = Math.min(MAX_SHARED_COUNTERS, Math.floor((work.ctx.device.limits.maxComputeWorkgroupStorageSize - 64) / 4));
  const chosen = variant !== 'auto' ? variant : perSlot * slotsPerChunk(a) <= sharedLimit ? 'shared' : 'global';
  work.encoder.clearBuffer(a.hist, 0, Math.max(4, forestHistogramBytes(a.slotCount, a.maxF, a.nBins, a.classes)));
  work.encoder.clearBuffer(a.totals, 0, Math.max(4, a.slotCount * a.classes * 4));
  const params = work.params([a.rows, a.trees, a.slotBase, a.slotCount, a.maxF, a.nBins, a.classes, rowsPadded(a.rows), histPerSlot, SHARED_CHUNK]);
  const buffers = [params, a.bins, a.weight, a.slot, a.labels, a.nodeFeatures, a.hist, a.totals];
  const n = a.trees * a.rows;
  if (chosen === 'shared') {
    // Counters rounded up to a power of two: a few module variants, each as small as it can be.
    const cap = Math.min(sharedLimit, 2 ** Math.ceil(Math.log2(Math.max(256, perSlot * slotsPerChunk(a)))));
    work.dispatch(`forest-histogram-shared-${cap}`, forestHistogramSharedWgsl(cap), 'histogram', buffers, Math.min(SHARED_WORKGROUPS, Math.ceil(n / SHARED_CHUNK)));
  } else {
    work.dispatch('forest-histogram-global', FOREST_HISTOGRAM_GLOBAL_WGSL, 'histogram', buffers, workgroupsFor(n));
  }
  return chosen;
}

/** u32 words of one best-split record: [bestBin or NONE, left class weights at bestBin]. */
export function splitRecordWords(classes: number): number {
  return 1 + classes;
}

export type SplitCriterion = 'gini' | 'entropy';

export interface BestSplitsShape {
  slotBase: number;
  slotCount: number;
  maxF: number;
  nBins: number;
  classes: number;
  criterion: SplitCriterion;
  minSamplesLeaf: number;
}

/** Device buffers of the best-split kernel (hist and totals as the histogram left them). */
export interface BestSplitsArgs extends BestSplitsShape {
  hist: GPUBuffer;
  totals: GPUBuffer;
  nodeFeatures: GPUBuffer;
  binsPerFeature: GPUBuffer;
  /** slotCount × maxF records of splitRecordWords(classes) u32, record (s, k) at s × maxF + k. */
  out: GPUBuffer;
}

/** Records the best bin of each (slot, candidate) and the left class weights there into `out`. */
export function recordBestSplits(work: GpuWork, a: BestSplitsArgs): void {
  checkShape({ ...a, rows: 0, trees: 0 });
  const params = work.params([a.slotCount, a.maxF, a.nBins, a.classes, a.slotBase, a.criterion === 'gini' ? 0 : 1, a.minSamplesLeaf, 0]);
  work.dispatch('forest-best-splits', FOREST_BEST_SPLITS_WGSL, 'best_splits', [params, a.hist, a.totals, a.nodeFeatures, a.binsPerFeature, a.out], workgroupsFor(a.slotCount * a.maxF));
}

/** u32 words of one node record: [candidate k or NONE, bin, left class weights]. */
export function nodeRecordWords(classes: number): number {
  return 2 + classes;
}

/**
 * Records, per slot, the candidate whose best-split record (recordBestSplits' `out`) scores
 * highest in f32 (the first on ties) into `nodes`: slotCount records of nodeRecordWords(classes).
 */
export function recordBestOfNodes(work: GpuWork, a: BestSplitsArgs & { nodes: GPUBuffer }): void {
  const params = work.params([a.slotCount, a.maxF, a.nBins, a.classes, a.slotBase, a.criterion === 'gini' ? 0 : 1, a.minSamplesLeaf, 0]);
  work.dispatch('forest-best-splits', FOREST_BEST_SPLITS_WGSL, 'best_of_node', [params, null, a.totals, null, null, a.out, a.nodes], workgroupsFor(a.slotCount));
}

/** CPU twin of recordBestOfNodes, scoring in float64 (so only near-ties may choose another candidate than the kernel). */
export function bestOfNodesCpu(out: Uint32Array, totals: Uint32Array, slotCount: number, maxF: number, classes: number, criterion: SplitCriterion): Uint32Array {
  const width = splitRecordWords(classes), nodes = new Uint32Array(slotCount * nodeRecordWords(classes));
  for (let s = 0; s < slotCount; s++) {
    const total = totals.subarray(s * classes, (s + 1) * classes);
    let bestK = NONE, bestScore = -Infinity;
    for (let k = 0; k < maxF; k++) {
      const at = (s * maxF + k) * width;
      if (out[at] === NONE) continue;
      const score = splitScore(criterion, out.subarray(at + 1, at + 1 + classes), total, classes);
      if (bestK === NONE || score > bestScore) { bestK = k; bestScore = score; }
    }
    const to = s * nodeRecordWords(classes);
    nodes[to] = bestK;
    nodes[to + 1] = NONE;
    if (bestK !== NONE) nodes.set(out.subarray((s * maxF + bestK) * width, (s * maxF + bestK + 1) * width), to + 1);
  }
  return nodes;
}

/**
 * Records the row weights of a batch of trees (trees × rows words, bootstrap counts under each
 * tree's key as bootstrapCounts makes them, or all 1) and their root slots (tree t: slot t, rows
 * of weight 0: NONE). `weight` and `slot` hold trees × rows u32.
 */
export function recordRowWeights(work: GpuWork, a: { rows: number; keys: Uint32Array; bootstrap: boolean; weight: GPUBuffer; slot: GPUBuffer }): void {
  const trees = a.keys.length;
  if (trees * a.rows >= 2 ** 32) throw new Error(`forest kernels index trees × rows in u32: ${trees} × ${a.rows} is too many`);
  const params = work.params([a.rows, trees, a.bootstrap ? 1 : 0, 0]);
  const keys = work.input(a.keys, 'forest bootstrap keys');
  work.encoder.clearBuffer(a.weight, 0, trees * a.rows * 4);
  if (a.bootstrap) work.dispatch('forest-bootstrap', FOREST_BOOTSTRAP_WGSL, 'bootstrap', [params, keys, a.weight, null], workgroupsFor(trees * a.rows));
  work.dispatch('forest-bootstrap', FOREST_BOOTSTRAP_WGSL, 'init_slots', [params, null, a.weight, a.slot], workgroupsFor(trees * a.rows));
}

export interface RouteArgs {
  bins: GPUBuffer;
  rows: number;
  trees: number;
  /** trees × rows slots, rewritten in place. */
  slot: GPUBuffer;
  /** 4 u32 per slot of the level: [feature or NONE (leaf), bin, leftSlot, rightSlot]. */
  decisions: GPUBuffer;
}

/** Records the move of every row in a slot to its child's slot (bin ≤ decision bin: left), or to NONE at a leaf. */
export function recordRoute(work: GpuWork, a: RouteArgs): void {
  const params = work.params([a.rows, a.trees, rowsPadded(a.rows), 0]);
  work.dispatch('forest-route', FOREST_ROUTE_WGSL, 'route', [params, a.bins, a.slot, a.decisions], workgroupsFor(a.trees * a.rows));
}

// ---- CPU twins (host bins unpadded and column-major, as uploadForestBins takes them) ----

export interface HistogramCpuArgs extends HistogramShape {
  bins: Uint8Array;
  weight: Uint32Array;
  slot: Uint32Array;
  labels: Uint32Array;
  nodeFeatures: Uint32Array;
}

/** CPU twin of recordForestHistogram. */
export function forestHistogramCpu(a: HistogramCpuArgs): { hist: Uint32Array; totals: Uint32Array } {
  const hist = new Uint32Array(forestHistogramBytes(a.slotCount, a.maxF, a.nBins, a.classes) / 4);
  const totals = new Uint32Array(a.slotCount * a.classes);
  for (let t = 0; t < a.trees; t++) {
    for (let r = 0; r < a.rows; r++) {
      const i = t * a.rows + r, w = a.weight[i], sl = a.slot[i];
      if (w === 0 || sl === NONE || sl < a.slotBase || sl >= a.slotBase + a.slotCount) continue;
      const s = sl - a.slotBase, c = a.labels[r];
      totals[s * a.classes + c] += w;
      for (let k = 0; k < a.maxF; k++) {
        const f = a.nodeFeatures[sl * a.maxF + k];
        if (f !== NONE) hist[histIndex(a, s, k, a.bins[f * a.rows + r], c)] += w;
      }
    }
  }
  return { hist, totals };
}

/**
 * float64 score of a split with left class weights `left` out of `total` (gini: Σ L²/wl + Σ R²/wr;
 * entropy: Σ L log(L/wl) + Σ R log(R/wr); larger is better; a side of weight 0 scores 0).
 */
export function splitScore(criterion: SplitCriterion, left: ArrayLike<number>, total: ArrayLike<number>, classes: number): number {
  let wl = 0, wr = 0;
  for (let c = 0; c < classes; c++) { wl += left[c]; wr += total[c] - left[c]; }
  let sl = 0, sr = 0;
  for (let c = 0; c < classes; c++) {
    const l = left[c], r = total[c] - left[c];
    if (criterion === 'gini') { sl += l * l; sr += r * r; }
    else { if (l > 0) sl += l * Math.log(l / wl); if (r > 0) sr += r * Math.log(r / wr); }
  }
  if (criterion === 'gini') { sl = wl > 0 ? sl / wl : 0; sr = wr > 0 ? sr / wr : 0; }
  return sl + sr;
}

export interface BestSplitsCpuArgs extends BestSplitsShape {
  hist: Uint32Array;
  totals: Uint32Array;
  nodeFeatures: Uint32Array;
  binsPerFeature: Uint32Array;
}

/**
 * CPU twin of recordBestSplits, scoring in float64: the records, and per (slot, candidate) the
 * best score and the runner-up: the best score of an admissible bin with other left weights
 * (-Infinity if none), so a caller can tell clear winners from near-ties. (Bins after empty bins
 * repeat the left weights, hence the score, bit for bit in f32 too: the first of them wins in both.)
 */
export function bestSplitsCpu(a: BestSplitsCpuArgs): { out: Uint32Array; bestScore: Float64Array; runnerUp: Float64Array } {
  const width = splitRecordWords(a.classes), n = a.slotCount * a.maxF;
  const out = new Uint32Array(n * width), bestScore = new Float64Array(n).fill(-Infinity), runnerUp = new Float64Array(n).fill(-Infinity);
  const left = new Float64Array(a.classes);
  for (let t = 0; t < n; t++) {
    const s = Math.floor(t / a.maxF), k = t % a.maxF;
    const f = a.nodeFeatures[(a.slotBase + s) * a.maxF + k];
    const total = a.totals.subarray(s * a.classes, (s + 1) * a.classes);
    const w = total.reduce((x, y) => x + y, 0);
    let best = NONE, bestWl = 0, wl = 0;
    left.fill(0);
    const nb = f === NONE ? 0 : a.binsPerFeature[f];
    for (let b = 0; b + 1 < nb; b++) {
      for (let c = 0; c < a.classes; c++) { const v = a.hist[histIndex(a, s, k, b, c)]; left[c] += v; wl += v; }
      if (wl < a.minSamplesLeaf) continue;
      if (w - wl < a.minSamplesLeaf) break;
      const score = splitScore(a.criterion, left, total, a.classes);
      if (best === NONE || score > bestScore[t]) { runnerUp[t] = bestScore[t]; bestScore[t] = score; best = b; bestWl = wl; }
      else if (wl !== bestWl && score > runnerUp[t]) runnerUp[t] = score;
    }
    out[t * width] = best;
    if (best === NONE) continue;
    for (let b = 0; b <= best; b++) for (let c = 0; c < a.classes; c++) out[t * width + 1 + c] += a.hist[histIndex(a, s, k, b, c)];
  }
  return { out, bestScore, runnerUp };
}

/** CPU twin of recordRoute: the new slots (the input is left as it is). */
export function routeCpu(bins: Uint8Array, rows: number, trees: number, slot: Uint32Array, decisions: Uint32Array): Uint32Array {
  const next = new Uint32Array(trees * rows);
  for (let i = 0; i < trees * rows; i++) {
    const sl = slot[i];
    if (sl === NONE || decisions[4 * sl] === NONE) { next[i] = NONE; continue; }
    const f = decisions[4 * sl], r = i % rows;
    next[i] = bins[f * rows + r] <= decisions[4 * sl + 1] ? decisions[4 * sl + 2] : decisions[4 * sl + 3];
  }
  return next;
}

// ---- prediction ----

/**
 * Float64 values as u32 pairs (high word first) whose unsigned order is the values' order:
 * negative values have all bits flipped, others the sign bit set; -0 counts as +0 and every NaN as
 * the largest key (NaN <= t is false for any threshold t, so NaN goes right, as on the CPU).
 */
export function sortableKeys(x: Float64Array): Uint32Array {
  const out = new Uint32Array(x.length * 2);
  const one = new Float64Array(1), words = new Uint32Array(one.buffer);
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    if (v !== v) { out[2 * i] = 0xffffffff; out[2 * i + 1] = 0xffffffff; continue; }
    one[0] = v === 0 ? 0 : v;
    const lo = words[0], hi = words[1];
    if (hi & 0x80000000) { out[2 * i] = ~hi >>> 0; out[2 * i + 1] = ~lo >>> 0; } else { out[2 * i] = (hi | 0x80000000) >>> 0; out[2 * i + 1] = lo; }
  }
  return out;
}

/** A forest's nodes on the device, for recordForestLeaves. */
export interface DeviceForest { trees: number; treeOffsets: GPUBuffer; feature: GPUBuffer; thresholdKey: GPUBuffer; left: GPUBuffer; right: GPUBuffer }

/**
 * Records leaves[r × trees + t] = the leaf row r reaches in tree t (relative to the tree's first
 * node), for `rows` rows of `d` features given as sortableKeys (rows × d pairs, row-major).
 */
export function recordForestLeaves(work: GpuWork, forest: DeviceForest, xKey: GPUBuffer, rows: number, d: number, leaves: GPUBuffer): void {
  if (rows * forest.trees >= 2 ** 32) throw new Error(`forest traversal indexes rows × trees in u32: ${rows} × ${forest.trees} is too many`);
  const params = work.params([rows, d, forest.trees, 0]);
  work.dispatch('forest-predict', FOREST_PREDICT_WGSL, 'leaf_of',
    [params, forest.treeOffsets, forest.feature, forest.thresholdKey, forest.left, forest.right, xKey, leaves], workgroupsFor(rows * forest.trees));
}
