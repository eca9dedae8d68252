// Linear regression on a device matrix: the centred Gram matrix (upper triangle of Xᵀ X and Xᵀ y),
// column moments (the same kernel with a constant-1 column), and the residual sum of squares, all
// accumulated in double-float per block and over blocks in a fixed order. WGSL: linreg.wgsl.ts.
// CPU twin (float64): gramCpu.

import type { GramResult } from '../engine/ml/linreg-tasks.js';
import type { MomentsResult } from '../engine/ml/stats-tasks.js';
import { blocksOf, pairsToDD, recordBlockSums, recordReduceBlocks, splitDouble, type DeviceMatrix, type GpuWork } from './ml-matrix.js';
import { GRAM_BLOCK_ROWS, LINREG_GRAM_ROW_RANGES_WGSL, LINREG_GRAM_WGSL, LINREG_RESIDUAL_WGSL, maxGramColumns, ONE_COLUMN, ROW_RANGES_TILE, type GramVariant } from './linreg.wgsl.js';

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

/** Whether the Gram kernel of `variant` takes a device matrix of `columns` columns (features and target). */
export function gramOnGpu(columns: number, variant: GramVariant = 'entry-per-thread'): boolean {
  return columns >= 1 && columns <= maxGramColumns(variant);
}

/** How the row-ranges Gram kernel cuts its work (LINREG_GRAM_ROW_RANGES_WGSL). */
export interface RowRangesShape {
  /** Contiguous ranges of rows per block, one thread per (entry, range). */
  ranges: number;
  /** Rows of a range: ceil(GRAM_BLOCK_ROWS / ranges). */
  rangeRows: number;
  /** Entries per workgroup (a group): floor(256 / ranges), so a group's ranges fill the workgroup. */
  entriesPerGroup: number;
  /** Workgroups per block: ceil(entries / entriesPerGroup). */
  groups: number;
  /** Rows of each range staged in the tile at a time. */
  stepRows: number;
}

// Rough f32 operations, for choosing the ranges: staging one value (two loads, dfSub, preSplit),
// one dfMulAddPreSplit, one dfAdd.
const STAGE_OPS = 16, MUL_ADD_OPS = 36, ADD_OPS = 11;

/**
 * The ranges per block of the row-ranges Gram kernel, chosen from the entry and column counts
 * alone (so the sums never depend on the device). A workgroup runs one thread per (entry, range)
 * for floor(256 / R) entries, and its time per block is roughly that of one thread: staging all
 * the block's values, summing a range of 1024 / R rows, adding R - 1 range sums. Blocks need
 * ceil(entries / floor(256 / R)) workgroups, so R is the one (1 … what the tile takes) with the
 * least workgroups × that time. For 152 entries and 17 columns: 5 ranges of 205 rows, 51 entries
 * per group, 255 threads of 256 busy, 3 workgroups × 205 rows per thread where the other variant
 * has 1 × 1024 (0.6 of its time). More ranges mean shorter sums but more workgroups staging the
 * same rows and a longer combine, so wide matrices (the staging grows with the columns) get few
 * ranges, 1 when the entries fill the workgroups already (30 features and y: 495 entries, 2 × 256).
 */
export function rowRangesShape(entries: number, columns: number): RowRangesShape {
  const stride = columns + 1; // the constant-1 column
  const stageOps = stride * (GRAM_BLOCK_ROWS / 256) * STAGE_OPS;
  let best: RowRangesShape | null = null, bestCost = Infinity;
  for (let ranges = 1; ranges <= Math.min(256, Math.floor(ROW_RANGES_TILE / stride)); ranges++) {
    const rangeRows = Math.ceil(GRAM_BLOCK_ROWS / ranges), entriesPerGroup = Math.floor(256 / ranges);
    const groups = Math.ceil(entries / entriesPerGroup);
    const cost = groups * (stageOps + rangeRows * MUL_ADD_OPS + (ranges - 1) * ADD_OPS);
    if (cost < bestCost) {
      bestCost = cost;
      best = { ranges, rangeRows, entriesPerGroup, groups, stepRows: Math.min(rangeRows, Math.floor(ROW_RANGES_TILE / (ranges * stride))) };
    }
  }
  if (!best) throw new Error(`gram: ${columns} device columns do not fit the row-ranges tile`);
  return best;
}

/**
 * Records Σ (x_i - shift_i)(x_j - shift_j) for each pair into out[outOffset …]; `shift` has one
 * value per device column. The variants give the same sums up to rounding (each a fixed function
 * of the rows, see linreg.wgsl.ts); 'entry-per-thread' is the default until both are measured.
 */
export function recordGram(work: GpuWork, m: DeviceMatrix, shift: ArrayLike<number>, pairs: Uint32Array, out: GPUBuffer, outOffset: number, variant: GramVariant = 'entry-per-thread'): void {
  const entries = pairs.length / 2, blocks = Math.ceil(m.rows / GRAM_BLOCK_ROWS), columns = m.cols + (m.hasY ? 1 : 0);
  if (shift.length !== columns || !gramOnGpu(columns, variant)) throw new Error(`gram: ${shift.length} shifts for ${columns} device columns (at most ${maxGramColumns(variant)})`);
  const partials = work.temp(Math.max(1, blocks) * entries * 8, 'gram partials');
  const inputs = [m.xr, m.xl, work.input(doubleFloats(shift), 'gram shift'), work.input(pairs, 'gram pairs'), partials];
  if (variant === 'row-ranges') {
    const s = rowRangesShape(entries, columns);
    const params = work.params([m.rows, entries, blocks, columns, s.ranges, s.rangeRows, s.entriesPerGroup, s.stepRows]);
    work.dispatch('linreg-gram-row-ranges', LINREG_GRAM_ROW_RANGES_WGSL, 'gram', [params, ...inputs], blocks * s.groups);
  } else {
    work.dispatch('linreg-gram', LINREG_GRAM_WGSL, 'gram', [work.params([m.rows, entries, blocks, columns]), ...inputs], blocks * Math.ceil(entries / 256));
  }
  recordReduceBlocks(work, partials, blocks, entries, out, outOffset, 'block-major');
}

/** Records Σ (y - intercept - x·coefficients)² into out[outOffset]. */
export function recordResidual(work: GpuWork, m: DeviceMatrix, coefficients: Float64Array, intercept: number, out: GPUBuffer, outOffset: number): void {
  const squares = work.temp(m.rows * 4, 'residual squares');
  const model = work.input(doubleFloats([...coefficients, intercept]), 'linreg model');
  work.dispatch('linreg-residual', LINREG_RESIDUAL_WGSL, 'residual', [work.params([m.rows, m.cols]), m.xr, m.xl, model, squares], Math.ceil(m.rows / 256));
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

/** The trainer's MomentsResult from momentPairs(cols + hasY)'s entries (entry cols stays 0 without y). */
export function momentsResultOf(pairs: Float32Array, rows: number, cols: number, hasY: boolean): MomentsResult {
  const columns = cols + (hasY ? 1 : 0);
  const all = pairsToDD(pairs, 2 * columns);
  const sum = { hi: new Float64Array(cols + 1), lo: new Float64Array(cols + 1) };
  const sumSq = { hi: new Float64Array(cols + 1), lo: new Float64Array(cols + 1) };
  for (let c = 0; c < columns; c++) {
    sum.hi[c] = all.hi[2 * c]; sum.lo[c] = all.lo[2 * c];
    sumSq.hi[c] = all.hi[2 * c + 1]; sumSq.lo[c] = all.lo[2 * c + 1];
  }
  return { rows, sum, sumSq };
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
