// WGSL of linear regression on a device matrix (ml-matrix.wgsl.ts layout), in double-float:
//   gram:     for each entry (i, j) of a list, per block of GRAM_BLOCK_ROWS rows, Σ (x_i - s_i)(x_j - s_j);
//             column ONE stands for the constant 1, so (c, ONE) gives Σ (x_c - s_c) (column moments);
//             values staged per sub-tile in workgroup memory; two variants (GramVariant):
//               'entry-per-thread' (LINREG_GRAM_WGSL, the default): one thread per entry, all the block's rows
//               'row-ranges' (LINREG_GRAM_ROW_RANGES_WGSL): one thread per (entry, range of the block's
//               rows), so that small entry counts fill the workgroup; values staged pre-split
//   residual: (y - b - Σ w_j x_j)² per row (f32), summed afterwards by the block-sum kernels

import { WGSL_GRID } from './wgsl-common.js';
import { WGSL_DOUBLE_FLOAT } from './ml-matrix.wgsl.js';

/** The column index that stands for the constant 1 in a gram entry. */
export const ONE_COLUMN = 0xffffffff;

/** Rows of one block of the Gram sums (a fixed number: the sums do not depend on the device). */
export const GRAM_BLOCK_ROWS = 1024;
/** Centred double-float values of a sub-tile of rows staged in workgroup memory (16 KiB). */
const GRAM_TILE = 2048;
/** Device columns the default Gram kernel takes (one row of them and the constant 1 fit the tile); more run on the CPU. */
export const MAX_GRAM_COLUMNS = GRAM_TILE - 1;

/** The two Gram kernels: the same sums, in a different order within a block (see each kernel). */
export type GramVariant = 'entry-per-thread' | 'row-ranges';

/**
 * Pre-split values of the row-ranges kernel staged in workgroup memory: 896 vec4s (14 KiB) and
 * 256 range sums (2 KiB) make the 16 KiB every WebGPU device offers (maxComputeWorkgroupStorageSize).
 */
export const ROW_RANGES_TILE = 896;
/** Device columns the row-ranges Gram kernel takes: one row of them and the constant 1 fit its tile. */
export const MAX_GRAM_COLUMNS_ROW_RANGES = ROW_RANGES_TILE - 1;

/** Device columns (features and target) the Gram kernel of `variant` takes. */
export function maxGramColumns(variant: GramVariant): number {
  return variant === 'row-ranges' ? MAX_GRAM_COLUMNS_ROW_RANGES : MAX_GRAM_COLUMNS;
}

/**
 * Work item w = (block b, pass h), w = h × blocks + b: the block is walked in sub-tiles of T rows
 * whose centred values (x - shift, double-float, and a constant-1 column last) are staged
 * row-major in workgroup memory, each computed once; thread e of the pass sums entry
 * h × 256 + e over the block's rows in row order. partial[b × entries + e] (block-major).
 */
export const LINREG_GRAM_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
struct Params { rows: u32, entries: u32, blocks: u32, columns: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xr: array<f32>;
@group(0) @binding(2) var<storage, read> xl: array<f32>;
@group(0) @binding(3) var<storage, read> shift: array<vec2f>;
@group(0) @binding(4) var<storage, read> pairs: array<vec2u>;
@group(0) @binding(5) var<storage, read_write> partials: array<vec2f>;
const GRAM_ROWS: u32 = ${GRAM_BLOCK_ROWS}u;
var<workgroup> tile: array<vec2f, ${GRAM_TILE}u>;

@compute @workgroup_size(256)
fn gram(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let stride = p.columns + 1u; // the constant-1 column last
  let t = min(WG, ${GRAM_TILE}u / stride);
  let passes = (p.entries + WG - 1u) / WG;
  for (var w = wid.x; w < p.blocks * passes; w += nwg.x) {
    let b = w % p.blocks;
    let e = (w / p.blocks) * WG + lid.x;
    let live = e < p.entries;
    var pr = vec2u(0u);
    if (live) { pr = pairs[e]; }
    let a = select(pr.x, p.columns, pr.x == ${ONE_COLUMN}u);
    let c = select(pr.y, p.columns, pr.y == ${ONE_COLUMN}u);
    let r0 = b * GRAM_ROWS;
    let r1 = min(p.rows, r0 + GRAM_ROWS);
    var acc = vec2f(0.0);
    for (var s0 = r0; s0 < r1; s0 += t) {
      let n = min(t, r1 - s0);
      workgroupBarrier(); // the previous sub-tile is no longer read
      for (var i = lid.x; i < n * stride; i += WG) {
        let col = i / n;
        let row = i % n;
        var v = vec2f(1.0, 0.0);
        if (col < p.columns) {
          let at = col * p.rows + s0 + row;
          v = dfSub(vec2f(xr[at], xl[at]), shift[col]);
        }
        tile[row * stride + col] = v;
      }
      workgroupBarrier();
      if (live) {
        for (var row = 0u; row < n; row++) { acc = dfMulAdd(acc, tile[row * stride + a], tile[row * stride + c]); }
      }
    }
    if (live) { partials[b * p.entries + e] = acc; }
  }
}
`;

/**
 * dfMulAdd (ml-matrix.wgsl.ts) for operands split once, when staged, instead of at every use:
 * preSplit(v) = (hi, lo, hi1, hi2) with hi1 = split12(hi) and hi2 = hi - hi1 (exact), the values
 * dfMulAdd computes from hi; dfMulAddPreSplit then does the same f32 operations in the same order
 * as dfMulAdd, so its results are the same bits (checked in test/kernel-linreg.test.ts).
 */
export const WGSL_PRE_SPLIT = /* wgsl */ `
fn preSplit(v: vec2f) -> vec4f {
  let hi1 = split12(v.x);
  return vec4f(v.x, v.y, hi1, v.x - hi1);
}
fn dfMulAddPreSplit(acc: vec2f, a: vec4f, b: vec4f) -> vec2f {
  let p = opaque(a.x * b.x);
  let e = opaque(opaque(opaque(a.z * b.z - p) + a.z * b.w) + a.w * b.z) + a.w * b.w;
  return dfAdd(acc, vec2f(p, e + (a.x * b.y + a.y * b.x)));
}
`;

/**
 * The row-ranges variant of the Gram kernel: every thread busy when the entries are fewer than
 * the workgroup's 256 threads (16 features and y: 152 entries, 152 threads of the other variant).
 * Each block's rows are cut into p.ranges contiguous ranges of p.rangeRows rows (range k: rows
 * k × rangeRows … of the block; the last ones of a short block may be short or empty). A workgroup
 * takes a group of p.entriesPerGroup entries (work item w = b × groups + g: the groups of a block
 * are neighbours, so they read its rows while they are in cache) and thread
 * k × entriesPerGroup + i sums entry g × entriesPerGroup + i over range k, in row order. The tile
 * holds the next p.stepRows rows of every range at a time, pre-split (WGSL_PRE_SPLIT), tile row
 * k × stepRows + j for row j of range k's step. At the end of the block the thread of range 0 adds
 * the other ranges' sums to its own, in range order: partial[b × entries + e] (block-major), a
 * function of the block's rows, the entries and the ranges alone (rowRangesShape in linreg.ts picks
 * them from the entry and column counts; stepRows changes what is staged when, not the sums).
 */
export const LINREG_GRAM_ROW_RANGES_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
${WGSL_PRE_SPLIT}
struct Params { rows: u32, entries: u32, blocks: u32, columns: u32, ranges: u32, rangeRows: u32, entriesPerGroup: u32, stepRows: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xr: array<f32>;
@group(0) @binding(2) var<storage, read> xl: array<f32>;
@group(0) @binding(3) var<storage, read> shift: array<vec2f>;
@group(0) @binding(4) var<storage, read> pairs: array<vec2u>;
@group(0) @binding(5) var<storage, read_write> partials: array<vec2f>;
const GRAM_ROWS: u32 = ${GRAM_BLOCK_ROWS}u;
var<workgroup> tile: array<vec4f, ${ROW_RANGES_TILE}u>;
var<workgroup> rangeSums: array<vec2f, 256>;

@compute @workgroup_size(256)
fn gram(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let stride = p.columns + 1u; // the constant-1 column last
  let groups = (p.entries + p.entriesPerGroup - 1u) / p.entriesPerGroup;
  let range = lid.x / p.entriesPerGroup; // this thread's range of every block
  let slot = lid.x % p.entriesPerGroup; // and its entry in the group
  let stagedRows = p.ranges * p.stepRows; // tile rows staged per step
  for (var w = wid.x; w < p.blocks * groups; w += nwg.x) {
    let b = w / groups;
    let e = (w % groups) * p.entriesPerGroup + slot;
    let live = range < p.ranges && e < p.entries;
    var pr = vec2u(0u);
    if (live) { pr = pairs[e]; }
    let a = select(pr.x, p.columns, pr.x == ${ONE_COLUMN}u);
    let c = select(pr.y, p.columns, pr.y == ${ONE_COLUMN}u);
    let r0 = b * GRAM_ROWS;
    let r1 = min(p.rows, r0 + GRAM_ROWS);
    let first = r0 + range * p.rangeRows; // this thread's range: rows [first, end)
    let end = min(r1, first + p.rangeRows);
    var acc = vec2f(0.0);
    // Step s stages rows s … s + stepRows - 1 of every range (no range of the block is longer than r1 - r0).
    for (var s = 0u; s < min(p.rangeRows, r1 - r0); s += p.stepRows) {
      workgroupBarrier(); // the previous step's tile is no longer read
      for (var i = lid.x; i < stagedRows * stride; i += WG) {
        let col = i / stagedRows;
        let tileRow = i % stagedRows; // range tileRow / stepRows, its row s + tileRow % stepRows
        let inRange = s + tileRow % p.stepRows;
        let row = r0 + (tileRow / p.stepRows) * p.rangeRows + inRange;
        if (inRange < p.rangeRows && row < r1) {
          var v = vec2f(1.0, 0.0);
          if (col < p.columns) {
            let x = col * p.rows + row;
            v = dfSub(vec2f(xr[x], xl[x]), shift[col]);
          }
          tile[tileRow * stride + col] = preSplit(v);
        }
      }
      workgroupBarrier();
      if (live && first + s < end) {
        let base = range * p.stepRows;
        let n = min(p.stepRows, end - (first + s));
        for (var j = 0u; j < n; j++) {
          let t = (base + j) * stride;
          acc = dfMulAddPreSplit(acc, tile[t + a], tile[t + c]);
        }
      }
    }
    // The next block's first barrier comes before rangeSums is written again.
    if (live) { rangeSums[lid.x] = acc; }
    workgroupBarrier();
    if (range == 0u && live) {
      var total = acc;
      for (var k = 1u; k < p.ranges; k++) { total = dfAdd(total, rangeSums[k * p.entriesPerGroup + slot]); }
      partials[b * p.entries + e] = total;
    }
  }
}
`;

export const LINREG_RESIDUAL_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
struct Params { rows: u32, cols: u32, _a: u32, _b: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xr: array<f32>;
@group(0) @binding(2) var<storage, read> xl: array<f32>;
/** The coefficients, then the intercept, as (hi, lo). */
@group(0) @binding(3) var<storage, read> model: array<vec2f>;
@group(0) @binding(4) var<storage, read_write> squares: array<f32>;

@compute @workgroup_size(256)
fn residual(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  for (var r = gid.x; r < p.rows; r += gridStride(nwg)) {
    let yi = p.cols * p.rows + r;
    var e = dfSub(vec2f(xr[yi], xl[yi]), model[p.cols]);
    for (var j = 0u; j < p.cols; j++) {
      let i = j * p.rows + r;
      e = dfMulAdd(e, -model[j], vec2f(xr[i], xl[i]));
    }
    let v = e.x + e.y;
    squares[r] = v * v;
  }
}
`;
