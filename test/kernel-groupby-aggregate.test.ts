import { describe, expect, it } from 'vitest';
import { groupbyAggregate, groupbyAggregateCpu, type AggColumnInput, type GroupAggregates, type GroupKeys } from '../src/kernels/groupby-aggregate.js';
import { exactSumValue } from '../src/kernels/float-sum.js';
import { firstDifference, skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';

/** Deterministic pseudo-random numbers (mulberry32). */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function int64Keys(values: bigint[], nullEvery = 0): GroupKeys {
  const v = BigInt64Array.from(values);
  return { words: new Uint32Array(v.buffer), valid: nullEvery ? Uint8Array.from(values, (_, i) => (i % nullEvery === 3 ? 0 : 1)) : null };
}

function intColumn(values: bigint[], valid: Uint8Array | null = null): AggColumnInput {
  return { type: 'int64', words: new Uint32Array(BigInt64Array.from(values).buffer), valid };
}

function expectSame(gpu: GroupAggregates, cpu: GroupAggregates) {
  expect(gpu.groups).toBe(cpu.groups);
  expect(firstDifference(gpu.firstRow, cpu.firstRow)).toBe(-1);
  expect(firstDifference(gpu.keyWords, cpu.keyWords)).toBe(-1);
  expect(firstDifference(gpu.nullKey, cpu.nullKey)).toBe(-1);
  expect(firstDifference(gpu.rows, cpu.rows)).toBe(-1);
  gpu.columns.forEach((g, c) => {
    const r = cpu.columns[c];
    expect(firstDifference(g.count, r.count)).toBe(-1);
    if (r.intSum) expect(g.intSum).toEqual(r.intSum);
    if (r.floatSumValue) expect(firstDifference(g.floatSumValue!, r.floatSumValue)).toBe(-1);
    expect(firstDifference(g.min, r.min)).toBe(-1);
    expect(firstDifference(g.max, r.max)).toBe(-1);
  });
}

describe.skipIf(skipGpuTests)('groupby-aggregate kernel', () => {
  it('matches the CPU twin on random int64 keys with nulls, negative values and float columns', async () => {
    const ctx = await testGpu();
    const rand = rng(1);
    const n = 50_000;
    const keys = Array.from({ length: n }, () => BigInt(Math.floor(rand() * 500) - 250) * 0x1_0000_0001n);
    const ints = Array.from({ length: n }, () => BigInt(Math.floor((rand() - 0.5) * 2 ** 40)));
    const floats = Float64Array.from({ length: n }, () => (rand() - 0.3) * 10 ** Math.floor(rand() * 12 - 4));
    const fValid = Uint8Array.from({ length: n }, () => (rand() < 0.1 ? 0 : 1));
    const k = int64Keys(keys, 17);
    const cols: AggColumnInput[] = [intColumn(ints), { type: 'float64', values: floats, valid: fValid }];
    const gpu = await groupbyAggregate(ctx, k, cols, { expectedGroups: 16 }); // forces table growth
    const cpu = groupbyAggregateCpu(k, cols);
    expect(cpu.groups).toBe(501);
    expectSame(gpu, cpu);
    // Against a plain float64 reference too (the spec's 1e-12 relative bar).
    const ref = new Map<number, number>();
    for (let i = 0; i < n; i++) if (i % 17 !== 3 && fValid[i]) ref.set(Number(keys[i]), (ref.get(Number(keys[i])) ?? 0) + floats[i]);
    for (let g = 0; g < gpu.groups; g++) {
      if (gpu.nullKey[g]) continue;
      const key = Number(new BigInt64Array(gpu.keyWords.slice(2 * g, 2 * g + 2).buffer)[0]);
      const want = ref.get(key)!;
      expect(Math.abs(gpu.columns[1].floatSumValue![g] - want)).toBeLessThanOrEqual(1e-12 * Math.abs(want) + 1e-300);
    }
  });

  it('keeps int64 sums exact past 2^53 and past 2^64, with all rows in one group', async () => {
    const ctx = await testGpu();
    const n = 20_000;
    const big = 0x7fff_ffff_ffff_0000n;
    const vals = Array.from({ length: n }, (_, i) => (i % 3 === 0 ? -big : big) + BigInt(i));
    const k = int64Keys(new Array(n).fill(42n));
    const gpu = await groupbyAggregate(ctx, k, [intColumn(vals)]);
    expect(gpu.groups).toBe(1);
    expect(gpu.columns[0].intSum![0]).toBe(vals.reduce((a, b) => a + b, 0n));
    expectSame(gpu, groupbyAggregateCpu(k, [intColumn(vals)]));
  });

  it('gives every row its own group, and separates keys whose low words collide', async () => {
    const ctx = await testGpu();
    const n = 30_000;
    // Same lo word, different hi words: only a full-key comparison keeps them apart.
    const keys = Array.from({ length: n }, (_, i) => (BigInt(i) << 32n) | 7n);
    const vals = Array.from({ length: n }, (_, i) => BigInt(-i));
    const k = int64Keys(keys);
    const gpu = await groupbyAggregate(ctx, k, [intColumn(vals)], { expectedGroups: n });
    expect(gpu.groups).toBe(n);
    expectSame(gpu, groupbyAggregateCpu(k, [intColumn(vals)]));
  });

  it('sums floats exactly where float64 addition would lose digits, and handles NaN/inf/nulls', async () => {
    const ctx = await testGpu();
    const vals = Float64Array.from([1e16, 1, 1, -1e16, 0.1, 2 ** -60, 3, NaN, 5, Infinity, -2.5, 2.5, 1e300, -1e300]);
    const keys = int64Keys([1n, 1n, 1n, 1n, 1n, 1n, 2n, 2n, 3n, 3n, 4n, 4n, 5n, 5n]);
    const col: AggColumnInput = { type: 'float64', values: vals, valid: null };
    const gpu = await groupbyAggregate(ctx, keys, [col]);
    const sums = gpu.columns[0].floatSumValue!;
    expect(sums[0]).toBe(2 + 0.1 + 2 ** -60); // exact: the 1s survive next to 1e16
    expect(Number.isNaN(sums[1])).toBe(true);
    expect(sums[2]).toBe(Infinity);
    expect(sums[3]).toBe(0);
    expect(sums[4]).toBe(0);
    expect(gpu.columns[0].max[1]).toBe(3); // NaN is skipped by min/max
    expect(gpu.columns[0].min[3]).toBe(-2.5);
    expect(exactSumValue(gpu.columns[0].floatSum![0])).toBe(sums[0]);
    expectSame(gpu, groupbyAggregateCpu(keys, [col]));
  });
});
