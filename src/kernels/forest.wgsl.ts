// WGSL of random-forest split finding, level by level over many trees (forest.ts records them).
// Rows are indexed i = t × rows + r for tree t and data row r; weight[i] is the bootstrap count
// and slot[i] the frontier slot of the node holding the row (NONE: in no active node).
//   histogram:   per (slot, candidate feature, bin) a cell of counters, and per slot a cell of
//                totals, with u32 atomics (exact and deterministic); 'global' adds straight to
//                device memory, 'shared' per chunk of rows into workgroup memory first (few, very
//                hot counters). Classification: a cell is the row weight per class. Regression: a
//                cell is [Σ w, Σ w·yq as 96 bits in 3 words] with yq the row's target quantised to
//                64 bits (forest.ts, quantiseTargets); wrap-arounds carry into the next word, so
//                the sums are exact whatever the order of the adds
//   best_splits: one thread per (slot, candidate): the first bin with the largest f32 score, and
//                the exact left cell there
//   best_of_node: one thread per slot: its best candidate by that score, the one record the host reads
//   route:       each row moves to the next-level slot of its child (or to NONE)
// Bins are bytes packed 4 per u32 word, feature f's column padded to rowsPadded (a multiple of 4).

import { memoWgsl, WGSL_GRID, WGSL_MIX32, WGSL_ROW_HASH } from './wgsl-common.js';

/** Most classes the kernels take: a thread keeps one class-weight vector in registers. */
export const MAX_GPU_CLASSES = 32;

/** Counters per cell of a regression histogram: [Σ w, Σ w·yq in words 0, 1, 2 (least significant first)]. */
export const REGRESSION_CELL_WORDS = 4;

/** Shared with every module: "no feature", "no slot", "no bin". */
const WGSL_NONE = /* wgsl */ `const NONE: u32 = 0xffffffffu;`;

/** Bin of feature f for row r; the module binds `bins` and has p.rowsPadded. */
const WGSL_BIN_OF = /* wgsl */ `
fn binOf(f: u32, r: u32) -> u32 {
  let at = f * p.rowsPadded + r;
  return (bins[at >> 2u] >> ((at & 3u) * 8u)) & 0xffu;
}
`;

/** High word of the 64-bit product a × b. */
const WGSL_MUL_HI = /* wgsl */ `
fn mulHi(a: u32, b: u32) -> u32 {
  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p01 = a0 * b1; let p10 = a1 * b0;
  let mid = ((a0 * b0) >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}
`;

const HISTOGRAM_HEADER = /* wgsl */ `
${WGSL_GRID}
${WGSL_NONE}
${WGSL_MUL_HI}
// classes: counters per cell (REGRESSION_CELL_WORDS when regression is 1; labels then hold yq as 2 words per row, low first).
struct Params { rows: u32, trees: u32, slotBase: u32, slotCount: u32, maxF: u32, nBins: u32, classes: u32, rowsPadded: u32, histPerSlot: u32, chunk: u32, regression: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> bins: array<u32>;
@group(0) @binding(2) var<storage, read> weight: array<u32>;
@group(0) @binding(3) var<storage, read> slot: array<u32>;
@group(0) @binding(4) var<storage, read> labels: array<u32>;
@group(0) @binding(5) var<storage, read> nodeFeatures: array<u32>;
@group(0) @binding(6) var<storage, read_write> hist: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> totals: array<atomic<u32>>;
${WGSL_BIN_OF}
/** The slot (relative to slotBase) that row i counts in, or NONE (out of bag, in no slot or outside the range). */
fn countedSlot(i: u32) -> u32 {
  let sl = slot[i];
  // sl - slotBase wraps around for sl < slotBase, so one comparison checks both ends.
  if (weight[i] == 0u || sl == NONE || sl - p.slotBase >= p.slotCount) { return NONE; }
  return sl - p.slotBase;
}

/** Counter q of slot s in device memory: q < histPerSlot is (k × nBins + bin) × classes + class, then the totals cell. Returns the old value. */
fn addGlobal(s: u32, q: u32, w: u32) -> u32 {
  if (q < p.histPerSlot) { return atomicAdd(&hist[s * p.histPerSlot + q], w); }
  return atomicAdd(&totals[s * p.classes + q - p.histPerSlot], w);
}

/**
 * Adds x to counter q and carries each wrap-around into the counters above it, \`words\` counters
 * at most: every wrap is carried exactly once, so a multi-word sum is exact in any order of adds.
 */
fn addCarried(s: u32, q: u32, x: u32, words: u32, lo: u32, inLocal: bool) {
  var v = x;
  for (var j = 0u; j < words && v != 0u; j++) {
    let old = add(s, q + j, v, lo, inLocal);
    v = select(0u, 1u, old + v < old);
  }
}

/** Adds one row of weight w to the cell starting at counter q: its class's weight, or (w, w·yq). */
fn addToCell(s: u32, q: u32, w: u32, c: u32, wy: vec3u, lo: u32, inLocal: bool) {
  if (p.regression == 0u) { add(s, q + c, w, lo, inLocal); return; }
  add(s, q, w, lo, inLocal);
  addCarried(s, q + 1u, wy.x, 3u, lo, inLocal);
  addCarried(s, q + 2u, wy.y, 2u, lo, inLocal);
  addCarried(s, q + 3u, wy.z, 1u, lo, inLocal);
}

/** w × yq of row r as 96 bits (3 words, low first); yq is 64 bits and w < 2^32, so it cannot overflow. */
fn weightedTarget(w: u32, r: u32) -> vec3u {
  let y0 = labels[2u * r];
  let y1 = labels[2u * r + 1u];
  let mid = mulHi(w, y0) + w * y1;
  let carry = select(0u, 1u, mid < w * y1);
  return vec3u(w * y0, mid, mulHi(w, y1) + carry);
}

/** Adds row i (counted in slot s) to its totals and to the bin of each candidate feature. */
fn countRow(i: u32, s: u32, lo: u32, inLocal: bool) {
  let w = weight[i];
  let r = i % p.rows;
  var c = 0u;
  var wy = vec3u(0u);
  if (p.regression == 0u) { c = labels[r]; } else { wy = weightedTarget(w, r); }
  addToCell(s, p.histPerSlot, w, c, wy, lo, inLocal);
  for (var k = 0u; k < p.maxF; k++) {
    let f = nodeFeatures[(p.slotBase + s) * p.maxF + k];
    if (f == NONE) { continue; }
    addToCell(s, (k * p.nBins + binOf(f, r)) * p.classes, w, c, wy, lo, inLocal);
  }
}
`;

/** Histogram with atomics straight to device memory (many slots: counters spread out). */
export const FOREST_HISTOGRAM_GLOBAL_WGSL = /* wgsl */ `${HISTOGRAM_HEADER}
fn add(s: u32, q: u32, w: u32, lo: u32, inLocal: bool) -> u32 { return addGlobal(s, q, w); }

@compute @workgroup_size(256)
fn histogram(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = p.trees * p.rows;
  for (var i = gid.x; i < n; i += gridStride(nwg)) {
    let s = countedSlot(i);
    if (s != NONE) { countRow(i, s, 0u, false); }
  }
}
`;

/**
 * Histogram through workgroup memory (few slots: hot counters). Each workgroup takes chunks of
 * p.chunk consecutive (tree, row) indices; a chunk's rows lie in a window of slots [lo, hi] (few
 * when slots are numbered tree by tree, as a chunk spans one or two trees). When the window's
 * counters fit in `counters` u32, the chunk accumulates there and then adds each non-zero counter
 * to device memory once; otherwise that chunk adds straight to device memory.
 */
function buildForestHistogramSharedWgsl(counters: number): string {
  return /* wgsl */ `${HISTOGRAM_HEADER}
const CAP: u32 = ${counters}u;
const REGRESSION_CELL_WORDS: u32 = ${REGRESSION_CELL_WORDS}u;
var<workgroup> local: array<atomic<u32>, CAP>;
var<workgroup> winLo: atomic<u32>;
var<workgroup> winHi: atomic<u32>;
var<workgroup> window: vec2u;

fn add(s: u32, q: u32, w: u32, lo: u32, inLocal: bool) -> u32 {
  if (inLocal) { return atomicAdd(&local[(s - lo) * (p.histPerSlot + p.classes) + q], w); }
  return addGlobal(s, q, w);
}

@compute @workgroup_size(256)
fn histogram(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = p.trees * p.rows;
  let perSlot = p.histPerSlot + p.classes;
  for (var base = wid.x * p.chunk; base < n; base += nwg.x * p.chunk) {
    let end = min(n, base + p.chunk);
    if (lid.x == 0u) { atomicStore(&winLo, NONE); atomicStore(&winHi, 0u); }
    workgroupBarrier();
    for (var i = base + lid.x; i < end; i += WG) {
      let s = countedSlot(i);
      if (s != NONE) { atomicMin(&winLo, s); atomicMax(&winHi, s); }
    }
    workgroupBarrier();
    if (lid.x == 0u) { window = vec2u(atomicLoad(&winLo), atomicLoad(&winHi)); }
    let win = workgroupUniformLoad(&window);
    if (win.x == NONE) { continue; } // no row of the chunk counts
    let used = (win.y - win.x + 1u) * perSlot;
    let inLocal = used <= CAP;
    if (inLocal) { for (var j = lid.x; j < used; j += WG) { atomicStore(&local[j], 0u); } }
    workgroupBarrier();
    for (var i = base + lid.x; i < end; i += WG) {
      let s = countedSlot(i);
      if (s != NONE) { countRow(i, s, win.x, inLocal); }
    }
    workgroupBarrier();
    // Only counters some row touched go to device memory: one atomicAdd per non-zero counter
    // (a regression sum's lower words carry into the words above them).
    if (inLocal) {
      for (var j = lid.x; j < used; j += WG) {
        let v = atomicLoad(&local[j]);
        let q = j % perSlot;
        let word = q % p.classes;
        let above = select(1u, REGRESSION_CELL_WORDS - word, p.regression != 0u && word != 0u);
        if (v != 0u) { addCarried(win.x + j / perSlot, q, v, above, 0u, false); }
      }
    }
  }
}
`;
}
export const forestHistogramSharedWgsl = memoWgsl(buildForestHistogramSharedWgsl);

/**
 * Best bin per (slot, candidate). Scores are f32 (gini: Σ L²/wl + Σ R²/wr; entropy: Σ L log(L/wl)
 * + Σ R log(R/wr); a side of weight 0 scores 0; variance: wl·wr/w · (meanL − meanR)², which is
 * sumL²/wl + sumR²/wr − sum²/w, the squared error a split removes, without its cancellation).
 * Record: [bestBin or NONE, left cell].
 */
export const FOREST_BEST_SPLITS_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_NONE}
const MAX_CLASSES: u32 = ${MAX_GPU_CLASSES}u;
const GINI: u32 = 0u;
const VARIANCE: u32 = 2u;
struct Params { slotCount: u32, maxF: u32, nBins: u32, classes: u32, slotBase: u32, criterion: u32, minLeaf: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> hist: array<u32>;
@group(0) @binding(2) var<storage, read> totals: array<u32>;
@group(0) @binding(3) var<storage, read> nodeFeatures: array<u32>;
@group(0) @binding(4) var<storage, read> binsPerFeature: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<u32>;
@group(0) @binding(6) var<storage, read_write> nodeOut: array<u32>;

alias Cell = array<u32, MAX_CLASSES>;

/** Adds cell b to cell a: class by class, or for variance the count and the 96-bit sum with carries. */
fn addCell(a: ptr<function, Cell>, b: ptr<function, Cell>) {
  if (p.criterion != VARIANCE) {
    for (var c = 0u; c < p.classes; c++) { (*a)[c] += (*b)[c]; }
    return;
  }
  (*a)[0] += (*b)[0];
  var carry = 0u;
  for (var j = 1u; j < 4u; j++) {
    let x = (*a)[j] + (*b)[j];
    let y = x + carry;
    carry = select(0u, 1u, x < (*a)[j]) + select(0u, 1u, y < x);
    (*a)[j] = y;
  }
}

/** Variance cell a − b: the count, and the 96-bit sum with borrows (a holds b: it is a node's totals, b one side). */
fn difference(a: ptr<function, Cell>, b: ptr<function, Cell>) -> Cell {
  var r: Cell;
  r[0] = (*a)[0] - (*b)[0];
  var borrow = 0u;
  for (var j = 1u; j < 4u; j++) {
    let x = (*a)[j] - (*b)[j];
    r[j] = x - borrow;
    borrow = select(0u, 1u, (*a)[j] < (*b)[j]) + select(0u, 1u, x < borrow);
  }
  return r;
}

/** The weight of a cell: its class weights summed, or its count. */
fn weightOf(a: ptr<function, Cell>) -> u32 {
  if (p.criterion == VARIANCE) { return (*a)[0]; }
  var w = 0u;
  for (var c = 0u; c < p.classes; c++) { w += (*a)[c]; }
  return w;
}

/** Mean of a variance cell's quantised target, over 2^32 (in f32 range: sums are below 2^96). */
fn meanOf(a: ptr<function, Cell>) -> f32 {
  let sum = f32((*a)[3]) * 4294967296.0 + f32((*a)[2]) + f32((*a)[1]) * (1.0 / 4294967296.0);
  return sum / f32((*a)[0]);
}

fn entropyTerm(v: u32, w: f32) -> f32 {
  if (v == 0u) { return 0.0; }
  let x = f32(v);
  return x * log(x / w);
}

fn score(left: ptr<function, Cell>, total: ptr<function, Cell>, wl: u32, wr: u32) -> f32 {
  let fl = f32(wl);
  let fr = f32(wr);
  if (p.criterion == VARIANCE) {
    if (wl == 0u || wr == 0u) { return 0.0; }
    var right = difference(total, left);
    let d = meanOf(left) - meanOf(&right);
    return fl * fr / f32(wl + wr) * (d * d);
  }
  var sl = 0.0;
  var sr = 0.0;
  for (var c = 0u; c < p.classes; c++) {
    let l = (*left)[c];
    let r = (*total)[c] - l;
    if (p.criterion == GINI) {
      sl += f32(l) * f32(l);
      sr += f32(r) * f32(r);
    } else {
      sl += entropyTerm(l, fl);
      sr += entropyTerm(r, fr);
    }
  }
  if (p.criterion == GINI) {
    sl = select(sl / fl, 0.0, wl == 0u);
    sr = select(sr / fr, 0.0, wr == 0u);
  }
  return sl + sr;
}

@compute @workgroup_size(256)
fn best_splits(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let width = 1u + p.classes;
  for (var t = gid.x; t < p.slotCount * p.maxF; t += gridStride(nwg)) {
    let s = t / p.maxF;
    let k = t % p.maxF;
    let f = nodeFeatures[(p.slotBase + s) * p.maxF + k];
    let base = t * p.nBins * p.classes;
    var total: Cell;
    var left: Cell;
    var cell: Cell;
    for (var c = 0u; c < p.classes; c++) {
      total[c] = totals[s * p.classes + c];
      left[c] = 0u;
    }
    let w = weightOf(&total);
    var bestBin = NONE;
    if (f != NONE && binsPerFeature[f] >= 2u) {
      var bestScore = 0.0;
      for (var b = 0u; b + 1u < binsPerFeature[f]; b++) {
        for (var c = 0u; c < p.classes; c++) { cell[c] = hist[base + b * p.classes + c]; }
        addCell(&left, &cell);
        let wl = weightOf(&left);
        let wr = w - wl;
        if (wl < p.minLeaf) { continue; }
        if (wr < p.minLeaf) { break; }
        let sc = score(&left, &total, wl, wr);
        if (bestBin == NONE || sc > bestScore) { bestBin = b; bestScore = sc; }
      }
    }
    // The left cell at the best bin, summed again (cheaper than copying it at each improvement).
    for (var c = 0u; c < p.classes; c++) { left[c] = 0u; }
    if (bestBin != NONE) {
      for (var b = 0u; b <= bestBin; b++) {
        for (var c = 0u; c < p.classes; c++) { cell[c] = hist[base + b * p.classes + c]; }
        addCell(&left, &cell);
      }
    }
    out[t * width] = bestBin;
    for (var c = 0u; c < p.classes; c++) { out[t * width + 1u + c] = left[c]; }
  }
}

// One thread per slot: the candidate whose best bin scores highest (f32, the first on ties), as
// [candidate k or NONE, its bin, left cell] in 2 + classes words.
@compute @workgroup_size(256)
fn best_of_node(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let width = 1u + p.classes;
  for (var s = gid.x; s < p.slotCount; s += gridStride(nwg)) {
    var total: Cell;
    var left: Cell;
    for (var c = 0u; c < p.classes; c++) { total[c] = totals[s * p.classes + c]; }
    let w = weightOf(&total);
    var bestK = NONE;
    var bestScore = 0.0;
    for (var k = 0u; k < p.maxF; k++) {
      let at = (s * p.maxF + k) * width;
      if (out[at] == NONE) { continue; }
      for (var c = 0u; c < p.classes; c++) { left[c] = out[at + 1u + c]; }
      let wl = weightOf(&left);
      let sc = score(&left, &total, wl, w - wl);
      if (bestK == NONE || sc > bestScore) { bestK = k; bestScore = sc; }
    }
    let to = s * (width + 1u);
    nodeOut[to] = bestK;
    if (bestK == NONE) {
      nodeOut[to + 1u] = NONE;
      for (var c = 0u; c < p.classes; c++) { nodeOut[to + 2u + c] = 0u; }
    } else {
      let at = (s * p.maxF + bestK) * width;
      for (var c = 0u; c < width; c++) { nodeOut[to + 1u + c] = out[at + c]; }
    }
  }
}
`;

/** Moves each row to its child's slot: decisions[4 × slot] = [feature or NONE (leaf), bin, leftSlot, rightSlot]. */
export const FOREST_ROUTE_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_NONE}
struct Params { rows: u32, trees: u32, rowsPadded: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> bins: array<u32>;
@group(0) @binding(2) var<storage, read_write> slot: array<u32>;
@group(0) @binding(3) var<storage, read> decisions: array<u32>;
${WGSL_BIN_OF}
@compute @workgroup_size(256)
fn route(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = p.trees * p.rows;
  for (var i = gid.x; i < n; i += gridStride(nwg)) {
    let sl = slot[i];
    if (sl == NONE) { continue; }
    let f = decisions[4u * sl];
    if (f == NONE) { slot[i] = NONE; continue; }
    let goLeft = binOf(f, i % p.rows) <= decisions[4u * sl + 1u];
    slot[i] = select(decisions[4u * sl + 3u], decisions[4u * sl + 2u], goLeft);
  }
}
`;

/**
 * Row weights and root slots of a batch of trees. bootstrap: draw d of tree t adds 1 to row
 * mulHi(hash(key[t], d), rows), as bootstrapCounts in random.ts (same hash, exact integer
 * arithmetic); init_slots: every row of positive weight starts in its tree's root, slot t.
 */
export const FOREST_BOOTSTRAP_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_NONE}
struct Params { rows: u32, trees: u32, bootstrap: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> weight: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> slot: array<u32>;

${WGSL_MIX32}
${WGSL_ROW_HASH}
${WGSL_MUL_HI}
@compute @workgroup_size(256)
fn bootstrap(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.trees * p.rows; i += gridStride(nwg)) {
    let t = i / p.rows;
    let d = i % p.rows;
    let h = rowHash32(keys[t], d);
    atomicAdd(&weight[t * p.rows + mulHi(h, p.rows)], 1u);
  }
}

@compute @workgroup_size(256)
fn init_slots(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.trees * p.rows; i += gridStride(nwg)) {
    if (p.bootstrap == 0u) { atomicStore(&weight[i], 1u); }
    slot[i] = select(NONE, i / p.rows, atomicLoad(&weight[i]) > 0u);
  }
}
`;

/**
 * Tree traversal for prediction: one thread per (row, tree) walks from the root to a leaf and
 * writes the leaf's node number (relative to the tree). Feature values and thresholds come as
 * order-preserving u32 pairs (sortableKeys in forest.ts), so "x <= threshold" is decided exactly
 * as float64 would decide it.
 */
export const FOREST_PREDICT_WGSL = /* wgsl */ `
${WGSL_GRID}
struct Params { rows: u32, d: u32, trees: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> treeOffsets: array<u32>;
@group(0) @binding(2) var<storage, read> feature: array<i32>;
@group(0) @binding(3) var<storage, read> thresholdKey: array<u32>;
@group(0) @binding(4) var<storage, read> left: array<i32>;
@group(0) @binding(5) var<storage, read> right: array<i32>;
@group(0) @binding(6) var<storage, read> xKey: array<u32>;
@group(0) @binding(7) var<storage, read_write> leaves: array<u32>;

@compute @workgroup_size(256)
fn leaf_of(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.rows * p.trees; i += gridStride(nwg)) {
    let r = i / p.trees;
    let base = treeOffsets[i % p.trees];
    var node = 0u;
    loop {
      let g = base + node;
      let f = feature[g];
      if (f < 0) { break; }
      let xi = 2u * (r * p.d + u32(f));
      let xh = xKey[xi];
      let th = thresholdKey[2u * g];
      let goLeft = xh < th || (xh == th && xKey[xi + 1u] <= thresholdKey[2u * g + 1u]);
      node = u32(select(right[g], left[g], goLeft));
    }
    leaves[i] = node;
  }
}
`;
