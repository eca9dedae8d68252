// Hash group-by on the GPU: per group count, exact int64 sums, exact float64 sums, min and max.
// The host passes per-row key words (two u32 per row: an int64 key's (lo, hi) words, or a 64-bit
// hash of a string key), reads back one small record per group, and combines in BigInt / f64.
// WGSL and the table layout: groupby-aggregate.wgsl.ts. CPU twin: groupbyAggregateCpu.

import type { Validity } from '../engine/batch.js';
import { RuntimeFailure } from '../engine/errors.js';
import type { GpuContext } from '../engine/gpu/device.js';
import { fillU32, freeBuffer, kernelFor, readU32, storageBuffer, uniformWords, uploadNew, workgroupsFor, type StagingRing } from '../engine/gpu/buffers.js';
import { exclusiveScan } from './prefix-scan.js';
import { addExactSums, exactOfDouble, exactSumValue, ZERO_SUM, type ExactFloatSum } from './float-sum.js';
import { packValidity } from './validity.js';
import * as W from './groupby-aggregate.wgsl.js';

export interface GroupKeys {
  /** Two u32 words per row. */
  words: Uint32Array | Int32Array;
  valid: Validity;
}

export type AggColumnInput =
  | { type: 'int64'; words: Uint32Array | Int32Array; valid: Validity }
  | { type: 'float64'; values: Float64Array; valid: Validity };

export interface ColumnAggregates {
  /** Non-null values per group. */
  count: Float64Array;
  /** int64 columns: exact sums (may exceed int64). */
  intSum?: bigint[];
  /** float64 columns: exact sums, and those rounded to doubles. */
  floatSum?: ExactFloatSum[];
  floatSumValue?: Float64Array;
  /** Min/max per group (meaningless where count is 0 or, for floats, all values are NaN). */
  min: BigInt64Array | Float64Array;
  max: BigInt64Array | Float64Array;
}

export interface GroupAggregates {
  groups: number;
  /** Key words per group (2 each; 0,0 for the null-key group). */
  keyWords: Uint32Array;
  /** 1 for the group of rows whose key is null. */
  nullKey: Uint8Array;
  /** First row of each group; groups are in first-appearance order. */
  firstRow: Uint32Array;
  rows: Float64Array;
  columns: ColumnAggregates[];
}

const INT_WIDTH = 8, FLOAT_WIDTH = 14, MINMAX_WIDTH = 4;

export function nextPow2(n: number): number {
  let c = 16;
  while (c < n) c *= 2;
  return c;
}

export interface GroupbyOptions {
  /** Expected distinct keys: sizes the first table; the table doubles when it fills. */
  expectedGroups?: number;
  ring?: StagingRing;
}

export async function groupbyAggregate(ctx: GpuContext, keys: GroupKeys, columns: readonly AggColumnInput[], options: GroupbyOptions = {}): Promise<GroupAggregates> {
  const n = keys.words.length / 2;
  const maxCapacity = nextPow2(2 * n);
  let capacity = Math.min(maxCapacity, nextPow2(2 * (options.expectedGroups ?? 4096)));
  const keyBuf = await uploadNew(ctx, keys.words, 'group keys', options.ring);
  const keyMask = packValidity(keys.valid, n);
  const keyMaskBuf = await uploadNew(ctx, keyMask.words, 'group key validity', options.ring);
  try {
    for (;;) {
      const table = await insertKeys(ctx, keyBuf, keyMaskBuf, keyMask.hasNulls, n, capacity);
      if (table) return await aggregateColumns(ctx, table, keys, columns, n, capacity, options.ring);
      if (capacity >= maxCapacity) throw new RuntimeFailure('GPU group-by table overflowed at full capacity');
      capacity *= 2;
    }
  } finally {
    freeBuffer(ctx, keyBuf);
    freeBuffer(ctx, keyMaskBuf);
  }
}

/** A built key table: slot owners (row + 1), rows per slot (2 words), first row per slot, slot per row. */
export interface KeyTable { owner: GPUBuffer; counts: GPUBuffer; firstRow: GPUBuffer; rowSlot: GPUBuffer }
type Table = KeyTable;

/**
 * Builds the key table over `capacity` slots (a power of two; slot `capacity` holds null keys).
 * Null when it overflowed: the caller retries with a larger capacity. Also used by hash-join.
 */
export async function insertKeys(ctx: GpuContext, keyBuf: GPUBuffer, maskBuf: GPUBuffer, hasNulls: boolean, n: number, capacity: number): Promise<Table | null> {
  const slots = capacity + 1;
  const t: Table = {
    owner: storageBuffer(ctx, slots * 4, 'group owners'),
    counts: storageBuffer(ctx, slots * 8, 'group counts'),
    firstRow: storageBuffer(ctx, slots * 4, 'group first rows'),
    rowSlot: storageBuffer(ctx, n * 4, 'row slots'),
  };
  const overflow = storageBuffer(ctx, 4, 'overflow flag');
  fillU32(ctx, t.owner, 0);
  fillU32(ctx, t.counts, 0);
  fillU32(ctx, t.firstRow, 0xffffffff);
  fillU32(ctx, overflow, 0);
  const params = uniformWords(ctx, [n, capacity, hasNulls ? 1 : 0]);
  kernelFor(ctx, 'groupby-insert', W.GROUPBY_INSERT_WGSL)
    .dispatch('insert_keys', [keyBuf, maskBuf, t.owner, t.counts, t.firstRow, t.rowSlot, overflow, params], workgroupsFor(n));
  const [flag] = await readU32(ctx, overflow, 1);
  params.destroy();
  freeBuffer(ctx, overflow);
  if (flag === 0) return t;
  for (const b of Object.values(t)) freeBuffer(ctx, b);
  return null;
}

async function aggregateColumns(ctx: GpuContext, t: Table, keys: GroupKeys, columns: readonly AggColumnInput[], n: number, capacity: number, ring?: StagingRing): Promise<GroupAggregates> {
  const accs: { sum: GPUBuffer; minMax: GPUBuffer }[] = [];
  for (const col of columns) accs.push(await accumulateColumn(ctx, t.rowSlot, col, n, capacity, ring));

  const { groups, slotOfGroup } = await numberGroups(ctx, t, capacity);
  const gather = async (src: GPUBuffer, width: number) => {
    const dst = storageBuffer(ctx, Math.max(1, groups * width) * 4, 'gathered');
    const params = uniformWords(ctx, [capacity, groups, width]);
    kernelFor(ctx, 'groupby-gather', W.GROUPBY_GATHER_WGSL).dispatch('gather', [src, slotOfGroup, dst, params], workgroupsFor(groups * width));
    const out = await readU32(ctx, dst, groups * width);
    params.destroy();
    freeBuffer(ctx, dst);
    return out;
  };
  const owner = await gather(t.owner, 1);
  const counts = await gather(t.counts, 2);
  const firstRow = await gather(t.firstRow, 1);
  const colWords: { sum: Uint32Array; minMax: Uint32Array }[] = [];
  for (let c = 0; c < columns.length; c++) {
    colWords.push({ sum: await gather(accs[c].sum, columns[c].type === 'int64' ? INT_WIDTH : FLOAT_WIDTH), minMax: await gather(accs[c].minMax, MINMAX_WIDTH) });
    freeBuffer(ctx, accs[c].sum);
    freeBuffer(ctx, accs[c].minMax);
  }
  for (const b of Object.values(t)) freeBuffer(ctx, b);
  freeBuffer(ctx, slotOfGroup);

  // Per-group decoding on the host: small (one record per group), in first-appearance order.
  const order = Array.from({ length: groups }, (_, g) => g).sort((a, b) => firstRow[a] - firstRow[b]);
  const keyWords = new Uint32Array(groups * 2);
  const nullKey = new Uint8Array(groups);
  const rows = new Float64Array(groups);
  const first = new Uint32Array(groups);
  order.forEach((g, out) => {
    const o = owner[g];
    if (o === 0) nullKey[out] = 1;
    else { keyWords[2 * out] = keys.words[2 * (o - 1)]; keyWords[2 * out + 1] = keys.words[2 * (o - 1) + 1]; }
    rows[out] = counts[2 * g] + counts[2 * g + 1] * 2 ** 32;
    first[out] = firstRow[g];
  });
  return { groups, keyWords, nullKey, firstRow: first, rows, columns: columns.map((col, c) => decodeColumn(col.type, colWords[c], order)) };
}

async function accumulateColumn(ctx: GpuContext, rowSlot: GPUBuffer, col: AggColumnInput, n: number, capacity: number, ring?: StagingRing): Promise<{ sum: GPUBuffer; minMax: GPUBuffer }> {
  const slots = capacity + 1;
  const isFloat = col.type === 'float64';
  const data = isFloat ? new Uint32Array(col.values.buffer, col.values.byteOffset, n * 2) : col.words;
  const valuesBuf = await uploadNew(ctx, data, 'aggregate values', ring);
  const mask = packValidity(col.valid, n);
  const maskBuf = await uploadNew(ctx, mask.words, 'aggregate validity', ring);
  const params = uniformWords(ctx, [n, mask.hasNulls ? 1 : 0, isFloat ? 1 : 0]);
  const sum = storageBuffer(ctx, slots * (isFloat ? FLOAT_WIDTH : INT_WIDTH) * 4, 'sum accumulators');
  fillU32(ctx, sum, 0);
  const minMax = storageBuffer(ctx, slots * MINMAX_WIDTH * 4, 'min/max accumulators');
  ctx.device.queue.writeBuffer(minMax, 0, new Uint32Array(slots * MINMAX_WIDTH).fill(0xffffffff).map((v, i) => (i % 4 < 2 ? 0 : v)));
  const bindings = (acc: GPUBuffer) => [rowSlot, valuesBuf, maskBuf, acc, params];
  const wg = workgroupsFor(n);
  if (isFloat) {
    const k = kernelFor(ctx, 'groupby-float-sum', W.GROUPBY_FLOAT_SUM_WGSL);
    k.dispatch('float_exponents', bindings(sum), wg);
    k.dispatch('float_sum', bindings(sum), wg);
  } else {
    kernelFor(ctx, 'groupby-int-sum', W.GROUPBY_INT_SUM_WGSL).dispatch('sum_int', bindings(sum), wg);
  }
  const mm = kernelFor(ctx, 'groupby-min-max', W.GROUPBY_MIN_MAX_WGSL);
  mm.dispatch('minmax_hi', bindings(minMax), wg);
  mm.dispatch('minmax_lo', bindings(minMax), wg);
  await ctx.device.queue.onSubmittedWorkDone();
  freeBuffer(ctx, valuesBuf);
  freeBuffer(ctx, maskBuf);
  params.destroy();
  return { sum, minMax };
}

/** Numbers the used slots 0..groups-1 (scan of used flags) and lists each group's slot. */
async function numberGroups(ctx: GpuContext, t: Table, capacity: number): Promise<{ groups: number; slotOfGroup: GPUBuffer }> {
  const flags = storageBuffer(ctx, (capacity + 2) * 4, 'used flags');
  fillU32(ctx, flags, 0);
  const params = uniformWords(ctx, [capacity, 0, 0]);
  const wg = workgroupsFor(capacity + 1);
  kernelFor(ctx, 'groupby-mark', W.GROUPBY_MARK_WGSL).dispatch('mark_used', [t.owner, t.counts, flags, params], wg);
  exclusiveScan(ctx, flags, capacity + 2);
  const [groups] = await readU32(ctx, flags, 1, capacity + 1);
  const slotOfGroup = storageBuffer(ctx, Math.max(1, groups) * 4, 'slot of group');
  kernelFor(ctx, 'groupby-compact', W.GROUPBY_COMPACT_WGSL).dispatch('compact', [flags, slotOfGroup, params], wg);
  await ctx.device.queue.onSubmittedWorkDone();
  params.destroy();
  freeBuffer(ctx, flags);
  return { groups, slotOfGroup };
}

const u64 = (lo: number, hi: number) => (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
const f64 = new Float64Array(1);
const f64Words = new Uint32Array(f64.buffer);

/** Undoes the order-preserving image used for min/max. */
function fromOrdered(hi: number, lo: number, isFloat: boolean): bigint | number {
  if (!isFloat) return BigInt.asIntN(64, u64(lo, (hi ^ 0x80000000) >>> 0));
  if (hi >>> 31) { f64Words[1] = hi & 0x7fffffff; f64Words[0] = lo; } else { f64Words[1] = ~hi; f64Words[0] = ~lo; }
  return f64[0];
}

function decodeColumn(type: 'int64' | 'float64', words: { sum: Uint32Array; minMax: Uint32Array }, order: number[]): ColumnAggregates {
  const isFloat = type === 'float64';
  const groups = order.length;
  const width = isFloat ? FLOAT_WIDTH : INT_WIDTH;
  const count = new Float64Array(groups);
  const min = isFloat ? new Float64Array(groups) : new BigInt64Array(groups);
  const max = isFloat ? new Float64Array(groups) : new BigInt64Array(groups);
  const intSum: bigint[] = [];
  const floatSum: ExactFloatSum[] = [];
  order.forEach((g, out) => {
    const s = words.sum.subarray(g * width, (g + 1) * width);
    count[out] = s[0] + s[1] * 2 ** 32;
    if (isFloat) {
      const limbs = (at: number) => s.subarray(at, at + 5).reduceRight((acc, w) => (acc << 32n) | BigInt(w), 0n);
      floatSum.push({ mant: limbs(4) - limbs(9), exp2: s[2] - 1075 - 64, special: s[3] });
    } else {
      const limbs = s.subarray(2, 6).reduceRight((acc, w) => (acc << 32n) | BigInt(w), 0n);
      intSum.push(limbs - u64(s[6], s[7]) * (1n << 64n));
    }
    const m = words.minMax.subarray(g * 4, g * 4 + 4);
    (max as Float64Array)[out] = fromOrdered(m[0], m[1], isFloat) as number;
    (min as Float64Array)[out] = fromOrdered(m[2], m[3], isFloat) as number;
  });
  return isFloat
    ? { count, floatSum, floatSumValue: Float64Array.from(floatSum, exactSumValue), min, max }
    : { count, intSum, min, max };
}

/**
 * CPU twin and test oracle: the same aggregates by a Map over key words, with sums exact in
 * BigInt (floats as exact binary fractions) and groups in first-appearance order.
 */
export function groupbyAggregateCpu(keys: GroupKeys, columns: readonly AggColumnInput[]): GroupAggregates {
  const n = keys.words.length / 2;
  const groupOf = new Map<string, number>();
  const rowGroup = new Int32Array(n);
  const firstRow: number[] = [];
  const keyWords: number[] = [];
  const nullKey: number[] = [];
  for (let i = 0; i < n; i++) {
    const isNullKey = keys.valid !== null && keys.valid[i] === 0;
    const k = isNullKey ? 'null' : `${keys.words[2 * i] >>> 0},${keys.words[2 * i + 1] >>> 0}`;
    let g = groupOf.get(k);
    if (g === undefined) {
      g = firstRow.length;
      groupOf.set(k, g);
      firstRow.push(i);
      nullKey.push(isNullKey ? 1 : 0);
      keyWords.push(isNullKey ? 0 : keys.words[2 * i] >>> 0, isNullKey ? 0 : keys.words[2 * i + 1] >>> 0);
    }
    rowGroup[i] = g;
  }
  const groups = firstRow.length;
  const rows = new Float64Array(groups);
  for (let i = 0; i < n; i++) rows[rowGroup[i]]++;
  const cols = columns.map((col): ColumnAggregates => {
    const count = new Float64Array(groups);
    const present = (i: number) => col.valid === null || col.valid[i] === 1;
    if (col.type === 'int64') {
      const vals = new BigInt64Array(col.words.buffer, col.words.byteOffset, n);
      const intSum: bigint[] = new Array(groups).fill(0n);
      const min = new BigInt64Array(groups).fill(0x7fffffffffffffffn);
      const max = new BigInt64Array(groups).fill(-0x8000000000000000n);
      for (let i = 0; i < n; i++) {
        if (!present(i)) continue;
        const g = rowGroup[i], v = vals[i];
        count[g]++; intSum[g] += v;
        if (v < min[g]) min[g] = v;
        if (v > max[g]) max[g] = v;
      }
      return { count, intSum, min, max };
    }
    const floatSum: ExactFloatSum[] = new Array(groups).fill(ZERO_SUM);
    const min = new Float64Array(groups).fill(NaN);
    const max = new Float64Array(groups).fill(NaN);
    for (let i = 0; i < n; i++) {
      if (!present(i)) continue;
      const g = rowGroup[i], v = col.values[i];
      count[g]++;
      floatSum[g] = addExactSums(floatSum[g], exactOfDouble(v));
      if (!Number.isNaN(v)) {
        if (!(v >= min[g])) min[g] = v;
        if (!(v <= max[g])) max[g] = v;
      }
    }
    return { count, floatSum, floatSumValue: Float64Array.from(floatSum, exactSumValue), min, max };
  });
  return { groups, keyWords: Uint32Array.from(keyWords), nullKey: Uint8Array.from(nullKey), firstRow: Uint32Array.from(firstRow), rows, columns: cols };
}
