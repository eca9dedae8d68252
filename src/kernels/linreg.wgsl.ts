// WGSL of linear regression on a device matrix (ml-matrix.wgsl.ts layout), in double-float:
//   gram:     for each entry (i, j) of a list, per block of BLOCK_ROWS rows, Σ (x_i - s_i)(x_j - s_j);
//             column ONE stands for the constant 1, so (c, ONE) gives Σ (x_c - s_c) (column moments)
//   residual: (y - b - Σ w_j x_j)² per row (f32), summed afterwards by the block-sum kernels

import { WGSL_GRID } from './wgsl-common.js';
import { WGSL_DOUBLE_FLOAT, WGSL_LANE_SUM } from './ml-matrix.wgsl.js';

/** The column index that stands for the constant 1 in a gram entry. */
export const ONE_COLUMN = 0xffffffff;

export const LINREG_GRAM_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
struct Params { rows: u32, entries: u32, blocks: u32, _a: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xr: array<f32>;
@group(0) @binding(2) var<storage, read> xl: array<f32>;
@group(0) @binding(3) var<storage, read> shift: array<vec2f>;
@group(0) @binding(4) var<storage, read> pairs: array<vec2u>;
@group(0) @binding(5) var<storage, read_write> partials: array<vec2f>;
${WGSL_LANE_SUM}

fn centred(c: u32, r: u32) -> vec2f {
  if (c == ${ONE_COLUMN}u) { return vec2f(1.0, 0.0); }
  let i = c * p.rows + r;
  return dfSub(vec2f(xr[i], xl[i]), shift[c]);
}

/** Work item w = (block b, entry e), w = e × blocks + b. */
@compute @workgroup_size(256)
fn gram(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  for (var w = wid.x; w < p.blocks * p.entries; w += nwg.x) {
    let b = w % p.blocks;
    let pr = pairs[w / p.blocks];
    let r0 = b * BLOCK_ROWS;
    let r1 = min(p.rows, r0 + BLOCK_ROWS);
    var acc = vec2f(0.0);
    for (var r = r0 + lid.x; r < r1; r += WG) { acc = dfMulAdd(acc, centred(pr.x, r), centred(pr.y, r)); }
    let total = laneSum(lid.x, acc);
    if (lid.x == 0u) { partials[w] = total; }
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
