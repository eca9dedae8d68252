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

// The helpers below work on limbs in scratch arrays: doubleDoubleOfLimbs runs once per group of a
// high-cardinality result, and allocating its limb arrays cost more than the arithmetic.
const DIFF = new Uint32Array(6);
const KEPT = new Uint32Array(6);
const REST = new Uint32Array(6);

/** Bits [pos, pos + count) of m's first `length` little-endian 32-bit limbs (count ≤ 32; bits past the end are 0). */
function bitsAt(m: Uint32Array, length: number, pos: number, count: number): number {
  const limb = pos >>> 5, off = pos & 31;
  let v = limb < length ? m[limb] >>> off : 0;
  if (off > 0 && limb + 1 < length) v = (v | (m[limb + 1] << (32 - off))) >>> 0;
  return count === 32 ? v >>> 0 : (v & ((2 ** count) - 1)) >>> 0;
}

/** Whether any bit below `pos` is set. */
function anyBelow(m: Uint32Array, length: number, pos: number): boolean {
  const limb = pos >>> 5;
  for (let k = 0; k < Math.min(limb, length); k++) if (m[k] !== 0) return true;
  return limb < length && (m[limb] & ((2 ** (pos & 31)) - 1)) !== 0;
}

/** 2^e for the normal exponents e = -1022..1023, at POW2[e + 1022] (Math.pow per group was a third of decoding). */
const POW2 = Float64Array.from({ length: 2046 }, (_, i) => 2 ** (i - 1022));

/**
 * x · 2^e (x a non-negative integer): one exact product when 2^e is a normal double (x ≥ 1 keeps
 * the product normal or infinite), else in two steps so that 2^e itself never under- or overflows.
 */
function scaled(x: number, e: number): number {
  if (e >= -1022 && e <= 1023) return x * POW2[e + 1022];
  return x * 2 ** Math.trunc(e / 2) * 2 ** (e - Math.trunc(e / 2));
}

/** What the last roundLimbs kept: the rounded integer mantissa and the bit position of its unit (mant · 2^low). */
let roundedMant = 0, roundedLow = 0;

/** m · 2^e (m ≥ 0, its first `length` limbs) rounded once to the nearest double, ties to even; sets roundedMant and roundedLow. */
function roundLimbs(m: Uint32Array, length: number, e: number): number {
  let t = length - 1;
  while (t >= 0 && m[t] === 0) t--;
  roundedMant = 0;
  roundedLow = 0;
  if (t < 0) return 0;
  const bits = 32 * t + 32 - Math.clz32(m[t]);
  if (bits <= 53) {
    let v = 0;
    for (let k = t; k >= 0; k--) v = v * 2 ** 32 + m[k]; // exact: fewer than 54 bits
    roundedMant = v;
    return scaled(v, e);
  }
  const low = bits - 53;
  let mant = bitsAt(m, length, low + 32, 21) * 2 ** 32 + bitsAt(m, length, low, 32);
  if (bitsAt(m, length, low - 1, 1) === 1 && (anyBelow(m, length, low - 1) || mant % 2 === 1)) mant += 1;
  roundedMant = mant;
  roundedLow = low;
  return scaled(mant, low + e);
}

/** a − b over `length` limbs (from aAt and bAt): the sign (−1, 0, 1), and |a − b| in out unless 0. */
function subtractLimbs(a: Uint32Array, aAt: number, b: Uint32Array, bAt: number, length: number, out: Uint32Array): number {
  let k = length - 1;
  while (k >= 0 && a[aAt + k] === b[bAt + k]) k--;
  if (k < 0) return 0;
  const sign = a[aAt + k] > b[bAt + k] ? 1 : -1;
  let borrow = 0;
  for (let i = 0; i < length; i++) {
    const d = sign > 0 ? a[aAt + i] - b[bAt + i] - borrow : b[bAt + i] - a[aAt + i] - borrow;
    out[i] = d < 0 ? d + 2 ** 32 : d;
    borrow = d < 0 ? 1 : 0;
  }
  return sign;
}

/** mant · 2^low (mant < 2^54) as `length` limbs in out. */
function limbsOf(mant: number, low: number, out: Uint32Array, length: number): void {
  out.fill(0, 0, length);
  for (let i = 0; i < 2; i++) {
    const w = i === 0 ? mant % 2 ** 32 : Math.floor(mant / 2 ** 32);
    const pos = low + 32 * i, limb = pos >>> 5, off = pos & 31;
    if (limb < length) out[limb] = (out[limb] | (w << off)) >>> 0;
    if (off > 0 && limb + 1 < length) out[limb + 1] = (out[limb + 1] | (w >>> (32 - off))) >>> 0;
  }
}

/**
 * The GPU's fixed-point float sum record (groupby-aggregate.wgsl.ts: word [2] the largest biased
 * exponent, [4..8] positive limbs, [9..13] negative limbs, from `at`) as the double-double
 * (hi, lo) of the exact sum — hi the sum rounded once, lo the rest rounded once, as exactSumValue
 * gives through BigInt — with plain numbers (high-cardinality results decode many of them). Null
 * where double rounding could differ (a subnormal or infinite hi): callers then use BigInt.
 */
export function doubleDoubleOfLimbs(words: Uint32Array, at: number): [number, number] | null {
  const e = words[at + 2] - 1075 - 64;
  const sign = subtractLimbs(words, at + 4, words, at + 9, 5, DIFF);
  if (sign === 0) return [0, 0];
  DIFF[5] = 0;
  const hi = roundLimbs(DIFF, 5, e);
  if (!(Math.abs(hi) >= 2 ** -1022) || !Number.isFinite(hi)) return null;
  limbsOf(roundedMant, roundedLow, KEPT, 6);
  const restSign = subtractLimbs(DIFF, 0, KEPT, 0, 6, REST);
  return [sign * hi, restSign === 0 ? 0 : sign * restSign * roundLimbs(REST, 6, e)];
}
