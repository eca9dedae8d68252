// Column moments over partitions: sums of (x - shift) and (x - shift)^2 per column (and for y),
// in double-double. Used for means/variances (k-means tolerance, linear-regression centring).

import { ddAdd, ddZeros, type DDArray } from './double-double.js';
import type { MatrixPartition } from './partitioned.js';

export interface MomentsArgs { shift: Float64Array | null; yShift: number }
/** Entries 0..cols-1 are x columns, entry cols is y (0 when there is no y). */
export interface MomentsResult { rows: number; sum: DDArray; sumSq: DDArray }

function moments(part: MatrixPartition, args: MomentsArgs): MomentsResult {
  const { rows, cols, x, y } = part;
  const shift = args.shift ?? new Float64Array(cols);
  const sum = ddZeros(cols + 1), sumSq = ddZeros(cols + 1);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) {
      const v = x[base + c] - shift[c];
      ddAdd(sum, c, v);
      ddAdd(sumSq, c, v * v);
    }
    if (y) {
      const v = y[r] - args.yShift;
      ddAdd(sum, cols, v);
      ddAdd(sumSq, cols, v * v);
    }
  }
  return { rows, sum, sumSq };
}

export const STATS_TASKS = { 'stats.moments': moments };
