// Double-double accumulation (Knuth's TwoSum): each sum is kept as hi + lo, carrying about
// 106 bits, so per-partition partial sums combined in partition order round to the same
// double almost regardless of how rows were split into partitions.

/** Parallel arrays of double-double sums; entry i is hi[i] + lo[i]. */
export interface DDArray { hi: Float64Array; lo: Float64Array }

export function ddZeros(n: number): DDArray {
  return { hi: new Float64Array(n), lo: new Float64Array(n) };
}

/** acc[i] += x, exactly tracking the rounding error of the addition in lo. */
export function ddAdd(acc: DDArray, i: number, x: number): void {
  const a = acc.hi[i];
  const s = a + x;
  const bb = s - a;
  const err = (a - (s - bb)) + (x - bb);
  acc.hi[i] = s;
  acc.lo[i] += err;
}

/** acc[i] += (hi + lo) of another double-double. */
export function ddAddPair(acc: DDArray, i: number, hi: number, lo: number): void {
  ddAdd(acc, i, hi);
  ddAdd(acc, i, lo);
}

/** Sums partition results in the order given (partition order) and rounds each entry to a double. */
export function ddCombine(parts: readonly DDArray[], n: number): Float64Array {
  const acc = ddZeros(n);
  for (const p of parts) for (let i = 0; i < n; i++) ddAddPair(acc, i, p.hi[i], p.lo[i]);
  return ddRound(acc);
}

/** hi + lo of every entry, renormalised. */
export function ddRound(acc: DDArray): Float64Array {
  const out = new Float64Array(acc.hi.length);
  for (let i = 0; i < out.length; i++) out[i] = acc.hi[i] + acc.lo[i];
  return out;
}
