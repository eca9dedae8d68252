// WGSL shared by the ML kernels (kmeans, linreg): double-float arithmetic (a value as hi + lo, two
// f32), the f64 -> double-float decode that builds a device-resident design matrix, and
// deterministic sums: per block of BLOCK_ROWS rows in a fixed order, then over blocks in order.
//
// Layout of a device matrix: column-major f32, column c of `rows` rows at c × rows; `xr` holds
// each value rounded to f32 and `xl` the rest (x - xr), so x = xr + xl to about 2^-48 relative.

import { WGSL_GRID } from './wgsl-common.js';

/** Rows summed by one workgroup before the sums over blocks; a fixed number, so sums do not depend on the device. */
export const BLOCK_ROWS = 4096;

/**
 * Double-float helpers. Every step is an f32 add, subtract or a product of two values with at most
 * 12 significant bits each (exact), so contraction into FMA cannot change a result (save in the
 * low-order cross terms of dfMulAdd). Shader compilers
 * reassociate float math (Mesa folds twoSum's error term to 0, even through a multiplication by an
 * unknown 1), so results of the error-free steps pass through opaque(): an XOR with a zero the
 * compiler cannot know. Every entry point calls dfInit(num_workgroups) first.
 */
export const WGSL_DOUBLE_FLOAT = /* wgsl */ `
const BLOCK_ROWS: u32 = ${BLOCK_ROWS}u;
var<private> dfBits: u32;
fn dfInit(nwg: vec3u) { dfBits = select(0u, 1u, nwg.x == 0xffffffffu); }
fn opaque(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) ^ dfBits); }
fn twoSum(a: f32, b: f32) -> vec2f {
  let s = opaque(a + b);
  let bb = opaque(s - a);
  return vec2f(s, (a - (s - bb)) + (b - bb));
}
fn dfAddF(a: vec2f, b: f32) -> vec2f {
  let s = twoSum(a.x, b);
  let t = s.y + a.y;
  let r = opaque(s.x + t);
  return vec2f(r, t - (r - s.x));
}
fn dfAdd(a: vec2f, b: vec2f) -> vec2f {
  let s = twoSum(a.x, b.x);
  let t = s.y + a.y + b.y;
  let r = opaque(s.x + t);
  return vec2f(r, t - (r - s.x));
}
fn dfSub(a: vec2f, b: vec2f) -> vec2f { return dfAdd(a, -b); }
/** The top 12 significant bits of a (the rest, a - split12(a), has at most 12 too). */
fn split12(a: f32) -> f32 { return bitcast<f32>(bitcast<u32>(a) & 0xfffff000u); }
/**
 * acc + a × b for double-floats a, b: hi × hi as p + e exactly (Dekker: p rounded, e from the four
 * exact partial products of the 12-bit halves), plus the cross terms, added to acc in one dfAdd.
 */
fn dfMulAdd(acc: vec2f, a: vec2f, b: vec2f) -> vec2f {
  let a1 = split12(a.x);
  let b1 = split12(b.x);
  return dfMulAddSplit(acc, a, a1, a.x - a1, b, b1, b.x - b1);
}
/** dfMulAdd of values whose high parts are split already (hi = h1 + h2), for a value in several products. */
fn dfMulAddSplit(acc: vec2f, a: vec2f, a1: f32, a2: f32, b: vec2f, b1: f32, b2: f32) -> vec2f {
  let p = opaque(a.x * b.x);
  let e = opaque(opaque(opaque(a1 * b1 - p) + a1 * b2) + a2 * b1) + a2 * b2;
  return dfAdd(acc, vec2f(p, e + (a.x * b.y + a.y * b.x)));
}
`;

/** A workgroup's 256 double-floats summed in a fixed tree; call in uniform control flow. */
export const WGSL_LANE_SUM = /* wgsl */ `
var<workgroup> lanes: array<vec2f, 256>;
fn laneSum(lane: u32, v: vec2f) -> vec2f {
  lanes[lane] = v;
  workgroupBarrier();
  for (var half = 128u; half > 0u; half >>= 1u) {
    if (lane < half) { lanes[lane] = dfAdd(lanes[lane], lanes[lane + half]); }
    workgroupBarrier();
  }
  let total = lanes[0];
  workgroupBarrier();
  return total;
}
`;

/** f64 words -> double-float (hi + lo f32), shared by the decode kernels. */
const WGSL_F64_TO_DF = /* wgsl */ `
/** An f64 (lo word, hi word) as hi + lo f32: the top 24 significant bits and the next 24 (truncated). */
fn f64ToDF(w: vec2u) -> vec2f {
  let e = (w.y >> 20u) & 0x7ffu;
  let sign = w.y & 0x80000000u;
  if (e == 0u) { return vec2f(0.0); } // zero; subnormal doubles are far below f32 range
  if (e == 0x7ffu) {
    let nan = (w.y & 0xfffffu) != 0u || w.x != 0u;
    return vec2f(bitcast<f32>(select(0x7f800000u | sign, 0x7fc00000u, nan)), 0.0);
  }
  let top = (1u << 23u) | ((w.y & 0xfffffu) << 3u) | (w.x >> 29u);
  let next = (w.x >> 5u) & 0xffffffu;
  let ex = i32(e) - 1023;
  let s = select(1.0, -1.0, sign != 0u);
  return vec2f(s * ldexp(f32(top), ex - 23), s * ldexp(f32(next), ex - 47));
}
/** An f64 as the matrix keeps it: (xr, xl), xr rounded to the nearest f32 and xl the rest. */
fn f64ToMatrix(w: vec2u) -> vec2f {
  let v = f64ToDF(w);
  let r = opaque(v.x + v.y);
  return vec2f(r, (v.x - r) + v.y);
}
`;

/** Rows of one piece of decode_pieces' table: a workgroup's 256 threads take 16 each. */
export const DECODE_PIECE_ROWS = 4096;

/**
 * decode_pieces: f64 words of whole record batches as they lie in a file (each column's values
 * at its own offset) -> columns of xr / xl. Each piece of the table is up to DECODE_PIECE_ROWS
 * values of one column: (first vec2u word in src, values, first index in xr / xl).
 */
export const ML_DECODE_PIECES_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
struct Piece { srcWord: u32, values: u32, dst: u32, _a: u32 }
struct PieceParams { pieces: u32, _a: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<uniform> pp: PieceParams;
@group(0) @binding(1) var<storage, read> src: array<vec2u>;
@group(0) @binding(2) var<storage, read_write> xr: array<f32>;
@group(0) @binding(3) var<storage, read_write> xl: array<f32>;
@group(0) @binding(4) var<storage, read> pieces: array<Piece>;
${WGSL_F64_TO_DF}
@compute @workgroup_size(256)
fn decode_pieces(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  for (var w = wid.x; w < pp.pieces; w += nwg.x) {
    let piece = pieces[w];
    for (var i = lid.x; i < piece.values; i += WG) {
      let v = f64ToMatrix(src[piece.srcWord + i]);
      xr[piece.dst + i] = v.x;
      xl[piece.dst + i] = v.y;
    }
  }
}
`;

export const ML_MATRIX_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}

// ---- decode: f64 words of a row-major slice -> columns of xr / xl ----
struct DecodeParams { sliceRows: u32, srcCols: u32, rowStart: u32, totalRows: u32, colStart: u32, _a: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<uniform> dp: DecodeParams;
@group(0) @binding(1) var<storage, read> src: array<vec2u>;
@group(0) @binding(2) var<storage, read_write> xr: array<f32>;
@group(0) @binding(3) var<storage, read_write> xl: array<f32>;

${WGSL_F64_TO_DF}
@compute @workgroup_size(256)
fn decode(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let n = dp.sliceRows * dp.srcCols;
  for (var i = gid.x; i < n; i += gridStride(nwg)) {
    let row = i / dp.srcCols;
    let col = i % dp.srcCols;
    let v = f64ToMatrix(src[i]);
    let at = (dp.colStart + col) * dp.totalRows + dp.rowStart + row;
    xr[at] = v.x;
    xl[at] = v.y;
  }
}
`;

/** Sums of `segments` runs of `rows` f32 values per block of BLOCK_ROWS rows: partial[s × blocks + b]. */
export const BLOCK_SUMS_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
struct SumParams { rows: u32, blocks: u32, entries: u32, outOffset: u32 }
@group(0) @binding(0) var<uniform> sp: SumParams;
@group(0) @binding(1) var<storage, read> values: array<f32>;
@group(0) @binding(2) var<storage, read_write> partials: array<vec2f>;
${WGSL_LANE_SUM}

/** Work item w = (block b, segment s), w = s × blocks + b: each thread sums every 256th row of the block, then a fixed tree. */
@compute @workgroup_size(256)
fn block_sums(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  for (var w = wid.x; w < sp.blocks * sp.entries; w += nwg.x) {
    let b = w % sp.blocks;
    let s = w / sp.blocks;
    let r0 = b * BLOCK_ROWS;
    let r1 = min(sp.rows, r0 + BLOCK_ROWS);
    var acc = vec2f(0.0);
    for (var r = r0 + lid.x; r < r1; r += WG) { acc = dfAddF(acc, values[s * sp.rows + r]); }
    let total = laneSum(lid.x, acc);
    if (lid.x == 0u) { partials[w] = total; }
  }
}
`;

/** Partials one thread of the reduction adds in a row (one level of its fixed tree). */
export const REDUCE_FAN = 64;

/**
 * One level of the sum over blocks: for group g of REDUCE_FAN consecutive blocks (the last may
 * be shorter) and entry e, out[outOffset + g × entries + e] = Σ over the group's blocks, in
 * block order, of partial[e × blocks + b] (entry-major) or partial[b × entries + e] (block-major:
 * neighbouring threads read neighbouring words). Levels repeat until one group is left, so no
 * thread adds more than REDUCE_FAN partials in a row: one thread walking thousands of blocks left
 * the GPU waiting on a chain of dependent loads.
 */
export const REDUCE_BLOCKS_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
struct ReduceParams { blocks: u32, entries: u32, outOffset: u32, blockMajor: u32 }
@group(0) @binding(0) var<uniform> rp: ReduceParams;
@group(0) @binding(1) var<storage, read> partials: array<vec2f>;
@group(0) @binding(2) var<storage, read_write> out: array<vec2f>;
const FAN: u32 = ${REDUCE_FAN}u;

@compute @workgroup_size(256)
fn reduce_blocks(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let groups = (rp.blocks + FAN - 1u) / FAN;
  for (var i = gid.x; i < groups * rp.entries; i += gridStride(nwg)) {
    let e = i % rp.entries;
    let g = i / rp.entries;
    let b1 = min(rp.blocks, (g + 1u) * FAN);
    var acc = vec2f(0.0);
    for (var b = g * FAN; b < b1; b++) {
      acc = dfAdd(acc, partials[select(e * rp.blocks + b, b * rp.entries + e, rp.blockMajor == 1u)]);
    }
    out[rp.outOffset + i] = acc;
  }
}
`;
