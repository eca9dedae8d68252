import { describe, expect, it } from 'vitest';
import { hashJoin, hashJoinCpu } from '../src/kernels/hash-join.js';
import type { GroupKeys } from '../src/kernels/groupby-aggregate.js';
import { firstDifference, skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';

function keysOf(values: (bigint | null)[]): GroupKeys {
  const v = BigInt64Array.from(values, (x) => x ?? 0n);
  return { words: new Uint32Array(v.buffer), valid: values.includes(null) ? Uint8Array.from(values, (x) => (x === null ? 0 : 1)) : null };
}

let seed = 7;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);

describe.skipIf(skipGpuTests)('hash-join kernel', () => {
  const cases: [string, (bigint | null)[], (bigint | null)[]][] = [
    ['random keys with duplicates, negatives and nulls on both sides',
      Array.from({ length: 40_000 }, () => (rand() < 0.05 ? null : BigInt(Math.floor(rand() * 3000) - 1500))),
      Array.from({ length: 8_000 }, () => (rand() < 0.05 ? null : BigInt(Math.floor(rand() * 4000) - 2000) * 0x1_0000_0001n / 0x1_0000_0001n))],
    ['a unique dimension table with wide keys',
      Array.from({ length: 30_000 }, () => BigInt(Math.floor(rand() * 1200)) << 33n),
      Array.from({ length: 1_000 }, (_, i) => BigInt(i) << 33n)],
    ['every right row with the same key', Array.from({ length: 500 }, (_, i) => BigInt(i % 3)), new Array(1_500).fill(1n)],
    ['no matches at all', [1n, 2n, 3n], [4n, 5n]],
  ];
  for (const [name, l, r] of cases) {
    it(name, async () => {
      const ctx = await testGpu();
      const gpu = await hashJoin(ctx, keysOf(l), keysOf(r));
      const cpu = hashJoinCpu(keysOf(l), keysOf(r));
      expect(gpu.left.length).toBe(cpu.left.length);
      expect(firstDifference(gpu.left, cpu.left)).toBe(-1);
      expect(firstDifference(gpu.right, cpu.right)).toBe(-1);
      // Independent check of the pairs themselves: each pair joins equal, non-null keys.
      for (let i = 0; i < gpu.left.length; i += 97) expect(l[gpu.left[i]]).toBe(r[gpu.right[i]]);
    });
  }
});
