// Hash group-by on the GPU: per group count, exact int64 sums, exact float64 sums, min and max.
// The host passes per-row key words (two u32 per row: an int64 key's (lo, hi) words, or a 64-bit
// hash of a string key), reads back one small record per group, and combines in BigInt / f64.
// WGSL and the table layout: groupby-aggregate.wgsl.ts. CPU twin: groupbyAggregateCpu.

import type { Validity } from '../engine/batch.js';
import { RuntimeFailure } from '../engine/errors.js';
import type { GpuContext } from '../engine/gpu/device.js';
import { fillU32, freeBuffer, kernelFor, readU32, sharedUniform, storageBuffer, submit, uploadNew, workgroupsFor, type StagingRing } from '../engine/gpu/buffers.js';
import { exclusiveScan } from './prefix-scan.js';
import { addExactSums, doubleDoubleOfLimbs, exactOfDouble, exactSumValue, ZERO_SUM, type ExactFloatSum } from './float-sum.js';
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

/** Per-group results; the GPU's columns are DecodedColumns, the CPU twin's plain ColumnAggregates. */
export interface GroupAggregates<C extends ColumnAggregates = ColumnAggregates> {
  groups: number;
  /** Key words per group (2 each; 0,0 for the null-key group). */
  keyWords: Uint32Array;
  /** 1 for the group of rows whose key is null. */
  nullKey: Uint8Array;
  /** First row of each group; groups are in first-appearance order. */
  firstRow: Uint32Array;
  rows: Float64Array;
  columns: C[];
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

export async function groupbyAggregate(ctx: GpuContext, keys: GroupKeys, columns: readonly AggColumnInput[], options: GroupbyOptions = {}): Promise<GroupAggregates<DecodedColumn>> {
  const n = keys.words.length / 2;
  const keyBuf = await uploadNew(ctx, keys.words, 'group keys', options.ring);
  const keyMask = packValidity(keys.valid, n);
  const keyMaskBuf = await uploadNew(ctx, keyMask.words, 'group key validity', options.ring);
  const table = await buildKeyTable(ctx, keyBuf, keyMaskBuf, keyMask.hasNulls, n, options.expectedGroups ?? 4096);
  freeBuffer(ctx, keyBuf);
  freeBuffer(ctx, keyMaskBuf);
  const onDevice: DeviceAggColumn[] = [];
  for (const col of columns) onDevice.push(await uploadAggColumn(ctx, col, n, options.ring));
  const result = await aggregateByTable(ctx, table, onDevice, n);
  for (const c of onDevice) { freeBuffer(ctx, c.values); freeBuffer(ctx, c.mask); }
  const keyWords = new Uint32Array(result.groups * 2);
  for (let g = 0; g < result.groups; g++) {
    if (result.nullKey[g]) continue;
    keyWords[2 * g] = keys.words[2 * result.ownerRow[g]];
    keyWords[2 * g + 1] = keys.words[2 * result.ownerRow[g] + 1];
  }
  return { ...result, keyWords };
}

/** A column to aggregate, on the device: two u32 words per row, and a packed validity mask. */
export interface DeviceAggColumn {
  type: 'int64' | 'float64';
  values: GPUBuffer;
  mask: GPUBuffer;
  hasNulls: boolean;
  /** What the query asks of the column besides its count (default: everything). */
  needs?: ColumnNeeds;
}

/**
 * A column's aggregates beyond its non-null count: its sum (sum, mean), its min and max. What is
 * not asked for is neither computed nor read back (a float's exact sum is 10 of its 14 words per
 * group, and min/max 4 more: with 90k groups a partition, reading back and decoding them was a
 * large part of a GPU worker's time).
 */
export interface ColumnNeeds { sum: boolean; minMax: boolean }
const EVERYTHING: ColumnNeeds = { sum: true, minMax: true };
/** Words of a float64 sum record before its limbs: count lo, count hi, largest exponent, special flags. */
const FLOAT_HEAD = 4;

async function uploadAggColumn(ctx: GpuContext, col: AggColumnInput, n: number, ring?: StagingRing): Promise<DeviceAggColumn> {
  const data = col.type === 'float64' ? new Uint32Array(col.values.buffer, col.values.byteOffset, n * 2) : col.words;
  const mask = packValidity(col.valid, n);
  return {
    type: col.type,
    values: await uploadNew(ctx, data, 'aggregate values', ring),
    mask: await uploadNew(ctx, mask.words, 'aggregate validity', ring),
    hasNulls: mask.hasNulls,
  };
}

/** A built key table: slot owners (row + 1), rows per slot (2 words), first row per slot, slot per row. */
export interface KeyTable { owner: GPUBuffer; counts: GPUBuffer; firstRow: GPUBuffer; rowSlot: GPUBuffer; capacity: number }

/** Frees a key table's device buffers. */
export function freeKeyTable(ctx: GpuContext, t: KeyTable): void {
  for (const b of [t.owner, t.counts, t.firstRow, t.rowSlot]) freeBuffer(ctx, b);
}

/**
 * The key table of n rows (key words and validity mask on the device), sized for `expectedGroups`
 * and grown (×4) when it passes 3/4 full, up to nextPow2(2n) slots (2 per row, which never does).
 */
export async function buildKeyTable(ctx: GpuContext, keyBuf: GPUBuffer, maskBuf: GPUBuffer, hasNulls: boolean, n: number, expectedGroups: number): Promise<KeyTable> {
  const maxCapacity = nextPow2(2 * n);
  for (let capacity = Math.min(maxCapacity, nextPow2(2 * expectedGroups)); ; capacity = Math.min(maxCapacity, capacity * 4)) {
    const table = await insertKeys(ctx, keyBuf, maskBuf, hasNulls, n, capacity);
    if (table) return table;
    if (capacity >= maxCapacity) throw new RuntimeFailure('GPU group-by table overflowed at full capacity');
  }
}

/**
 * Builds the key table over `capacity` slots (a power of two; slot `capacity` holds null keys).
 * Null when it overflowed: the caller retries with a larger capacity. Also used by hash-join.
 */
export async function insertKeys(ctx: GpuContext, keyBuf: GPUBuffer, maskBuf: GPUBuffer, hasNulls: boolean, n: number, capacity: number): Promise<KeyTable | null> {
  const slots = capacity + 1;
  const t: KeyTable = {
    owner: storageBuffer(ctx, slots * 4, 'group owners'),
    counts: storageBuffer(ctx, slots * 8, 'group counts'),
    firstRow: storageBuffer(ctx, slots * 4, 'group first rows'),
    rowSlot: storageBuffer(ctx, n * 4, 'row slots'),
    capacity,
  };
  const overflow = storageBuffer(ctx, 8, 'overflow flag and claims');
  fillU32(ctx, t.firstRow, 0xffffffff); // storage buffers come zeroed; first rows start at 'none'
  const params = sharedUniform(ctx, [n, capacity, hasNulls ? 1 : 0]);
  kernelFor(ctx, 'groupby-insert', W.GROUPBY_INSERT_WGSL)
    .dispatch('insert_keys', [keyBuf, maskBuf, t.owner, t.counts, t.firstRow, t.rowSlot, overflow, params], workgroupsFor(n));
  const [flag] = await readU32(ctx, overflow, 1);
  freeBuffer(ctx, overflow);
  if (flag === 0) return t;
  freeKeyTable(ctx, t);
  return null;
}

/** Group aggregates of rows grouped on the device: each group's owner row stands for its key. */
export type DeviceGroupAggregates = Omit<GroupAggregates<DecodedColumn>, 'keyWords'> & {
  /** A row of each group (the one that claimed its slot); 0 for the null-key group. */
  ownerRow: Uint32Array;
};

/**
 * Aggregates `columns` of n rows grouped by `table` (freed here), all on the device; one readback
 * brings the per-group records, decoded on the host in first-appearance order.
 */
export async function aggregateByTable(ctx: GpuContext, t: KeyTable, columns: readonly DeviceAggColumn[], n: number): Promise<DeviceGroupAggregates> {
  const accs = columns.map((col) => accumulateColumn(ctx, t.rowSlot, t.capacity + 1, col, n));
  const { groups, slotOfGroup } = await numberGroups(ctx, t, n);
  // Every per-group record in one gather and one readback.
  // A float column whose sum is not asked for: the record's head alone (count and special flags).
  const sumWidth = (col: DeviceAggColumn) => (col.type === 'int64' ? INT_WIDTH : (col.needs ?? EVERYTHING).sum ? FLOAT_WIDTH : FLOAT_HEAD);
  const sources: GatherSource[] = [{ src: t.owner, width: 1 }, { src: t.counts, width: 2 }, { src: t.firstRow, width: 1 }];
  columns.forEach((col, c) => {
    sources.push({ src: accs[c].sum, width: sumWidth(col), stride: col.type === 'int64' ? INT_WIDTH : FLOAT_WIDTH });
    if (accs[c].minMax) sources.push({ src: accs[c].minMax!, width: MINMAX_WIDTH });
  });
  const parts = await gatherEntries(ctx, slotOfGroup, groups, sources);
  for (const b of [slotOfGroup, ...accs.flatMap((a) => (a.minMax ? [a.sum, a.minMax] : [a.sum]))]) freeBuffer(ctx, b);
  freeKeyTable(ctx, t);
  const [owner, counts, firstRow] = parts;
  // Per-group decoding on the host, one record per group, already in first-appearance order.
  const ownerRow = new Uint32Array(groups);
  const nullKey = new Uint8Array(groups);
  const rows = new Float64Array(groups);
  for (let g = 0; g < groups; g++) {
    const o = owner[g];
    if (o === 0) nullKey[g] = 1; else ownerRow[g] = o - 1;
    rows[g] = counts[2 * g] + counts[2 * g + 1] * 2 ** 32;
  }
  const first = firstRow.slice();
  let next = 3;
  const decoded = columns.map((col, c) => new DecodedColumn(col.type, { sum: parts[next++], minMax: accs[c].minMax ? parts[next++] : null }, groups, sumWidth(col)));
  return { groups, ownerRow, nullKey, firstRow: first, rows, columns: decoded };
}

/** Words to gather per index: the first `width` words of the entry at `src[srcOffset + index·stride]` (stride: default width). */
export interface GatherSource { src: GPUBuffer; width: number; srcOffset?: number; stride?: number }

/**
 * For `count` indices in `index` (a device buffer of u32), the entries of each source, read back
 * with one submission and one readback: result k holds count·width words of source k.
 */
export async function gatherEntries(ctx: GpuContext, index: GPUBuffer, count: number, sources: readonly GatherSource[]): Promise<Uint32Array[]> {
  const total = sources.reduce((s, x) => s + x.width, 0) * count;
  const dst = storageBuffer(ctx, Math.max(1, total) * 4, 'gathered');
  const gather = kernelFor(ctx, 'groupby-gather', W.GROUPBY_GATHER_WGSL);
  const enc = ctx.device.createCommandEncoder();
  const offsets: number[] = [];
  let at = 0;
  for (const { src, width, srcOffset, stride } of sources) {
    const p = sharedUniform(ctx, [srcOffset ?? 0, count, width, at, stride ?? width, 0, 0, 0]);
    if (count > 0) gather.dispatch('gather', [src, index, dst, p], workgroupsFor(count * width), enc);
    offsets.push(at);
    at += count * width;
  }
  submit(ctx, enc.finish());
  const words = await readU32(ctx, dst, total);
  freeBuffer(ctx, dst);
  return sources.map((x, k) => words.subarray(offsets[k], offsets[k] + count * x.width));
}

/**
 * Submits one column's accumulation over `slots` slots, given each row's slot (`rowSlot`, as
 * insert_keys writes it); the caller frees the accumulators. `wg` (workgroups) is for tests that
 * make one workgroup take many rows, to reach the carries of its local sums.
 */
export function accumulateColumn(ctx: GpuContext, rowSlot: GPUBuffer, slots: number, col: DeviceAggColumn, n: number, wg = workgroupsFor(n)): { sum: GPUBuffer; minMax: GPUBuffer | null } {
  const isFloat = col.type === 'float64';
  const needs = col.needs ?? EVERYTHING;
  const params = sharedUniform(ctx, [n, col.hasNulls ? 1 : 0, isFloat ? 1 : 0]);
  // The sum record holds the count too (and a float's special flags, which min/max need): always built.
  const sum = storageBuffer(ctx, slots * (isFloat ? FLOAT_WIDTH : INT_WIDTH) * 4, 'sum accumulators');
  const bindings = (acc: GPUBuffer) => [rowSlot, col.values, col.mask, acc, params];
  if (isFloat) {
    const k = kernelFor(ctx, 'groupby-float-sum', W.GROUPBY_FLOAT_SUM_WGSL);
    k.dispatch('float_exponents', bindings(sum), wg);
    if (needs.sum) k.dispatch('float_sum', bindings(sum), wg);
  } else {
    kernelFor(ctx, 'groupby-int-sum', W.GROUPBY_INT_SUM_WGSL).dispatch('sum_int', bindings(sum), wg);
  }
  if (!needs.minMax) return { sum, minMax: null };
  const minMax = storageBuffer(ctx, slots * MINMAX_WIDTH * 4, 'min/max accumulators');
  const mm = kernelFor(ctx, 'groupby-min-max', W.GROUPBY_MIN_MAX_WGSL);
  mm.dispatch('minmax_init', [null, null, null, minMax, sharedUniform(ctx, [slots, 0, 0])], workgroupsFor(slots));
  mm.dispatch('minmax_hi', bindings(minMax), wg);
  mm.dispatch('minmax_lo', bindings(minMax), wg);
  return { sum, minMax };
}

/** Numbers the groups 0..groups-1 in first-appearance order (by first row) and lists each group's slot. */
async function numberGroups(ctx: GpuContext, t: KeyTable, n: number): Promise<{ groups: number; slotOfGroup: GPUBuffer }> {
  const flags = storageBuffer(ctx, (n + 1) * 4, 'first-row flags');
  const params = sharedUniform(ctx, [n, 0, 0]);
  const wg = workgroupsFor(n);
  if (n > 0) kernelFor(ctx, 'groupby-mark-first', W.GROUPBY_MARK_FIRST_WGSL).dispatch('mark_first_rows', [t.rowSlot, t.firstRow, flags, params], wg);
  exclusiveScan(ctx, flags, n + 1);
  const [groups] = await readU32(ctx, flags, 1, n);
  const slotOfGroup = storageBuffer(ctx, Math.max(1, groups) * 4, 'slot of group');
  if (n > 0) kernelFor(ctx, 'groupby-order', W.GROUPBY_ORDER_WGSL).dispatch('order_groups', [flags, t.rowSlot, slotOfGroup, params], wg);
  freeBuffer(ctx, flags);
  return { groups, slotOfGroup };
}

const u64 = (lo: number, hi: number) => (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);

/**
 * Undoes the order-preserving image used for min/max, writing the value's words at `out` of `dst`.
 * A float zero's lo word is its row and sign (the max keeps it inverted): the sign of the first zero.
 */
function fromOrdered(hi: number, lo: number, isFloat: boolean, isMax: boolean, dst: Uint32Array, out: number): void {
  if (!isFloat) { dst[2 * out] = lo; dst[2 * out + 1] = (hi ^ 0x80000000) >>> 0; return; }
  if (hi === 0x80000000) { dst[2 * out] = 0; dst[2 * out + 1] = ((isMax ? ~lo : lo) & 1) << 31 >>> 0; return; }
  if (hi >>> 31) { dst[2 * out + 1] = (hi - 1) & 0x7fffffff; dst[2 * out] = lo; } else { dst[2 * out + 1] = ~hi >>> 0; dst[2 * out] = ~lo >>> 0; }
}

/**
 * Per-group records decoded in output order. Exact sums stay as the GPU's words until asked for:
 * BigInt work per group is what high-cardinality results spend their time on.
 */
export class DecodedColumn implements ColumnAggregates {
  readonly count: Float64Array;
  /** Empty when min and max were not asked for (ColumnNeeds). */
  readonly min: BigInt64Array | Float64Array;
  readonly max: BigInt64Array | Float64Array;
  /**
   * int64: per group [limb 0..3, negatives lo, negatives hi]; float64: per group the 14 accumulator
   * words, or only their head (FLOAT_HEAD: count and special flags) when the sum was not asked for.
   */
  readonly sumWords: Uint32Array;
  /** Words per group in sumWords. */
  private readonly kept: number;
  private exactFloat: ExactFloatSum[] | undefined;
  private exactInt: bigint[] | undefined;

  /** `width`: words per group in words.sum (a float's head alone when its sum was not gathered); minMax null when not gathered. */
  constructor(readonly type: 'int64' | 'float64', words: { sum: Uint32Array; minMax: Uint32Array | null }, groups: number,
              width = type === 'float64' ? FLOAT_WIDTH : INT_WIDTH) {
    const isFloat = type === 'float64';
    const kept = isFloat ? width : 6;
    this.kept = kept;
    this.count = new Float64Array(groups);
    // float64 keeps every word gathered, in group order: the gathered words themselves, not a copy.
    this.sumWords = kept === width ? words.sum.subarray(0, groups * width) : new Uint32Array(groups * kept);
    const sum = words.sum, mm = words.minMax, skip = isFloat ? 0 : 2; // int64: the count words are not kept
    const sumWords = this.sumWords, count = this.count;
    for (let out = 0; out < groups; out++) {
      const at = out * width;
      count[out] = sum[at] + sum[at + 1] * 2 ** 32;
      if (kept !== width) for (let w = 0; w < kept; w++) sumWords[out * kept + w] = sum[at + skip + w];
    }
    const extremes = mm === null ? 0 : groups;
    const min = isFloat ? new Float64Array(extremes) : new BigInt64Array(extremes);
    const max = isFloat ? new Float64Array(extremes) : new BigInt64Array(extremes);
    if (mm !== null) {
      const minWords = new Uint32Array(min.buffer), maxWords = new Uint32Array(max.buffer);
      for (let out = 0; out < groups; out++) {
        const m = out * 4;
        fromOrdered(mm[m], mm[m + 1], isFloat, true, maxWords, out);
        fromOrdered(mm[m + 2], mm[m + 3], isFloat, false, minWords, out);
      }
    }
    this.min = min;
    this.max = max;
  }

  get intSum(): bigint[] | undefined {
    if (this.type !== 'int64') return undefined;
    this.exactInt ??= Array.from({ length: this.count.length }, (_, g) => {
      const w = this.sumWords.subarray(6 * g, 6 * g + 6);
      const limbs = w.subarray(0, 4).reduceRight((acc, x) => (acc << 32n) | BigInt(x), 0n);
      return limbs - u64(w[4], w[5]) * (1n << 64n);
    });
    return this.exactInt;
  }

  /**
   * int64 sum of group g into lo[i], hi[i] (in [0, 2^32)) and top[i]: sum = top·2^64 + hi·2^32 + lo,
   * no BigInt (and no array per group: with a group per row, that allocation cost more than the rest).
   */
  writeIntSum(g: number, lo: Float64Array, hi: Float64Array, top: Float64Array, i: number): void {
    const w = this.sumWords, at = 6 * g;
    lo[i] = w[at];
    hi[i] = w[at + 1];
    top[i] = w[at + 2] + w[at + 3] * 2 ** 32 - (w[at + 4] + w[at + 5] * 2 ** 32);
  }

  /** float64: group g's finite sum as a double-double (null: take it from floatSum, with BigInt). */
  floatSumParts(g: number): [number, number] | null {
    return this.type === 'float64' && this.kept === FLOAT_WIDTH ? doubleDoubleOfLimbs(this.sumWords, FLOAT_WIDTH * g) : null;
  }

  /** float64: group g's special flags (1 NaN, 2 +inf, 4 -inf). */
  floatSpecial(g: number): number {
    return this.type === 'float64' ? this.sumWords[this.kept * g + 3] : 0;
  }

  get floatSum(): ExactFloatSum[] | undefined {
    if (this.type !== 'float64' || this.kept !== FLOAT_WIDTH) return undefined;
    this.exactFloat ??= Array.from({ length: this.count.length }, (_, g) => {
      const s = this.sumWords.subarray(FLOAT_WIDTH * g, FLOAT_WIDTH * (g + 1));
      const limbs = (at: number) => s.subarray(at, at + 5).reduceRight((acc, w) => (acc << 32n) | BigInt(w), 0n);
      return { mant: limbs(4) - limbs(9), exp2: s[2] - 1075 - 64, special: s[3] };
    });
    return this.exactFloat;
  }

  get floatSumValue(): Float64Array | undefined {
    const sums = this.floatSum;
    return sums && Float64Array.from(sums, exactSumValue);
  }
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
