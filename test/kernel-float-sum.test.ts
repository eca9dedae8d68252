// The GPU float-sum record decoded into a double-double without BigInt (doubleDoubleOfLimbs)
// against the exact BigInt route (exactSumValue of the sum, then of the rest), on random records:
// sums of every size, cancellation, carries across limbs, ties, and tiny and huge exponents.
import { describe, expect, it } from 'vitest';
import { addExactSums, doubleDoubleOfLimbs, exactOfDouble, exactSumValue, type ExactFloatSum } from '../src/kernels/float-sum.js';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 4294967296; };
}

/** What floatSumState computed before: hi = the exact sum rounded, lo = the rest rounded. */
function viaBigInt(words: Uint32Array): [number, number] {
  const limbs = (at: number) => words.subarray(at, at + 5).reduceRight((acc, w) => (acc << 32n) | BigInt(w), 0n);
  const sum: ExactFloatSum = { mant: limbs(4) - limbs(9), exp2: words[2] - 1075 - 64, special: 0 };
  const hi = exactSumValue(sum);
  const h = exactOfDouble(hi);
  return [hi, exactSumValue(addExactSums(sum, { ...h, mant: -h.mant }))];
}

describe('doubleDoubleOfLimbs', () => {
  it('matches the BigInt route on 20,000 random records', () => {
    const rand = rng(7);
    let compared = 0;
    for (let i = 0; i < 20000; i++) {
      const words = new Uint32Array(14);
      words[2] = 1 + Math.floor(rand() * 2040);
      const pick = rand();
      for (let k = 4; k < 14; k++) {
        // Sparse, full, equal and boundary limbs, so that carries, cancellation and ties occur.
        const r = rand();
        words[k] = r < 0.3 ? 0 : r < 0.4 ? 0xffffffff : r < 0.5 ? 1 : Math.floor(rand() * 2 ** 32);
      }
      if (pick < 0.1) words.copyWithin(9, 4, 9); // exact cancellation
      if (pick > 0.9) for (let k = 9; k < 14; k++) words[k] = 0; // positive only
      const got = doubleDoubleOfLimbs(words, 0);
      const want = viaBigInt(words);
      if (got === null) { expect(Math.abs(want[0]) < 2 ** -1022 || !Number.isFinite(want[0])).toBe(true); continue; }
      compared++;
      expect(got).toEqual(want);
    }
    expect(compared).toBeGreaterThan(15000);
  });

  it('rounds ties to even and keeps the rest', () => {
    // 2^53 + 1 at unit 1: halfway between 2^53 and 2^53 + 2; ties to even gives 2^53, rest 1.
    const words = new Uint32Array(14);
    words[2] = 1075 + 64; // unit 2^0
    words[4] = 1; words[5] = 0x200000; // 2^53 + 1
    expect(doubleDoubleOfLimbs(words, 0)).toEqual([2 ** 53, 1]);
    words[4] = 3; // 2^53 + 3: tie, rounds up to 2^53 + 4, rest −1
    expect(doubleDoubleOfLimbs(words, 0)).toEqual([2 ** 53 + 4, -1]);
  });
});
