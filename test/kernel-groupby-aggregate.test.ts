import { describe, expect, it } from 'vitest';
import { accumulateColumn, DecodedColumn, freeKeyTable, groupbyAggregate, groupbyAggregateCpu, insertKeys, type AggColumnInput, type GroupAggregates, type GroupKeys } from '../src/kernels/groupby-aggregate.js';
import { freeBuffer, readU32, storageBuffer, uploadNew } from '../src/engine/gpu/buffers.js';
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

  it('gives up on a table past 3/4 full, and fills one up to 3/4 exactly', async () => {
    // An overflowing pass must stop early (rows with new keys would otherwise each walk a long probe
    // of a full table): the claim that takes the table past 3/4 of its slots raises the flag.
    const ctx = await testGpu();
    const capacity = 1024;
    const tableFor = async (distinct: number) => {
      const n = 4 * distinct;
      const k = int64Keys(Array.from({ length: n }, (_, i) => BigInt(i % distinct) * 0x9e37_79b9n));
      const keyBuf = await uploadNew(ctx, k.words, 'test keys');
      const maskBuf = await uploadNew(ctx, new Uint32Array([0]), 'test mask');
      const table = await insertKeys(ctx, keyBuf, maskBuf, false, n, capacity);
      freeBuffer(ctx, keyBuf);
      freeBuffer(ctx, maskBuf);
      if (table) freeKeyTable(ctx, table);
      return table !== null;
    };
    expect(await tableFor(768)).toBe(true);
    expect(await tableFor(769)).toBe(false);
    // Grown from a far too small first guess, the grouping is still the CPU twin's.
    const n = 60_000;
    const k = int64Keys(Array.from({ length: n }, (_, i) => BigInt((i * 7919) % 50_000)));
    const col = intColumn(Array.from({ length: n }, (_, i) => BigInt(i)));
    expectSame(await groupbyAggregate(ctx, k, [col], { expectedGroups: 1 }), groupbyAggregateCpu(k, [col]));
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

/** Group of each row in first-appearance order (the order of both implementations' results). */
function rowGroups(keys: GroupKeys): { group: Int32Array; groups: number } {
  const n = keys.words.length / 2;
  const seen = new Map<string, number>();
  const group = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const k = keys.valid && !keys.valid[i] ? 'null' : `${keys.words[2 * i] >>> 0},${keys.words[2 * i + 1] >>> 0}`;
    let g = seen.get(k);
    if (g === undefined) { g = seen.size; seen.set(k, g); }
    group[i] = g;
  }
  return { group, groups: seen.size };
}

const bitsOf = new Float64Array(1);
const wordsOf = new Uint32Array(bitsOf.buffer);
const limbsOf = (x: bigint, count: number) => Array.from({ length: count }, (_, k) => Number(BigInt.asUintN(32, x >> BigInt(32 * k))));

/**
 * The accumulator words the kernels define (groupby-aggregate.wgsl.ts), per group, as
 * DecodedColumn.sumWords holds them. int64: [sum of the values' unsigned bit patterns, 4 limbs;
 * negatives lo, hi]. float64: [count lo, hi; largest exponent; special flags; positive limbs
 * 0..4; negative limbs 0..4], each mantissa shifted to 64 bits below the group's largest
 * exponent (bits below that unit dropped). A lost carry or a limb added at the wrong place
 * shows here even where the rounded sum would hide it.
 */
function expectedSumWords(group: Int32Array, groups: number, col: AggColumnInput): Uint32Array {
  const n = group.length;
  const present = (i: number) => col.valid === null || col.valid[i] === 1;
  if (col.type === 'int64') {
    const vals = new BigInt64Array(col.words.buffer, col.words.byteOffset, n);
    const sum = new Array<bigint>(groups).fill(0n);
    const neg = new Array<bigint>(groups).fill(0n);
    for (let i = 0; i < n; i++) {
      if (!present(i)) continue;
      sum[group[i]] += BigInt.asUintN(64, vals[i]);
      if (vals[i] < 0n) neg[group[i]]++;
    }
    return Uint32Array.from(sum.flatMap((s, g) => [...limbsOf(s, 4), ...limbsOf(neg[g], 2)]));
  }
  const count = new Array<number>(groups).fill(0), maxExp = new Array<number>(groups).fill(0), flags = new Array<number>(groups).fill(0);
  const pos = new Array<bigint>(groups).fill(0n), neg = new Array<bigint>(groups).fill(0n);
  const parts = (v: number) => { bitsOf[0] = v; return { lo: wordsOf[0], hi: wordsOf[1], e: (wordsOf[1] >>> 20) & 0x7ff }; };
  for (let i = 0; i < n; i++) {
    if (!present(i)) continue;
    const g = group[i], { lo, hi, e } = parts(col.values[i]);
    count[g]++;
    if (e === 0x7ff) flags[g] |= (hi & 0xfffff) !== 0 || lo !== 0 ? 1 : hi >>> 31 ? 4 : 2;
    else maxExp[g] = Math.max(maxExp[g], Math.max(e, 1));
  }
  for (let i = 0; i < n; i++) {
    if (!present(i)) continue;
    const g = group[i], { lo, hi, e } = parts(col.values[i]);
    if (e === 0x7ff) continue;
    const m = (BigInt((hi & 0xfffff) | (e ? 0x100000 : 0)) << 32n) | BigInt(lo);
    const shift = Math.max(e, 1) - maxExp[g] + 64;
    const c = shift >= 0 ? m << BigInt(shift) : m >> BigInt(-shift);
    if (hi >>> 31) neg[g] += c; else pos[g] += c;
  }
  return Uint32Array.from(count.flatMap((c, g) => [c >>> 0, Math.floor(c / 2 ** 32), maxExp[g], flags[g], ...limbsOf(pos[g], 5), ...limbsOf(neg[g], 5)]));
}

function expectSameWords(gpu: GroupAggregates<DecodedColumn>, keys: GroupKeys, cols: readonly AggColumnInput[]) {
  const { group, groups } = rowGroups(keys);
  cols.forEach((col, c) => expect(firstDifference(gpu.columns[c].sumWords, expectedSumWords(group, groups, col))).toBe(-1));
}

/** Floats of one group: exponents spread over ~100 binades around 2^center, so a group's values
 *  land above, across and below the unit 64 bits under its largest; both signs. */
function spreadFloat(rand: () => number, center: number): number {
  const e = Math.min(1023, center + Math.floor(rand() * 100) - 80);
  return (rand() < 0.4 ? -1 : 1) * (1 + rand()) * 2 ** e;
}

function int64Near62(rand: () => number): bigint {
  const r = rand();
  if (r < 0.001) return -(1n << 63n);
  if (r < 0.002) return (1n << 63n) - 1n;
  return (r < 0.5 ? -1n : 1n) * ((1n << 62n) + BigInt(Math.floor(rand() * 2 ** 50)));
}

describe.skipIf(skipGpuTests)('groupby-aggregate kernel: workgroup-local pre-aggregation', () => {
  it.each([1, 3])('%i group(s) of 100k rows: local limbs carry (int64 near ±2^62, floats over 2000 binades, NaN/±inf, null keys)', async (k) => {
    const ctx = await testGpu();
    const rand = rng(10 + k);
    const n = 100_000;
    const keyVals = Array.from({ length: n }, () => BigInt(Math.floor(rand() * k)) * -0x1_0000_0003n);
    const keys = int64Keys(keyVals, k === 1 ? 0 : 29);
    const centers = [0, 900, -1000]; // the last group's values are mostly subnormal
    const group = (i: number) => (keys.valid && !keys.valid[i] ? 1 : Number(keyVals[i] / -0x1_0000_0003n));
    const floats = Float64Array.from({ length: n }, (_, i) => {
      const r = rand();
      if (group(i) === k - 1 && r < 0.003) return [NaN, Infinity, -Infinity][Math.floor(r * 1000)];
      if (r < 0.01) return r < 0.005 ? 0 : -0;
      return spreadFloat(rand, centers[group(i)]);
    });
    const ints = Array.from({ length: n }, () => int64Near62(rand));
    const valid = Uint8Array.from({ length: n }, () => (rand() < 0.05 ? 0 : 1));
    // The third column's values share a few hi words, so many rows take part in minmax_lo.
    const cols: AggColumnInput[] = [intColumn(ints, valid), { type: 'float64', values: floats, valid }, intColumn(ints.map((v) => v >> 40n))];
    const gpu = await groupbyAggregate(ctx, keys, cols);
    const cpu = groupbyAggregateCpu(keys, cols);
    expect(cpu.groups).toBe(k === 1 ? 1 : k + 1);
    expectSame(gpu, cpu);
    expectSameWords(gpu, keys, cols);
  });

  it.each([
    ['5 000 groups', 5_000, 200_000],
    ['60 000 groups', 60_000, 200_000],
    ['every row its own group', 0, 40_000],
  ])('%s: more slots than a workgroup caches, so rows also take the global fallback', async (_name, k, n) => {
    const ctx = await testGpu();
    const rand = rng(k + 5);
    const keyVals = Array.from({ length: n }, (_, i) => (k ? BigInt(Math.floor(rand() * k)) : BigInt(i)) * 0x9e37_79b9_7f4a_7c15n % (1n << 63n));
    const keys = int64Keys(keyVals, 23);
    const ints = Array.from({ length: n }, () => BigInt.asIntN(64, BigInt(Math.floor(rand() * 2 ** 32)) << 32n | BigInt(Math.floor(rand() * 2 ** 32))));
    const floats = Float64Array.from({ length: n }, () => (rand() < 0.002 ? NaN : rand() < 0.002 ? -Infinity : (rand() - 0.5) * 2 ** Math.floor(rand() * 80 - 40)));
    const fValid = Uint8Array.from({ length: n }, () => (rand() < 0.1 ? 0 : 1));
    const cols: AggColumnInput[] = [intColumn(ints), { type: 'float64', values: floats, valid: fValid }];
    const gpu = await groupbyAggregate(ctx, keys, cols, { expectedGroups: k || n });
    const cpu = groupbyAggregateCpu(keys, cols);
    expectSame(gpu, cpu);
    expectSameWords(gpu, keys, cols);
  });

  it('carries out of a workgroup\'s local limbs into the device limbs above them (one workgroup takes every row)', async () => {
    const ctx = await testGpu();
    const rand = rng(99);
    const n = 12_000, slots = 3;
    // Slot per row given directly (as insert_keys would write it); one workgroup then sums
    // ~4000 rows per slot, most at the top of one binade: > 2^128 in 64-bit units, past the
    // four local limbs of a float sum.
    const rowSlot = Uint32Array.from({ length: n }, (_, i) => i % slots);
    const floats = Float64Array.from({ length: n }, (_, i) => {
      if (i % 10 === 1) return (rand() - 0.5) * 2 ** 100;
      return (i % 7 === 0 ? -1 : 1) * (2 ** 53 - 1 - Math.floor(rand() * 1000)) * 2 ** 150;
    });
    const ints = Array.from({ length: n }, () => int64Near62(rand));
    const keys = int64Keys(Array.from(rowSlot, BigInt));
    const cols: AggColumnInput[] = [intColumn(ints), { type: 'float64', values: floats, valid: null }];
    const slotBuf = await uploadNew(ctx, rowSlot, 'row slots');
    const noNulls = storageBuffer(ctx, 16, 'validity (no nulls)');
    const cpu = groupbyAggregateCpu(keys, cols);
    const { group, groups } = rowGroups(keys);
    for (const workgroups of [1, 2]) {
      for (const [c, col] of cols.entries()) {
        const isFloat = col.type === 'float64';
        const words = isFloat ? new Uint32Array(col.values.buffer) : col.words;
        const values = await uploadNew(ctx, words, 'values');
        const { sum, minMax } = accumulateColumn(ctx, slotBuf, slots, { type: col.type, values, mask: noNulls, hasNulls: false }, n, workgroups);
        const decoded = new DecodedColumn(col.type, { sum: await readU32(ctx, sum, slots * (isFloat ? 14 : 8)), minMax: await readU32(ctx, minMax!, slots * 4) }, 3);
        for (const b of [values, sum, minMax]) freeBuffer(ctx, b);
        const want = cpu.columns[c];
        expect(firstDifference(decoded.sumWords, expectedSumWords(group, groups, col))).toBe(-1);
        expect(firstDifference(decoded.count, want.count)).toBe(-1);
        expect(firstDifference(decoded.min, want.min)).toBe(-1);
        expect(firstDifference(decoded.max, want.max)).toBe(-1);
        if (isFloat) {
          expect(firstDifference(decoded.floatSumValue!, want.floatSumValue!)).toBe(-1);
          expect(decoded.sumWords[4 + 4]).not.toBe(0); // the positive sums did pass 2^128
        } else {
          expect(decoded.intSum).toEqual(want.intSum);
        }
      }
    }
    freeBuffer(ctx, slotBuf);
    freeBuffer(ctx, noNulls);
  });
});
