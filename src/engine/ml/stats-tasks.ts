// Column moments over partitions: sums of (x - shift) and (x - shift)^2 per column (and for y),
// in double-double, and each x column's largest |x| rounded to f32. Used for means/variances
// (k-means tolerance, linear-regression centring) and the k-means GPU step's fixed-point scales.
// And the target's largest |y| (whether an int64 classifier target was read exactly).

import { ddAdd, ddZeros, type DDArray } from './double-double.js';
import type { MatrixPartition } from './partitioned.js';

/** `maxima`: also each x column's largest |x| (wanted from one pass only). */
export interface MomentsArgs { shift: Float64Array | null; yShift: number; maxima: boolean }
/** Entries 0..cols-1 are x columns, entry cols is y (0 when there is no y); maxAbs (when asked): per x column, the largest |f32(x)| (NaN if any is NaN). */
export interface MomentsResult { rows: number; sum: DDArray; sumSq: DDArray; maxAbs: Float64Array | null }

function moments(part: MatrixPartition, args: MomentsArgs): MomentsResult {
  const { rows, cols, x, y } = part;
  const shift = args.shift ?? new Float64Array(cols);
  const sum = ddZeros(cols + 1), sumSq = ddZeros(cols + 1), maxAbs = args.maxima ? new Float64Array(cols) : null;
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) {
      const v = x[base + c] - shift[c];
      ddAdd(sum, c, v);
      ddAdd(sumSq, c, v * v);
      if (maxAbs) maxAbs[c] = Math.max(maxAbs[c], Math.abs(Math.fround(x[base + c])));
    }
    if (y) {
      const v = y[r] - args.yShift;
      ddAdd(sum, cols, v);
      ddAdd(sumSq, cols, v * v);
    }
  }
  return { rows, sum, sumSq, maxAbs };
}

/** The largest |y| of the partition (0 for none; NaN if a y is NaN): whether an int64 target read as float64 stayed exact (all below 2^53). */
function targetMaxAbs(part: MatrixPartition): number {
  let max = 0;
  if (part.y) for (let r = 0; r < part.rows; r++) max = Math.max(max, Math.abs(part.y[r]));
  return max;
}

export const STATS_TASKS = { 'stats.moments': moments, 'stats.targetMaxAbs': targetMaxAbs };
