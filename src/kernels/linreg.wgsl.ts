// WGSL of linear regression on a device matrix (ml-matrix.wgsl.ts layout), in double-float:
//   gram:     for each entry (i, j) of a list, per block of GRAM_BLOCK_ROWS rows, Σ (x_i - s_i)(x_j - s_j);
//             column ONE stands for the constant 1, so (c, ONE) gives Σ (x_c - s_c) (column moments);
//             values staged per sub-tile in workgroup memory, one thread per entry
//   residual: (y - b - Σ w_j x_j)² per row (f32), summed afterwards by the block-sum kernels

import { WGSL_GRID } from './wgsl-common.js';
import { WGSL_DOUBLE_FLOAT } from './ml-matrix.wgsl.js';

/** The column index that stands for the constant 1 in a gram entry. */
export const ONE_COLUMN = 0xffffffff;

/** Rows of one block of the Gram sums (a fixed number: the sums do not depend on the device). */
export const GRAM_BLOCK_ROWS = 1024;
/** Centred double-float values of a sub-tile of rows staged in workgroup memory (16 KiB): 8 a thread. */
const GRAM_TILE = 2048;
/** Device columns the Gram kernel takes (one row of them and the constant 1 fit the tile); more run on the CPU. */
export const MAX_GRAM_COLUMNS = GRAM_TILE - 1;

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

/** Loads the (xr, xl) values this thread stages of the sub-tile of n rows at s0 (the constant-1 column needs none). */
fn prefetch(s0: u32, n: u32, stride: u32, lane: u32, v0: ptr<function, vec2f>, v1: ptr<function, vec2f>, v2: ptr<function, vec2f>, v3: ptr<function, vec2f>, v4: ptr<function, vec2f>, v5: ptr<function, vec2f>, v6: ptr<function, vec2f>, v7: ptr<function, vec2f>) {
  { let i = lane + 0u * WG; if (i < n * stride && i / n < p.columns) { let at = (i / n) * p.rows + s0 + i % n; *v0 = vec2f(xr[at], xl[at]); } }
  { let i = lane + 1u * WG; if (i < n * stride && i / n < p.columns) { let at = (i / n) * p.rows + s0 + i % n; *v1 = vec2f(xr[at], xl[at]); } }
  { let i = lane + 2u * WG; if (i < n * stride && i / n < p.columns) { let at = (i / n) * p.rows + s0 + i % n; *v2 = vec2f(xr[at], xl[at]); } }
  { let i = lane + 3u * WG; if (i < n * stride && i / n < p.columns) { let at = (i / n) * p.rows + s0 + i % n; *v3 = vec2f(xr[at], xl[at]); } }
  { let i = lane + 4u * WG; if (i < n * stride && i / n < p.columns) { let at = (i / n) * p.rows + s0 + i % n; *v4 = vec2f(xr[at], xl[at]); } }
  { let i = lane + 5u * WG; if (i < n * stride && i / n < p.columns) { let at = (i / n) * p.rows + s0 + i % n; *v5 = vec2f(xr[at], xl[at]); } }
  { let i = lane + 6u * WG; if (i < n * stride && i / n < p.columns) { let at = (i / n) * p.rows + s0 + i % n; *v6 = vec2f(xr[at], xl[at]); } }
  { let i = lane + 7u * WG; if (i < n * stride && i / n < p.columns) { let at = (i / n) * p.rows + s0 + i % n; *v7 = vec2f(xr[at], xl[at]); } }
}

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
    // The next sub-tile's values are loaded into registers (pre*) before this one is summed, so
    // their memory latency passes while the workgroup adds.
    var pre0 = vec2f(0.0);
    var pre1 = vec2f(0.0);
    var pre2 = vec2f(0.0);
    var pre3 = vec2f(0.0);
    var pre4 = vec2f(0.0);
    var pre5 = vec2f(0.0);
    var pre6 = vec2f(0.0);
    var pre7 = vec2f(0.0);
    prefetch(r0, min(t, r1 - r0), stride, lid.x, &pre0, &pre1, &pre2, &pre3, &pre4, &pre5, &pre6, &pre7);
    for (var s0 = r0; s0 < r1; s0 += t) {
      let n = min(t, r1 - s0);
      workgroupBarrier(); // the previous sub-tile is no longer read
      {
        let i = lid.x + 0u * WG;
        if (i < n * stride) {
          let col = i / n;
          var v = vec2f(1.0, 0.0);
          if (col < p.columns) { v = dfSub(pre0, shift[col]); }
          tile[(i % n) * stride + col] = v;
        }
      }
      {
        let i = lid.x + 1u * WG;
        if (i < n * stride) {
          let col = i / n;
          var v = vec2f(1.0, 0.0);
          if (col < p.columns) { v = dfSub(pre1, shift[col]); }
          tile[(i % n) * stride + col] = v;
        }
      }
      {
        let i = lid.x + 2u * WG;
        if (i < n * stride) {
          let col = i / n;
          var v = vec2f(1.0, 0.0);
          if (col < p.columns) { v = dfSub(pre2, shift[col]); }
          tile[(i % n) * stride + col] = v;
        }
      }
      {
        let i = lid.x + 3u * WG;
        if (i < n * stride) {
          let col = i / n;
          var v = vec2f(1.0, 0.0);
          if (col < p.columns) { v = dfSub(pre3, shift[col]); }
          tile[(i % n) * stride + col] = v;
        }
      }
      {
        let i = lid.x + 4u * WG;
        if (i < n * stride) {
          let col = i / n;
          var v = vec2f(1.0, 0.0);
          if (col < p.columns) { v = dfSub(pre4, shift[col]); }
          tile[(i % n) * stride + col] = v;
        }
      }
      {
        let i = lid.x + 5u * WG;
        if (i < n * stride) {
          let col = i / n;
          var v = vec2f(1.0, 0.0);
          if (col < p.columns) { v = dfSub(pre5, shift[col]); }
          tile[(i % n) * stride + col] = v;
        }
      }
      {
        let i = lid.x + 6u * WG;
        if (i < n * stride) {
          let col = i / n;
          var v = vec2f(1.0, 0.0);
          if (col < p.columns) { v = dfSub(pre6, shift[col]); }
          tile[(i % n) * stride + col] = v;
        }
      }
      {
        let i = lid.x + 7u * WG;
        if (i < n * stride) {
          let col = i / n;
          var v = vec2f(1.0, 0.0);
          if (col < p.columns) { v = dfSub(pre7, shift[col]); }
          tile[(i % n) * stride + col] = v;
        }
      }
      workgroupBarrier();
      if (s0 + t < r1) { prefetch(s0 + t, min(t, r1 - s0 - t), stride, lid.x, &pre0, &pre1, &pre2, &pre3, &pre4, &pre5, &pre6, &pre7); }
      if (live) {
        for (var row = 0u; row < n; row++) { acc = dfMulAdd(acc, tile[row * stride + a], tile[row * stride + c]); }
      }
    }
    if (live) { partials[b * p.entries + e] = acc; }
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
