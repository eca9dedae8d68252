// Random-forest split finding on the GPU, recorded into a GpuWork (ml-matrix.ts): per level of
// the trees grown together, a histogram per (frontier slot, candidate feature), the best bin per
// candidate, and the routing of rows to their children's slots. WGSL: forest.wgsl.ts.
// Classification histograms count row weights per class; regression histograms hold per bin the
// weight and the exact sum of w·yq, the target quantised once per forest (quantiseTargets).
// Each recorder has a CPU twin on typed arrays (`...Cpu`): equal for histograms and routing; the
// best-split twin scores in float64, so only near-ties may pick another bin than the f32 kernel.

import type { GpuContext } from '../engine/gpu/device.js';
import { storageBuffer, workgroupsFor, type StagingRing } from '../engine/gpu/buffers.js';
import type { GpuWork } from './ml-matrix.js';
import { FOREST_BEST_SPLITS_WGSL, FOREST_BOOTSTRAP_WGSL, FOREST_PREDICT_WGSL, FOREST_HISTOGRAM_GLOBAL_WGSL, FOREST_ROUTE_WGSL, forestHistogramSharedWgsl, MAX_GPU_CLASSES, REGRESSION_CELL_WORDS } from './forest.wgsl.js';

export { MAX_GPU_CLASSES, REGRESSION_CELL_WORDS };

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
  /** Counters per histogram cell: the number of classes, or REGRESSION_CELL_WORDS when `regression`. */
  classes: number;
  /** Cells are [Σ w, Σ w·yq in 3 words] and labels hold quantiseTargets' yq (2 words per row). */
  regression?: boolean;
}

/** Index of the counter of (slot s - slotBase, candidate k, bin b, class or word c) in the histogram. */
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
  if (a.regression && a.classes !== REGRESSION_CELL_WORDS) throw new Error(`regression histograms have ${REGRESSION_CELL_WORDS} counters per cell, not ${a.classes}`);
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
 * for every (tree, row) of positive weight in slot slotBase + s (regression: the row's weight and
 * weight × yq to the cell's words, see HistogramShape). 'shared' accumulates each chunk
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
  const params = work.params([a.rows, a.trees, a.slotBase, a.slotCount, a.maxF, a.nBins, a.classes, rowsPadded(a.rows), histPerSlot, SHARED_CHUNK, a.regression ? 1 : 0, 0]);
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

/** u32 words of one best-split record: [bestBin or NONE, left cell at bestBin]. */
export function splitRecordWords(classes: number): number {
  return 1 + classes;
}

/** gini and entropy score class histograms, variance regression histograms. */
export type SplitCriterion = 'gini' | 'entropy' | 'variance';

/** The kernels' code of a criterion. */
const CRITERION_CODE: Record<SplitCriterion, number> = { gini: 0, entropy: 1, variance: 2 };

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

function bestSplitsParams(work: GpuWork, a: BestSplitsShape): GPUBuffer {
  checkShape({ ...a, rows: 0, trees: 0, regression: a.criterion === 'variance' });
  return work.params([a.slotCount, a.maxF, a.nBins, a.classes, a.slotBase, CRITERION_CODE[a.criterion], a.minSamplesLeaf, 0]);
}

/** Records the best bin of each (slot, candidate) and the left cell there into `out`. */
export function recordBestSplits(work: GpuWork, a: BestSplitsArgs): void {
  const params = bestSplitsParams(work, a);
  work.dispatch('forest-best-splits', FOREST_BEST_SPLITS_WGSL, 'best_splits', [params, a.hist, a.totals, a.nodeFeatures, a.binsPerFeature, a.out], workgroupsFor(a.slotCount * a.maxF));
}

/** u32 words of one node record: [candidate k or NONE, bin, left cell]. */
export function nodeRecordWords(classes: number): number {
  return 2 + classes;
}

/**
 * Records, per slot, the candidate whose best-split record (recordBestSplits' `out`) scores
 * highest in f32 (the first on ties) into `nodes`: slotCount records of nodeRecordWords(classes).
 */
export function recordBestOfNodes(work: GpuWork, a: BestSplitsArgs & { nodes: GPUBuffer }): void {
  const params = bestSplitsParams(work, a);
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
      const s = sl - a.slotBase;
      const add = (cells: Uint32Array, at: number) => {
        if (!a.regression) { cells[at + a.labels[r]] += w; return; }
        cells[at] += w;
        setWide(cells, at, wideOf(cells, at) + BigInt(w) * wideTarget(a.labels, r));
      };
      add(totals, s * a.classes);
      for (let k = 0; k < a.maxF; k++) {
        const f = a.nodeFeatures[sl * a.maxF + k];
        if (f !== NONE) add(hist, histIndex(a, s, k, a.bins[f * a.rows + r], 0));
      }
    }
  }
  return { hist, totals };
}

/**
 * float64 score of a split with left cell `left` out of `total` (gini: Σ L²/wl + Σ R²/wr; entropy:
 * Σ L log(L/wl) + Σ R log(R/wr); a side of weight 0 scores 0; variance: wl·wr/w · (meanL −
 * meanR)² of the quantised sums; larger is better).
 */
export function splitScore(criterion: SplitCriterion, left: ArrayLike<number>, total: ArrayLike<number>, classes: number): number {
  if (criterion === 'variance') {
    const wl = left[0], wr = total[0] - left[0];
    if (wl === 0 || wr === 0) return 0;
    const d = Number(wideOf(left, 0)) / wl - Number(wideOf(total, 0) - wideOf(left, 0)) / wr;
    return ((wl * wr) / (wl + wr)) * d * d;
  }
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
 * repeat the left cell, hence the score, bit for bit in f32 too: the first of them wins in both.)
 */
export function bestSplitsCpu(a: BestSplitsCpuArgs): { out: Uint32Array; bestScore: Float64Array; runnerUp: Float64Array } {
  const width = splitRecordWords(a.classes), n = a.slotCount * a.maxF, variance = a.criterion === 'variance';
  const out = new Uint32Array(n * width), bestScore = new Float64Array(n).fill(-Infinity), runnerUp = new Float64Array(n).fill(-Infinity);
  const weightOf = (cell: Uint32Array) => (variance ? cell[0] : cell.reduce((x, y) => x + y, 0));
  const left = new Uint32Array(a.classes);
  for (let t = 0; t < n; t++) {
    const s = Math.floor(t / a.maxF), k = t % a.maxF;
    const f = a.nodeFeatures[(a.slotBase + s) * a.maxF + k];
    const total = a.totals.subarray(s * a.classes, (s + 1) * a.classes);
    const w = weightOf(total);
    let best = NONE, bestWl = 0;
    left.fill(0);
    const nb = f === NONE ? 0 : a.binsPerFeature[f];
    for (let b = 0; b + 1 < nb; b++) {
      addCell(a.criterion, left, a.hist, histIndex(a, s, k, b, 0));
      const wl = weightOf(left);
      if (wl < a.minSamplesLeaf) continue;
      if (w - wl < a.minSamplesLeaf) break;
      const score = splitScore(a.criterion, left, total, a.classes);
      if (best === NONE || score > bestScore[t]) {
        runnerUp[t] = bestScore[t]; bestScore[t] = score; best = b; bestWl = wl;
        out.set(left, t * width + 1);
      } else if (wl !== bestWl && score > runnerUp[t]) runnerUp[t] = score;
    }
    out[t * width] = best;
  }
  return { out, bestScore, runnerUp };
}

/** Adds the cell at hist[at] to `cell`: class by class (u32, as on the device), or count and 96-bit sum. */
function addCell(criterion: SplitCriterion, cell: Uint32Array, hist: Uint32Array, at: number): void {
  if (criterion !== 'variance') { for (let c = 0; c < cell.length; c++) cell[c] += hist[at + c]; return; }
  cell[0] += hist[at];
  setWide(cell, 0, wideOf(cell, 0) + wideOf(hist, at));
}

// ---- regression targets ----

/**
 * A regression target as the histograms take it: yq = round((y − offset) × 2^shift), below 2^64,
 * as 2 u32 words per row (low first). Every tree's weights sum to its rows (< 2^32: one bootstrap
 * draw per row, or weight 1 each), so a tree's Σ w·yq is below 2^96: 3 words never overflow.
 */
export interface QuantisedTargets { words: Uint32Array; offset: number; shift: number }

/**
 * Quantises y with offset min(y) and the largest power-of-two scale that keeps yq below 2^64: a
 * row's error is at most 2^-65 of y's range, and dequantising (a power of two) adds none.
 */
export function quantiseTargets(y: Float64Array): QuantisedTargets {
  let lo = Infinity, hi = -Infinity;
  for (const v of y) { if (v < lo) lo = v; if (v > hi) hi = v; }
  const range = hi - lo;
  if (!Number.isFinite(range)) throw new Error(`forest kernels take finite regression targets, not a range of ${range}`);
  // Clamped so that 2^shift stays a normal float64 (ranges beyond 2^±1000 lose the far bits).
  let shift = range > 0 ? Math.max(-1000, Math.min(1000, 63 - Math.floor(Math.log2(range)))) : 0;
  while (range * 2 ** shift >= 2 ** 64) shift--;
  while (shift < 1000 && range * 2 ** (shift + 1) < 2 ** 64) shift++;
  const words = new Uint32Array(2 * y.length), scale = 2 ** shift;
  for (let r = 0; r < y.length; r++) {
    const v = Math.round((y[r] - lo) * scale), high = Math.floor(v / 2 ** 32);
    words[2 * r] = v - high * 2 ** 32;
    words[2 * r + 1] = high;
  }
  return { words, offset: lo, shift };
}

/** Σ w·y of a regression cell (count at cells[at], Σ w·yq after it): one rounding of the exact sum, then the offset. */
export function dequantisedSum(cells: ArrayLike<number>, at: number, q: QuantisedTargets): number {
  return cells[at] * q.offset + Number(wideOf(cells, at)) * 2 ** -q.shift;
}

/** The 96-bit sum of a regression cell (words at + 1 .. at + 3, low first). */
function wideOf(cells: ArrayLike<number>, at: number): bigint {
  return BigInt(cells[at + 1]) | (BigInt(cells[at + 2]) << 32n) | (BigInt(cells[at + 3]) << 64n);
}

function setWide(cells: Uint32Array, at: number, v: bigint): void {
  for (let j = 1; j <= 3; j++) { cells[at + j] = Number(v & 0xffffffffn); v >>= 32n; }
}

/** Row r's yq from quantiseTargets' words. */
function wideTarget(words: Uint32Array, r: number): bigint {
  return BigInt(words[2 * r]) | (BigInt(words[2 * r + 1]) << 32n);
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
