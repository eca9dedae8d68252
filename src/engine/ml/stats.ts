// Driver side of column moments: exact-ish means and population variances over all partitions.

import { ddCombine } from './double-double.js';
import type { PartitionedMatrix } from './partitioned.js';
import type { MomentsArgs, MomentsResult } from './stats-tasks.js';

export interface ColumnMoments {
  rows: number;
  /** Per x column, then y last (0 when there is no target). */
  mean: Float64Array;
  /** Sum of squared deviations from the mean, per x column, then y last. */
  centredSumSq: Float64Array;
  /** Per x column, the largest |x| rounded to f32 (NaN if any value is NaN). */
  maxAbs: Float64Array;
}

/** Two passes (means, then squares around the means) so large offsets do not cancel. */
export async function columnMoments(data: PartitionedMatrix): Promise<ColumnMoments> {
  const n = data.cols + 1;
  const first = await data.map<MomentsResult>('stats.moments', { shift: null, yShift: 0, maxima: true } satisfies MomentsArgs);
  const rows = first.reduce((s, r) => s + r.rows, 0);
  const mean = ddCombine(first.map((r) => r.sum), n).map((s) => (rows > 0 ? s / rows : 0));
  const second = await data.map<MomentsResult>('stats.moments', { shift: mean.subarray(0, data.cols), yShift: mean[data.cols], maxima: false } satisfies MomentsArgs);
  const centredSumSq = ddCombine(second.map((r) => r.sumSq), n);
  const maxAbs = new Float64Array(data.cols);
  for (const r of first) for (let c = 0; c < data.cols; c++) maxAbs[c] = Math.max(maxAbs[c], r.maxAbs![c]);
  return { rows, mean, centredSumSq, maxAbs };
}
