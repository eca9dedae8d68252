// The partial-aggregate terminal on the GPU: one partition's rows in, the same PartialAggregate
// the CPU PartialAggregator would produce out (same key columns, hashes and accumulator states),
// so PartialMerger / finalizeAggregate in the parent work unchanged.
//
// Keys: a single int64/timestamp key goes to the GPU as its (lo, hi) words and the GPU hash table
// groups it. Any other key set (strings, bools, floats, several columns) is numbered on the host by
// the CPU KeyTable (hashing with full equality checks, so distinct strings never merge) and the
// GPU groups by those dense ids. Values: count, exact int64 sums, exact float64 sums, min/max of
// int64/timestamp/float64 run on the GPU; anything else (var, std, nunique, string/bool min/max)
// makes the caller run the partition on the CPU instead (gpuSupports).

import { concatBatches, int64Words, sliceBatch, takeColumn, type Batch, type Column, type Schema } from '../batch.js';
import type { GpuContext } from '../gpu/device.js';
import { groupbyAggregate, type AggColumnInput, type ColumnNeeds, type DeviceGroupAggregates, type GroupAggregates, type GroupKeys } from '../../kernels/groupby-aggregate.js';
import { hashKeys, KeyTable, nullKeyMask } from '../ops/keys.js';
import { aggregateOutputSchema, PartialAggregator, PartialMerger, type AggregateSpec, type PartialAggregate } from '../ops/aggregate/index.js';
import type { AggState } from '../ops/aggregate/state.js';
import { countState, floatSumState, intSumState, minMaxState } from './gpu-partial-state.js';

/** True when every aggregate of `spec` over `input` has a GPU form (see the header). */
export function gpuSupports(spec: AggregateSpec, input: Schema): boolean {
  const typeOf = (name: string) => input.find((f) => f.name === name)?.type;
  return spec.aggs.every((a) => {
    const t = a.column === null ? null : typeOf(a.column);
    switch (a.func) {
      case 'count': return true;
      case 'sum':
      case 'mean': return t === 'int64' || t === 'float64';
      case 'min':
      case 'max': return t === 'int64' || t === 'timestamp' || t === 'float64';
      default: return false;
    }
  });
}

/**
 * Rows per GPU call: the group-by table may grow to 2·nextPow2(rows) slots of 56 bytes (float sum
 * limbs), which must fit one storage binding. GPUFRAME_GPU_MAX_ROWS lowers it (tests).
 */
export function maxRowsPerCall(gpu: GpuContext): number {
  let rows = 1;
  while (rows * 2 * 2 * 56 <= gpu.device.limits.maxStorageBufferBindingSize) rows *= 2;
  const cap = Number(process.env.GPUFRAME_GPU_MAX_ROWS);
  return Number.isInteger(cap) && cap > 0 ? Math.min(rows, cap) : rows;
}

/** The partition's partial aggregate, computed on the GPU in calls of at most maxRowsPerCall rows. */
export async function gpuPartialAggregate(gpu: GpuContext, batches: Batch[], input: Schema, spec: AggregateSpec): Promise<PartialAggregate> {
  const batch = batches.length === 1 ? batches[0] : concatBatches(input, batches);
  if (batch.length === 0) return new PartialAggregator(input, spec).finish();
  const step = maxRowsPerCall(gpu);
  const merger = new PartialMerger();
  for (let start = 0; start < batch.length; start += step) {
    merger.add(await aggregateSlice(gpu, sliceBatch(batch, start, Math.min(batch.length, start + step)), input, spec));
  }
  return merger.result()!;
}

/** How rows are grouped: key words for the GPU, and the partial's key columns for chosen groups. */
interface Grouping {
  keys: GroupKeys;
  /**
   * Sizes the GPU table. It must not be too small: a full table costs every row a probe of the
   * whole table before the kernel reports overflow and the table doubles. Host-numbered keys know
   * their count; GPU-hashed ones assume every row may be distinct (maxRowsPerCall keeps that in bounds).
   */
  expectedGroups: number;
  /** Whether the GPU's null-key group is a real group (false: it holds skipped rows, dropped). */
  keepNullGroup: boolean;
  /** Key columns and their hashKeys for the GPU groups in `pick`. */
  keysOf(result: GroupAggregates, pick: Int32Array): { keys: Column[]; hashes: Uint32Array };
}

function groupingOf(keyCols: Column[], n: number, dropna: boolean): Grouping {
  const only = keyCols.length === 1 ? keyCols[0] : null;
  if (only !== null && (only.type === 'int64' || only.type === 'timestamp')) {
    return {
      keys: { words: int64Words(only), valid: only.valid },
      expectedGroups: n + 1,
      keepNullGroup: !dropna,
      keysOf(result, pick) {
        const rows = Int32Array.from(pick, (g) => result.firstRow[g]);
        const keys = [takeColumn(only, rows)];
        return { keys, hashes: hashKeys(keys, rows.length) };
      },
    };
  }
  // Host numbering: dense ids in first-seen order; skipped (dropna) rows become the GPU's null group.
  const table = new KeyTable(keyCols.map((c) => c.type));
  const skip = dropna ? nullKeyMask(keyCols, n) : null;
  const gids = table.insert(keyCols, hashKeys(keyCols, n), n, skip);
  const words = new Int32Array(2 * n);
  const valid = skip === null ? null : new Uint8Array(n);
  fillIdWords(gids, words, valid);
  return {
    keys: { words, valid },
    expectedGroups: table.size + 1,
    keepNullGroup: false,
    keysOf(result, pick) {
      const ids = Int32Array.from(pick, (g) => result.keyWords[2 * g]);
      const all = table.keyColumns();
      const tableHashes = table.hashes();
      return { keys: all.map((c) => takeColumn(c, ids)), hashes: Uint32Array.from(ids, (id) => tableHashes[id]) };
    },
  };
}

function fillIdWords(gids: Int32Array, words: Int32Array, valid: Uint8Array | null): void {
  for (let i = 0; i < gids.length; i++) {
    if (gids[i] >= 0) { words[2 * i] = gids[i]; if (valid) valid[i] = 1; }
  }
}

/** The GPU input for an aggregated column: its words/values, or (count only) zeros with its validity. */
function aggInput(col: Column, n: number): AggColumnInput | null {
  switch (col.type) {
    case 'int64':
    case 'timestamp': return { type: 'int64', words: int64Words(col), valid: col.valid };
    case 'float64': return { type: 'float64', values: col.values, valid: col.valid };
    default: return col.valid === null ? null : { type: 'int64', words: new Int32Array(2 * n), valid: col.valid };
  }
}

async function aggregateSlice(gpu: GpuContext, batch: Batch, input: Schema, spec: AggregateSpec): Promise<PartialAggregate> {
  const n = batch.length;
  const indexOf = (name: string) => input.findIndex((f) => f.name === name);
  const keyCols = spec.keys.map((k) => batch.columns[indexOf(k)]);
  const grouping = groupingOf(keyCols, n, spec.dropna);
  const inputSlot = new Map<number, number>();
  const inputs: AggColumnInput[] = [];
  for (const ci of aggregatedColumns(spec, input)) {
    const gpuInput = aggInput(batch.columns[ci], n);
    inputSlot.set(ci, gpuInput === null ? -1 : inputs.length);
    if (gpuInput) inputs.push(gpuInput);
  }
  const result = await groupbyAggregate(gpu, grouping.keys, inputs, { expectedGroups: grouping.expectedGroups });
  const pick = groupsToKeep(result, grouping.keepNullGroup);
  const { keys, hashes } = grouping.keysOf(result, pick);
  return partialOfGroups(result, pick, keys, hashes, input, spec, inputSlot);
}

/** The distinct aggregated columns of `spec` (indices into `input`), in first-use order: one GPU input each. */
export function aggregatedColumns(spec: AggregateSpec, input: Schema): number[] {
  const out: number[] = [];
  for (const a of spec.aggs) {
    if (a.column === null) continue;
    const ci = input.findIndex((f) => f.name === a.column);
    if (!out.includes(ci)) out.push(ci);
  }
  return out;
}

/** What the aggregates of `spec` ask of column `name` besides its count (sum or mean: its sum; min or max: both extremes). */
export function columnNeeds(spec: AggregateSpec, name: string): ColumnNeeds {
  const funcs = spec.aggs.filter((a) => a.column === name).map((a) => a.func);
  return { sum: funcs.includes('sum') || funcs.includes('mean'), minMax: funcs.includes('min') || funcs.includes('max') };
}

/** The GPU groups that are real groups: all, but the null-key group only when it is one. */
export function groupsToKeep(result: { groups: number; nullKey: Uint8Array }, keepNullGroup: boolean): Int32Array {
  const keep = new Int32Array(result.groups);
  let kept = 0;
  for (let g = 0; g < result.groups; g++) if (!result.nullKey[g] || keepNullGroup) keep[kept++] = g;
  return kept === keep.length ? keep : keep.slice(0, kept);
}

/**
 * The CPU's PartialAggregate for GPU groups `pick` with their key columns and hashes.
 * `inputSlot` maps an aggregated input column to its GPU input (-1: none, count its rows).
 */
export function partialOfGroups(result: Omit<DeviceGroupAggregates, 'ownerRow'>, pick: Int32Array, keys: Column[], hashes: Uint32Array,
                                input: Schema, spec: AggregateSpec, inputSlot: Map<number, number>): PartialAggregate {
  const indexOf = (name: string) => input.findIndex((f) => f.name === name);
  const states: AggState[] = spec.aggs.map((a) => {
    if (a.column === null) return countState(result.rows, pick);
    const ci = indexOf(a.column);
    const slot = inputSlot.get(ci)!;
    if (slot < 0) return countState(result.rows, pick); // count(x) of a column without nulls
    const col = result.columns[slot];
    const type = input[ci].type;
    switch (a.func) {
      case 'count': return countState(col.count, pick);
      case 'sum':
      case 'mean': return type === 'int64' ? intSumState(col, pick) : floatSumState(col, pick);
      case 'min': return minMaxState(col, type, -1, pick);
      case 'max': return minMaxState(col, type, 1, pick);
      default: throw new Error(`${a.func} has no GPU form (gpuSupports should have said so)`);
    }
  });
  return {
    schema: aggregateOutputSchema(input, spec),
    spec,
    aggInputTypes: spec.aggs.map((a) => (a.column === null ? null : input[indexOf(a.column)].type)),
    groups: pick.length,
    keys,
    hashes,
    states,
  };
}
