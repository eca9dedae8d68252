// WGSL of linear regression on a device matrix (ml-matrix.wgsl.ts layout), in double-float:
//   gram:     for each entry (i, j) of a list, per block of GRAM_BLOCK_ROWS rows, Σ (x_i - s_i)(x_j - s_j);
//             column ONE stands for the constant 1, so (c, ONE) gives Σ (x_c - s_c) (column moments);
//             values staged per sub-tile in workgroup memory, each thread a tile of 2 × 2 entries
//   residual: (y - b - Σ w_j x_j)² per row (f32), summed afterwards by the block-sum kernels

import { memoWgsl, WGSL_GRID } from './wgsl-common.js';
import { WGSL_DOUBLE_FLOAT } from './ml-matrix.wgsl.js';

/** The column index that stands for the constant 1 in a gram entry. */
export const ONE_COLUMN = 0xffffffff;

/** Rows of one block of the Gram sums (a fixed number: the sums do not depend on the device). */
export const GRAM_BLOCK_ROWS = 1024;
/**
 * Centred double-float values of a sub-tile of rows staged in workgroup memory (8 KiB; at least
 * 4 × 256 for the row groups' sums). Less workgroup memory lets more workgroups share an SM:
 * 10^7 × 16 on an H200 with 2048 values 2.96–3.18 ms, 1536 2.84–3.48, 1024 2.53–2.74.
 */
const GRAM_TILE = 1024;
/** Device columns the Gram kernel takes (one row of them and the constant 1 fit the tile); more run on the CPU. */
export const MAX_GRAM_COLUMNS = GRAM_TILE - 1;

/** An entry slot of a Gram tile that no entry asked for. */
export const NO_ENTRY = 0xffffffff;

/**
 * Columns a side of a Gram tile: a thread sums the 2 × 2 products of two columns with two others,
 * each staged value loaded once for two products (10^7 × 16 on an H200: 2 × 2 3.4–4.3 ms with
 * Dekker's split, 2.9–3.2 ms fused; one entry a thread 4.4–5.9; 4 × 4 5.1–5.3, 4.3 fused).
 */
export const GRAM_TILE_COLUMNS = 2;

/**
 * The Gram pass in register tiles: tile t (GramTile words, gramTiles) is B columns a × B columns c
 * (B = GRAM_TILE_COLUMNS); its thread sums the B × B products (x_a - s_a)(x_c - s_c) over every
 * `groups`-th row of the block's sub-tiles (row group g: rows g, g + groups, … of each, in order);
 * then the groups' sums are added in group order. Threads: lane = slot × groups + g, slot a tile of
 * the pass. partial[b × entries + e] (block-major). Each product's exact rounding error comes from
 * Dekker's split (each value split once for all its products) or, where the device's fma() is
 * fused (ctx.fusedFma), from fma: the same error, so the same bits.
 */
function buildGramWgsl(fused: boolean): string {
  const b = GRAM_TILE_COLUMNS;
  const n = b * b;
  const idx = Array.from({ length: b }, (_, i) => i);
  const prods = Array.from({ length: n }, (_, q) => q);
  const col = (v: 'a' | 'c', i: number) => `tl.${v}[${i}]`;
  return /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
struct Params { rows: u32, tiles: u32, blocks: u32, columns: u32, groups: u32, entries: u32, _a: u32, _b: u32 }
struct GramTile { a: vec${b}u, c: vec${b}u, e: array<u32, ${n}> }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xr: array<f32>;
@group(0) @binding(2) var<storage, read> xl: array<f32>;
@group(0) @binding(3) var<storage, read> shift: array<vec2f>;
@group(0) @binding(4) var<storage, read> tiles: array<GramTile>;
@group(0) @binding(5) var<storage, read_write> partials: array<vec2f>;
const GRAM_ROWS: u32 = ${GRAM_BLOCK_ROWS}u;
const NO_ENTRY: u32 = ${NO_ENTRY}u;
var<workgroup> tile: array<vec2f, ${GRAM_TILE}u>;

/**
 * acc + a × b for double-floats, with acc's rounding errors summed apart: acc.x the running sum of
 * the products' high parts (twoSum), acc.y the sum of its errors and of the products' low parts,
 * renormalised once at the end (dfNorm). Per row that saves dfAdd's renormalisation; over a block's
 * ≤ 1024 rows the low sum's own rounding stays near 2^-34 of the block's Σ|products|. The
 * product's error comes from a fused fma, or from Dekker's split (e of dfMulAddSplit's halves).
 */
fn dfMulAccFused(acc: vec2f, a: vec2f, b: vec2f) -> vec2f {
  let p = opaque(a.x * b.x);
  let e = fma(a.x, b.x, -p) + (a.x * b.y + a.y * b.x);
  let s = twoSum(acc.x, p);
  return vec2f(s.x, acc.y + (s.y + e));
}
fn dfMulAccSplit(acc: vec2f, a: vec2f, a1: f32, a2: f32, b: vec2f, b1: f32, b2: f32) -> vec2f {
  let p = opaque(a.x * b.x);
  let e = (opaque(opaque(opaque(a1 * b1 - p) + a1 * b2) + a2 * b1) + a2 * b2) + (a.x * b.y + a.y * b.x);
  let s = twoSum(acc.x, p);
  return vec2f(s.x, acc.y + (s.y + e));
}
fn dfNorm(a: vec2f) -> vec2f {
  let r = opaque(a.x + a.y);
  return vec2f(r, a.y - (r - a.x));
}

@compute @workgroup_size(256)
fn gram(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let stride = p.columns + 1u; // the constant-1 column last
  let t = ${GRAM_TILE}u / stride;
  let g = lid.x % p.groups;
  let slots = WG / p.groups;
  let passes = (p.tiles + slots - 1u) / slots;
  for (var w = wid.x; w < p.blocks * passes; w += nwg.x) {
    let blk = w % p.blocks;
    let ti = (w / p.blocks) * slots + lid.x / p.groups;
    let live = lid.x < slots * p.groups && ti < p.tiles;
    var tl: GramTile;
    if (live) { tl = tiles[ti]; }
${prods.map((q) => `    var acc${q} = vec2f(0.0);`).join('\n')}
    let r0 = blk * GRAM_ROWS;
    let r1 = min(p.rows, r0 + GRAM_ROWS);
    for (var s0 = r0; s0 < r1; s0 += t) {
      let n = min(t, r1 - s0);
      workgroupBarrier(); // the previous sub-tile is no longer read
      for (var i = lid.x; i < n * stride; i += WG) {
        let column = i / n;
        let row = i % n;
        var v = vec2f(1.0, 0.0);
        if (column < p.columns) {
          let at = column * p.rows + s0 + row;
          v = dfSub(vec2f(xr[at], xl[at]), shift[column]);
        }
        tile[row * stride + column] = v;
      }
      workgroupBarrier();
      if (live) {
        for (var row = g; row < n; row += p.groups) {
          let base = row * stride;
${idx.map((i) => `          let a${i} = tile[base + ${col('a', i)}];${fused ? '' : ` let a${i}h = split12(a${i}.x); let a${i}l = a${i}.x - a${i}h;`}`).join('\n')}
${idx.map((i) => `          let c${i} = tile[base + ${col('c', i)}];${fused ? '' : ` let c${i}h = split12(c${i}.x); let c${i}l = c${i}.x - c${i}h;`}`).join('\n')}
${prods.map((q) => { const i = Math.floor(q / b), j = q % b; return fused ? `          acc${q} = dfMulAccFused(acc${q}, a${i}, c${j});` : `          acc${q} = dfMulAccSplit(acc${q}, a${i}, a${i}h, a${i}l, c${j}, c${j}h, c${j}l);`; }).join('\n')}
        }
      }
    }
    // The row groups' sums, added in group order, through the staging tile (each lane's ${n} products).
    workgroupBarrier();
${prods.map((q) => `    tile[${q}u * WG + lid.x] = dfNorm(acc${q});`).join('\n')}
    workgroupBarrier();
    if (live) {
      let first = lid.x - g; // this tile's group 0
${prods.map((q) => `      if (${q}u % p.groups == g && tl.e[${q}] != NO_ENTRY) {
        var s = tile[${q}u * WG + first];
        for (var h = 1u; h < p.groups; h++) { s = dfAdd(s, tile[${q}u * WG + first + h]); }
        partials[blk * p.entries + tl.e[${q}]] = s;
      }`).join('\n')}
    }
  }
}
`;
}
export const linregGramWgsl = memoWgsl(buildGramWgsl);

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
