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
/** Centred double-float values of a sub-tile of rows staged in workgroup memory (16 KiB). */
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
