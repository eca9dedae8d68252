// Linear regression on a device matrix: the centred Gram matrix (upper triangle of Xᵀ X and Xᵀ y),
// column moments (the same kernel with a constant-1 column), and the residual sum of squares, all
// accumulated in double-float per block and over blocks in a fixed order. WGSL: linreg.wgsl.ts.
// CPU twin (float64): gramCpu.

import type { GpuContext } from '../engine/gpu/device.js';
import type { GramResult } from '../engine/ml/linreg-tasks.js';
import type { MomentsResult } from '../engine/ml/stats-tasks.js';
import { BLOCK_SUMS, blocksOf, pairsToDD, recordBlockSums, recordReduceBlocks, REDUCE_BLOCKS, splitDouble, type DeviceMatrix, type GpuWork, type KernelSource } from './ml-matrix.js';
import { GRAM_BLOCK_ROWS, GRAM_TILE_COLUMNS, LINREG_RESIDUAL_WGSL, linregGramWgsl, MAX_GRAM_COLUMNS, NO_ENTRY, ONE_COLUMN } from './linreg.wgsl.js';

const gramKernel = (fused: boolean): KernelSource => [`linreg-gram${fused ? '-fused' : ''}`, linregGramWgsl(fused), 'gram'];
const RESIDUAL: KernelSource = ['linreg-residual', LINREG_RESIDUAL_WGSL, 'residual'];

/** The Gram pass's kernels (the column moments' too), for compiling while the rows load; after the device checks (the fma's verdict picks the Gram's form). */
export function gramKernels(ctx: GpuContext): KernelSource[] {
  return [gramKernel(ctx.fusedFma), REDUCE_BLOCKS];
}

/** The rest of linreg's kernels (the residual sum of squares). */
export function linregKernels(): KernelSource[] {
  return [RESIDUAL, BLOCK_SUMS, REDUCE_BLOCKS];
}

/** Column pairs of the Gram matrix: (i, j) for i ≤ j < d, then (i, d) for Xᵀ y (column d is y). */
export function gramPairs(d: number): Uint32Array {
  const out: number[] = [];
  for (let i = 0; i < d; i++) for (let j = i; j < d; j++) out.push(i, j);
  for (let i = 0; i < d; i++) out.push(i, d);
  return new Uint32Array(out);
}

/** Column pairs of the moments: (c, 1) then (c, c) for every column. */
export function momentPairs(columns: number): Uint32Array {
  const out: number[] = [];
  for (let c = 0; c < columns; c++) out.push(c, ONE_COLUMN, c, c);
  return new Uint32Array(out);
}

/** (hi, lo) pairs of float64 values, for kernel arguments. */
function doubleFloats(values: ArrayLike<number>): Float32Array {
  const out = new Float32Array(values.length * 2);
  for (let i = 0; i < values.length; i++) [out[2 * i], out[2 * i + 1]] = splitDouble(values[i]);
  return out;
}

/** Whether the Gram kernel takes a device matrix of `columns` columns (features and target). */
export function gramOnGpu(columns: number): boolean {
  return columns >= 1 && columns <= MAX_GRAM_COLUMNS;
}

/**
 * The Gram kernel's tiles (b = GRAM_TILE_COLUMNS) for `pairs` over `columns` device columns (ONE_COLUMN: the staged
 * constant-1 column, index `columns`): per tile of b × b columns, its b a-columns, b c-columns (past
 * the last column: the last, its products unused) and the entry each product gives (NO_ENTRY for
 * none); a pair and its mirror share a tile. Words laid out as the kernel's GramTile.
 */
export function gramTiles(pairs: Uint32Array, columns: number): { words: Uint32Array; count: number } {
  const b = GRAM_TILE_COLUMNS;
  const index = (c: number) => (c === ONE_COLUMN ? columns : c);
  const tiles = new Map<string, { i: number; j: number; e: number[] }>();
  for (let e = 0; e < pairs.length / 2; e++) {
    let i = index(pairs[2 * e]), j = index(pairs[2 * e + 1]);
    if (i > j) [i, j] = [j, i];
    const key = `${Math.floor(i / b)},${Math.floor(j / b)}`;
    let tile = tiles.get(key);
    if (!tile) tiles.set(key, tile = { i: Math.floor(i / b) * b, j: Math.floor(j / b) * b, e: new Array(b * b).fill(NO_ENTRY) });
    const slot = (i - tile.i) * b + (j - tile.j);
    if (tile.e[slot] !== NO_ENTRY) throw new Error(`gram: pair (${i}, ${j}) asked twice`);
    tile.e[slot] = e;
  }
  const per = 2 * b + b * b, words = new Uint32Array(Math.max(1, tiles.size) * per);
  [...tiles.values()].forEach((t, n) => {
    for (let s = 0; s < b; s++) { words[n * per + s] = Math.min(t.i + s, columns); words[n * per + b + s] = Math.min(t.j + s, columns); }
    words.set(t.e, n * per + 2 * b);
  });
  return { words, count: tiles.size };
}

/** gramTiles, built once per pair list and column count (every partition of a pass asks for the same). */
const builtTiles = new Map<string, { words: Uint32Array; count: number }>();
function gramTilesOf(pairs: Uint32Array, columns: number): { words: Uint32Array; count: number } {
  const key = `${columns}:${pairs.join(',')}`;
  let tiles = builtTiles.get(key);
  if (!tiles) builtTiles.set(key, tiles = gramTiles(pairs, columns));
  return tiles;
}

/**
 * Records Σ (x_i - shift_i)(x_j - shift_j) for each pair into out[outOffset …]; `shift` has one value
 * per device column. `fused` (default: whether the device's fma is) changes the instructions, not the bits.
 */
export function recordGram(work: GpuWork, m: DeviceMatrix, shift: ArrayLike<number>, pairs: Uint32Array, out: GPUBuffer, outOffset: number, { fused = work.ctx.fusedFma }: { fused?: boolean } = {}): void {
  const entries = pairs.length / 2, blocks = Math.ceil(m.rows / GRAM_BLOCK_ROWS), columns = m.cols + (m.hasY ? 1 : 0);
  if (shift.length !== columns || !gramOnGpu(columns)) throw new Error(`gram: ${shift.length} shifts for ${columns} device columns (at most ${MAX_GRAM_COLUMNS})`);
  const partials = work.temp(Math.max(1, blocks) * entries * 8, 'gram partials');
  const tiles = gramTilesOf(pairs, columns);
  // Row groups per tile: as many as fill the workgroup's 256 threads (one when tiles outnumber them; then several passes).
  const groups = Math.max(1, Math.floor(256 / tiles.count)), passes = Math.ceil(tiles.count / Math.floor(256 / groups));
  const buffers = [work.params([m.rows, tiles.count, blocks, columns, groups, entries, 0, 0]), m.xr, m.xl, work.sharedInput(doubleFloats(shift), 'gram shift'), work.sharedInput(tiles.words, 'gram tiles'), partials];
  work.dispatch(...gramKernel(fused), buffers, blocks * passes);
  recordReduceBlocks(work, partials, blocks, entries, out, outOffset, 'block-major');
}

/** Records Σ (y - intercept - x·coefficients)² into out[outOffset]. */
export function recordResidual(work: GpuWork, m: DeviceMatrix, coefficients: Float64Array, intercept: number, out: GPUBuffer, outOffset: number): void {
  const squares = work.temp(m.rows * 4, 'residual squares');
  const model = work.sharedInput(doubleFloats([...coefficients, intercept]), 'linreg model');
  work.dispatch(...RESIDUAL, [work.params([m.rows, m.cols]), m.xr, m.xl, model, squares], Math.ceil(m.rows / 256));
  const partials = recordBlockSums(work, squares, m.rows, 1);
  recordReduceBlocks(work, partials, blocksOf(m.rows), 1, out, outOffset);
}

/** The trainer's GramResult from the (hi, lo) pairs of gramPairs(d)'s entries. */
export function gramResultOf(pairs: Float32Array, d: number): GramResult {
  const all = pairsToDD(pairs, d * (d + 1) / 2 + d);
  const xtx = { hi: new Float64Array(d * d), lo: new Float64Array(d * d) };
  let e = 0;
  for (let i = 0; i < d; i++) {
    for (let j = i; j < d; j++, e++) { xtx.hi[i * d + j] = all.hi[e]; xtx.lo[i * d + j] = all.lo[e]; }
  }
  return { xtx, xty: { hi: all.hi.slice(e), lo: all.lo.slice(e) } };
}

/**
 * The trainer's MomentsResult from momentPairs(cols + hasY)'s entries (entry cols stays 0 without
 * y), followed, with `maxima`, by the columns' largest |x| as f32 words (recordMaxAbs).
 */
export function momentsResultOf(pairs: Float32Array, rows: number, cols: number, hasY: boolean, maxima: boolean): MomentsResult {
  const columns = cols + (hasY ? 1 : 0);
  const all = pairsToDD(pairs, 2 * columns);
  const sum = { hi: new Float64Array(cols + 1), lo: new Float64Array(cols + 1) };
  const sumSq = { hi: new Float64Array(cols + 1), lo: new Float64Array(cols + 1) };
  for (let c = 0; c < columns; c++) {
    sum.hi[c] = all.hi[2 * c]; sum.lo[c] = all.lo[2 * c];
    sumSq.hi[c] = all.hi[2 * c + 1]; sumSq.lo[c] = all.lo[2 * c + 1];
  }
  return { rows, sum, sumSq, maxAbs: maxima ? Float64Array.from(pairs.subarray(4 * columns, 4 * columns + cols)) : null };
}

/** CPU twin (float64 reference): the sums recordGram computes, for row-major x, and y as column d. */
export function gramCpu(x: Float64Array, y: Float64Array | null, rows: number, d: number, shift: ArrayLike<number>, pairs: Uint32Array): Float64Array {
  const out = new Float64Array(pairs.length / 2);
  const value = (c: number, r: number) => (c === ONE_COLUMN ? 1 : (c === d ? y![r] : x[r * d + c]) - shift[c]);
  for (let e = 0; e < out.length; e++) {
    let s = 0;
    for (let r = 0; r < rows; r++) s += value(pairs[2 * e], r) * value(pairs[2 * e + 1], r);
    out[e] = s;
  }
  return out;
}
