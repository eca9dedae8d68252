// Exact float64 sums as (integer mantissa, binary exponent) pairs: what the GPU groupby returns per
// group, combined across chunks exactly in BigInt and rounded to a double once at the end, so the
// result does not depend on how rows were split into chunks or in which order threads ran.

export interface ExactFloatSum {
  /** The sum is mant · 2^exp2 (when no special value was seen). */
  mant: bigint;
  exp2: number;
  /** 1: a NaN was summed, 2: +Infinity, 4: -Infinity. */
  special: number;
}

export const ZERO_SUM: ExactFloatSum = { mant: 0n, exp2: 0, special: 0 };

export function addExactSums(a: ExactFloatSum, b: ExactFloatSum): ExactFloatSum {
  const special = a.special | b.special;
  if (a.mant === 0n) return { ...b, special };
  if (b.mant === 0n) return { ...a, special };
  const e = Math.min(a.exp2, b.exp2);
  return { mant: (a.mant << BigInt(a.exp2 - e)) + (b.mant << BigInt(b.exp2 - e)), exp2: e, special };
}

/** The sum rounded once to the nearest double. */
export function exactSumValue(s: ExactFloatSum): number {
  if (s.special & 1 || (s.special & 6) === 6) return NaN;
  if (s.special & 2) return Infinity;
  if (s.special & 4) return -Infinity;
  if (s.mant === 0n) return 0;
  // Keep 64 significant bits plus a sticky bit, so Number() rounds once, correctly.
  const neg = s.mant < 0n;
  let m = neg ? -s.mant : s.mant;
  let e = s.exp2;
  const bits = bitLength(m);
  if (bits > 64) {
    const drop = BigInt(bits - 64);
    const sticky = (m & ((1n << drop) - 1n)) !== 0n ? 1n : 0n;
    m = ((m >> drop) << 1n) | sticky;
    e += bits - 64 - 1;
  }
  // Scale in two steps so that 2^e itself never under- or overflows.
  const v = Number(m) * 2 ** Math.trunc(e / 2) * 2 ** (e - Math.trunc(e / 2));
  return neg ? -v : v;
}

/** Bits of m > 0 (toString(2) is slow): from its double's exponent, corrected by one either way. */
function bitLength(m: bigint): number {
  const approx = Number(m);
  if (!Number.isFinite(approx)) return m.toString(2).length;
  let bits = Math.floor(Math.log2(approx)) + 1;
  if (m >> BigInt(bits - 1) === 0n) bits--;
  else if (m >> BigInt(bits) !== 0n) bits++;
  return bits;
}

const f64 = new Float64Array(1);
const words = new Uint32Array(f64.buffer);

/** A double as an exact (mant, exp2) pair. */
export function exactOfDouble(x: number): ExactFloatSum {
  if (Number.isNaN(x)) return { mant: 0n, exp2: 0, special: 1 };
  if (!Number.isFinite(x)) return { mant: 0n, exp2: 0, special: x > 0 ? 2 : 4 };
  f64[0] = x;
  const hi = words[1];
  const e = (hi >>> 20) & 0x7ff;
  let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(words[0]);
  if (e !== 0) mant |= 1n << 52n;
  if (hi >>> 31) mant = -mant;
  return { mant, exp2: Math.max(e, 1) - 1075, special: 0 };
}
