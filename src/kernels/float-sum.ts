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

/** Bits [pos, pos + count) of a little-endian array of 32-bit limbs (count ≤ 32; bits past the end are 0). */
function bitsAt(m: Uint32Array, pos: number, count: number): number {
  const limb = pos >>> 5, off = pos & 31;
  let v = limb < m.length ? m[limb] >>> off : 0;
  if (off > 0 && limb + 1 < m.length) v = (v | (m[limb + 1] << (32 - off))) >>> 0;
  return count === 32 ? v >>> 0 : (v & ((2 ** count) - 1)) >>> 0;
}

/** Whether any bit below `pos` is set. */
function anyBelow(m: Uint32Array, pos: number): boolean {
  const limb = pos >>> 5;
  for (let k = 0; k < Math.min(limb, m.length); k++) if (m[k] !== 0) return true;
  return limb < m.length && (m[limb] & ((2 ** (pos & 31)) - 1)) !== 0;
}

/** x · 2^e in two steps, so that 2^e itself never under- or overflows. */
function scaled(x: number, e: number): number {
  return x * 2 ** Math.trunc(e / 2) * 2 ** (e - Math.trunc(e / 2));
}

/**
 * m · 2^e rounded once to the nearest double (ties to even), m ≥ 0 as 32-bit limbs, with the
 * rounded integer mantissa and the bit position of its unit in m (mant · 2^low is what was kept).
 */
function roundLimbs(m: Uint32Array, e: number): { value: number; mant: number; low: number } {
  let t = m.length - 1;
  while (t >= 0 && m[t] === 0) t--;
  if (t < 0) return { value: 0, mant: 0, low: 0 };
  const bits = 32 * t + 32 - Math.clz32(m[t]);
  if (bits <= 53) {
    let v = 0;
    for (let k = t; k >= 0; k--) v = v * 2 ** 32 + m[k]; // exact: fewer than 54 bits
    return { value: scaled(v, e), mant: v, low: 0 };
  }
  const low = bits - 53;
  let mant = bitsAt(m, low + 32, 21) * 2 ** 32 + bitsAt(m, low, 32);
  if (bitsAt(m, low - 1, 1) === 1 && (anyBelow(m, low - 1) || mant % 2 === 1)) mant += 1;
  return { value: scaled(mant, low + e), mant, low };
}

/** a − b for limb arrays of equal length: the sign (−1, 0, 1) and |a − b| as limbs. */
function subtractLimbs(a: Uint32Array, b: Uint32Array): [number, Uint32Array] {
  let k = a.length - 1;
  while (k >= 0 && a[k] === b[k]) k--;
  if (k < 0) return [0, new Uint32Array(a.length)];
  const [big, small, sign] = a[k] > b[k] ? [a, b, 1] : [b, a, -1];
  const out = new Uint32Array(a.length);
  let borrow = 0;
  for (let i = 0; i < a.length; i++) {
    const d = big[i] - small[i] - borrow;
    out[i] = d < 0 ? d + 2 ** 32 : d;
    borrow = d < 0 ? 1 : 0;
  }
  return [sign, out];
}

/** mant · 2^low as limbs (mant < 2^54). */
function limbsOf(mant: number, low: number, length: number): Uint32Array {
  const out = new Uint32Array(length + 1);
  const words = [mant % 2 ** 32, Math.floor(mant / 2 ** 32)];
  words.forEach((w, i) => {
    const pos = low + 32 * i, limb = pos >>> 5, off = pos & 31;
    if (limb < out.length) out[limb] = (out[limb] | (w << off)) >>> 0;
    if (off > 0 && limb + 1 < out.length) out[limb + 1] = (out[limb + 1] | (w >>> (32 - off))) >>> 0;
  });
  return out;
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
  const [sign, m] = subtractLimbs(words.subarray(at + 4, at + 9), words.subarray(at + 9, at + 14));
  if (sign === 0) return [0, 0];
  const hi = roundLimbs(m, e);
  if (!(Math.abs(hi.value) >= 2 ** -1022) || !Number.isFinite(hi.value)) return null;
  const [restSign, rest] = subtractLimbs(new Uint32Array([...m, 0]), limbsOf(hi.mant, hi.low, m.length));
  return [sign * hi.value, restSign === 0 ? 0 : sign * restSign * roundLimbs(rest, e).value];
}
