// The plain-data form of one aggregate's partial result, and small helpers for growable per-group arrays.
import type { Column, Float64Column } from '../../batch.js';

/**
 * Partial state of one aggregate. `perGroup` columns have one row per group (row g = group g), so
 * taking a subset of groups is `takeColumn`. `pairs` (nunique only) lists distinct (group, value)
 * pairs as [int64 group id column, value column]. Only typed arrays: survives structured clone.
 */
export interface AggState { perGroup: Column[]; pairs: Column[] | null }

/** An accumulator for one aggregate over groups identified by dense ids. */
export interface Accumulator {
  /** Makes room for group ids < groups (new groups start empty). */
  ensure(groups: number): void;
  /** Folds in rows 0..length of `col` (null for count()); row i belongs to group gids[i], -1 = skip. */
  add(col: Column | null, gids: Int32Array, length: number): void;
  /** Folds in another partial state; its group g belongs to this accumulator's group map[g]. */
  merge(src: AggState, map: Int32Array): void;
  state(groups: number): AggState;
  /** Distinct (group, value) pairs held, for accumulators whose state is such pairs (nunique). */
  pairCount?(): number;
  /** The result column, one row per group. */
  finalize(groups: number): Column;
}

export function growFloat64(a: Float64Array, need: number): Float64Array {
  if (need <= a.length) return a;
  const b = new Float64Array(Math.max(need, a.length * 2, 16));
  b.set(a);
  return b;
}

export function float64Column(values: Float64Array): Float64Column {
  return { type: 'float64', values, valid: null };
}

/** Validity mask from a per-group "has a value" flag; null when every group has one. */
export function validityFromFlags(present: (g: number) => boolean, groups: number): Uint8Array | null {
  let valid: Uint8Array | null = null;
  for (let g = 0; g < groups; g++) {
    if (present(g)) continue;
    if (valid === null) valid = new Uint8Array(groups).fill(1);
    valid[g] = 0;
  }
  return valid;
}

/** An int64 column from non-negative integral doubles (< 2^53), written as (lo, hi) words. */
export function int64FromCounts(counts: Float64Array, groups: number, valid: Uint8Array | null = null): Column {
  const words = new Int32Array(groups * 2);
  for (let g = 0; g < groups; g++) {
    const n = counts[g];
    words[2 * g] = n % 4294967296;
    words[2 * g + 1] = Math.floor(n / 4294967296);
  }
  return { type: 'int64', values: new BigInt64Array(words.buffer), valid };
}

/** The values of a column known to be float64 (per-group state columns are). */
export function floatValues(col: Column): Float64Array {
  return (col as Float64Column).values;
}
