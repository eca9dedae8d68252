// Seedable randomness for ML. Two kinds:
// - `Rng`: a sequential xoshiro128** stream, derived from (seed, purpose, index), for work done in
//   one place (a tree's bootstrap, a generator chunk, choosing centres).
// - `rowUniform`: a counter-based hash of (seed, purpose, round, global row), for per-row decisions
//   taken inside partitions, so the outcome does not depend on how rows are split into partitions.

/** splitmix32 finaliser: a good 32-bit mixing function. */
function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/** FNV-1a hash of a purpose name, so streams for different purposes never coincide. */
function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Low and high 32-bit words of a non-negative integer below 2^53. */
function words(n: number): [number, number] {
  return [n >>> 0, Math.floor(n / 4294967296) >>> 0];
}

/** A 32-bit key combining all parts; each step mixes so that parts do not commute. */
function combine(parts: readonly number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) h = mix32((h + 0x9e3779b9 + p) >>> 0) ^ Math.imul(h, 0x2545f491);
  return mix32(h >>> 0);
}

export class Rng {
  private s0: number; private s1: number; private s2: number; private s3: number;
  private spareNormal: number | null = null;

  /** Stream for (seed, purpose, index): independent streams for each tree, chunk or restart. */
  constructor(seed: number, purpose: string, index = 0) {
    const [slo, shi] = words(seed);
    const [ilo, ihi] = words(index);
    const key = [slo, shi, hashName(purpose), ilo, ihi];
    this.s0 = combine([...key, 1]); this.s1 = combine([...key, 2]);
    this.s2 = combine([...key, 3]); this.s3 = combine([...key, 4]);
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1; // the all-zero state is a fixed point
  }

  /** xoshiro128** next 32-bit output. */
  nextU32(): number {
    const r = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0; this.s3 ^= this.s1; this.s1 ^= this.s2; this.s0 ^= this.s3;
    this.s2 ^= t; this.s3 = rotl(this.s3, 11);
    return r;
  }

  /** Uniform double in [0, 1) with 53 random bits. */
  nextFloat(): number {
    return ((this.nextU32() >>> 5) * 67108864 + (this.nextU32() >>> 6)) / 9007199254740992;
  }

  /** Uniform double in [lo, hi). */
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.nextFloat();
  }

  /** Uniform integer in [0, n), n ≤ 2^32, without modulo bias (Lemire's rejection). */
  nextInt(n: number): number {
    if (n <= 1) return 0;
    const limit = 4294967296 - (4294967296 % n);
    let x: number;
    do x = this.nextU32(); while (x >= limit);
    return x % n;
  }

  /** Standard normal by the Box–Muller transform (pairs; the second is kept for the next call). */
  normal(): number {
    if (this.spareNormal !== null) { const z = this.spareNormal; this.spareNormal = null; return z; }
    let u = 0;
    while (u === 0) u = this.nextFloat();
    const v = this.nextFloat();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spareNormal = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** Prepared key for `rowUniform`: hash of (seed, purpose, round), computed once per pass. */
export function rowKey(seed: number, purpose: string, round = 0): number {
  const [slo, shi] = words(seed);
  return combine([slo, shi, hashName(purpose), round]);
}

/** Uniform double in [0, 1) for global row `row` under `key`; depends only on (key, row). */
export function rowUniform(key: number, row: number): number {
  const lo = row >>> 0, hi = Math.floor(row / 4294967296) >>> 0;
  const a = rowHash32(key, lo);
  const b = mix32((a + Math.imul(hi ^ key, 0x9e3779b1) + lo) >>> 0);
  return ((a >>> 5) * 67108864 + (b >>> 6)) / 9007199254740992;
}

/** 32 random bits for index `i` (< 2^32) under `key`; depends only on (key, i). The GPU's twin is WGSL_ROW_HASH. */
export function rowHash32(key: number, i: number): number {
  return mix32((key ^ mix32((i + 0x632be5ab) >>> 0)) >>> 0);
}

/** The high 32 bits of the 64-bit product a × b of two u32, from 16-bit pieces (exact; WGSL has no u64). */
export function mulHi32(a: number, b: number): number {
  const a0 = a & 0xffff, a1 = a >>> 16, b0 = b & 0xffff, b1 = b >>> 16;
  const p01 = a0 * b1, p10 = a1 * b0;
  const mid = ((a0 * b0) >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  return (a1 * b1 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16)) >>> 0;
}

/**
 * Bootstrap counts of `n` rows under `key`: draw i picks row mulHi32(rowHash32(key, i), n), so
 * each draw is independent of the others and a GPU can make them all at once (forest kernels).
 */
export function bootstrapCounts(key: number, n: number): Int32Array {
  const w = new Int32Array(n);
  for (let i = 0; i < n; i++) w[mulHi32(rowHash32(key, i), n)]++;
  return w;
}
