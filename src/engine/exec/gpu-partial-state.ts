// From the GPU group-by's per-group results to the AggState each CPU accumulator keeps
// (ops/aggregate/*.ts), so that PartialMerger and finalizeAggregate treat GPU partials exactly
// like CPU ones. Every function takes `pick`: the GPU groups to keep, in partial group order.

import type { Column, DType } from '../batch.js';
import { addExactSums, exactOfDouble, exactSumValue, type ExactFloatSum } from '../../kernels/float-sum.js';
import type { DecodedColumn } from '../../kernels/groupby-aggregate.js';
import { float64Column, validityFromFlags, type AggState } from '../ops/aggregate/state.js';

const state = (perGroup: Column[]): AggState => ({ perGroup, pairs: null });

function picked(values: ArrayLike<number>, pick: Int32Array): Float64Array {
  const out = new Float64Array(pick.length);
  for (let g = 0; g < pick.length; g++) out[g] = values[pick[g]];
  return out;
}

/** CountAccumulator: [n]. */
export function countState(counts: Float64Array, pick: Int32Array): AggState {
  return state([float64Column(picked(counts, pick))]);
}

/** IntSumAccumulator: [lo, hi, top, n] with sum = top·2^64 + hi·2^32 + lo (lo, hi in [0, 2^32)). */
export function intSumState(col: DecodedColumn, pick: Int32Array): AggState {
  const k = pick.length;
  const lo = new Float64Array(k), hi = new Float64Array(k), top = new Float64Array(k);
  for (let g = 0; g < k; g++) col.writeIntSum(pick[g], lo, hi, top, g);
  return state([lo, hi, top, picked(col.count, pick)].map(float64Column));
}

/** The IEEE sum of a group's non-finite values, as FloatSumAccumulator keeps it apart. */
function specialValue(flags: number): number {
  if (flags & 1 || (flags & 6) === 6) return NaN;
  if (flags & 2) return Infinity;
  return flags & 4 ? -Infinity : 0;
}

/** FloatSumAccumulator: [hi, lo, special, n]; hi + lo is the exact sum rounded to double-double. */
export function floatSumState(col: DecodedColumn, pick: Int32Array): AggState {
  const k = pick.length;
  const hi = new Float64Array(k), lo = new Float64Array(k), special = new Float64Array(k);
  for (let g = 0; g < k; g++) {
    special[g] = specialValue(col.floatSpecial(pick[g]));
    const fast = col.floatSumParts(pick[g]);
    if (fast) { [hi[g], lo[g]] = fast; continue; }
    const s = col.floatSum![pick[g]];
    const finite: ExactFloatSum = { ...s, special: 0 };
    hi[g] = exactSumValue(finite);
    if (!Number.isFinite(hi[g])) continue;
    const h = exactOfDouble(hi[g]);
    lo[g] = exactSumValue(addExactSums(finite, { ...h, mant: -h.mant }));
  }
  return state([hi, lo, special, picked(col.count, pick)].map(float64Column));
}

/** NaN present in a float group (the GPU min/max skip NaN; CPU order puts NaN above every number). */
function hasNaN(col: DecodedColumn, g: number): boolean {
  return (col.floatSpecial(g) & 1) === 1;
}

/** MinMaxAccumulator: a column of the group extremes, null where a group has no value. */
export function minMaxState(col: DecodedColumn, type: DType, sign: 1 | -1, pick: Int32Array): AggState {
  const k = pick.length;
  const valid = validityFromFlags((g) => col.count[pick[g]] > 0, k);
  const src = sign > 0 ? col.max : col.min;
  if (type === 'float64') {
    const values = new Float64Array(k);
    for (let g = 0; g < k; g++) {
      const v = (src as Float64Array)[pick[g]];
      // Max is NaN when any value is; min is NaN only when all are (then the GPU saw no number).
      values[g] = (sign > 0 && hasNaN(col, pick[g])) || Number.isNaN(v) ? NaN : v;
      if (col.count[pick[g]] === 0) values[g] = 0;
    }
    return state([{ type: 'float64', values, valid }]);
  }
  const values = new BigInt64Array(k);
  for (let g = 0; g < k; g++) values[g] = col.count[pick[g]] > 0 ? (src as BigInt64Array)[pick[g]] : 0n;
  return state([{ type: type as 'int64' | 'timestamp', values, valid }]);
}
