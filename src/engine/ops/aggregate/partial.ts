// Hash aggregation in three steps that the executor spreads over processes:
// PartialAggregator (per worker) -> PartialMerger (parent, in partition order) -> finalizeAggregate.
// A PartialAggregate is plain data (typed arrays, numbers, strings), so it crosses process
// boundaries by structured clone and spills with v8.serialize. With many groups per row, a
// PartialAggregator groups by ranking the keys instead of hashing them, and merges of sorted
// partials (a key range's slices) rank too (finalizeMergedBySort): same states, same bytes.
import { batchBytes, columnLength, concatBatches, int64Words, sliceColumn, takeBatch, takeColumn, type Batch, type Column, type DType, type Int64Column, type Schema } from '../../batch.js';
import { bucketOf, hashKeys, KeyTable, nullKeyMask } from '../keys.js';
import { groupRowsByKeys, rowComparer, rowsByBucket, sortIndicesByKeys } from '../sort.js';
import { accumulatorFor } from './accumulators.js';
import { GroupOverflow } from './int-sum.js';
import { RuntimeFailure } from '../../errors.js';
import { cellFormatter } from '../../io/format-value.js';
import { aggregateOutputSchema, type AggregateSpec } from './spec.js';
import type { Accumulator, AggState } from './state.js';

export interface PartialAggregate {
  /** The output schema: keys then aggregates. */
  schema: Schema;
  spec: AggregateSpec;
  /** The type of each aggregate's input column (null for count()). */
  aggInputTypes: (DType | null)[];
  groups: number;
  /** Distinct keys, row g = group g. */
  keys: Column[];
  /** Hash of each group's key (hashKeys), kept for merging and splitting. */
  hashes: Uint32Array;
  /** One state per aggregate, in spec order. */
  states: AggState[];
}

function newAccumulators(p: Pick<PartialAggregate, 'spec' | 'aggInputTypes'>, groups: number): Accumulator[] {
  return p.spec.aggs.map((a, i) => {
    const acc = accumulatorFor(a, p.aggInputTypes[i]);
    acc.ensure(groups);
    return acc;
  });
}

/**
 * Batches of at least this many rows may be grouped by sorting their keys (groupRowsByKeys) rather
 * than hashing them: when a sample of their first SORT_SAMPLE_ROWS rows predicts more groups than
 * SORT_GROUP_SHARE of the batch's rows. Few groups stay in the hash table, which then fits in cache.
 */
const SORT_MIN_ROWS = 1 << 16;
const SORT_SAMPLE_ROWS = 1 << 14;
const SORT_GROUP_SHARE = 1 / 32;

export class PartialAggregator {
  private readonly table: KeyTable;
  private readonly accs: Accumulator[];
  private readonly keyIndex: number[];
  private readonly aggIndex: number[]; // -1 for count()
  private readonly header: Pick<PartialAggregate, 'schema' | 'spec' | 'aggInputTypes'>;
  private readonly held: Batch[] = [];

  /**
   * `bySort`: whether to group by sorting (the batches are then held until finish); null: decided
   * at the first batch by a sample of its keys.
   */
  constructor(private readonly input: Schema, readonly spec: AggregateSpec, private bySort: boolean | null = null) {
    const schema = aggregateOutputSchema(input, spec);
    const indexOf = (name: string) => input.findIndex((f) => f.name === name);
    this.keyIndex = spec.keys.map(indexOf);
    this.aggIndex = spec.aggs.map((a) => (a.column === null ? -1 : indexOf(a.column)));
    const aggInputTypes = this.aggIndex.map((i) => (i < 0 ? null : input[i].type));
    this.header = { schema, spec, aggInputTypes };
    this.table = new KeyTable(this.keyIndex.map((i) => input[i].type));
    this.accs = newAccumulators(this.header, 0);
    if (this.keyIndex.length === 0) this.bySort = false; // one group
  }

  add(batch: Batch): void {
    this.bySort ??= batch.length >= SORT_MIN_ROWS && manyGroups(this.keyIndex.map((i) => batch.columns[i]), batch.length);
    if (this.bySort) { this.held.push(batch); return; }
    const n = batch.length;
    const keyCols = this.keyIndex.map((i) => batch.columns[i]);
    const skip = this.spec.dropna ? nullKeyMask(keyCols, n) : null;
    const gids = this.table.insert(keyCols, hashKeys(keyCols, n), n, skip);
    this.accs.forEach((acc, a) => {
      acc.ensure(this.table.size);
      const ci = this.aggIndex[a];
      acc.add(ci < 0 ? null : batch.columns[ci], gids, n);
    });
  }

  finish(): PartialAggregate {
    const { groups, keys } = this.bySort ? this.groupBySort() : { groups: this.table.size, keys: this.table.keyColumns() };
    const hashes = this.bySort ? hashKeys(keys, groups) : this.table.hashes();
    return { ...this.header, groups, keys, hashes, states: this.accs.map((acc) => acc.state(groups)) };
  }

  /** The final result of the rows added, as finalizeAggregate(finish()) gives it, without a hash table where the groups came from sorting. */
  result(): Batch {
    if (!this.bySort) return finalizeAggregate(this.finish());
    const { groups, keys } = this.groupBySort();
    const results = this.accs.map((acc) => finalizeNamingGroup(acc, { schema: this.header.schema, groups, keys }));
    return { schema: this.header.schema, length: groups, columns: [...keys, ...results] };
  }

  /**
   * The held batches grouped by sorting their keys: each group's rows are added in row order, as
   * the hash table adds them, so the states are the same; the groups come out in key order.
   */
  private groupBySort(): { groups: number; keys: Column[] } {
    const used = [...new Set([...this.keyIndex, ...this.aggIndex.filter((i) => i >= 0)])];
    const schema = used.map((i) => this.input[i]);
    let batch = concatBatches(schema, this.held.map((b) => ({ schema, length: b.length, columns: used.map((i) => b.columns[i]) })));
    this.held.length = 0;
    const keyAt = this.keyIndex.map((i) => used.indexOf(i));
    const nullKeys = this.spec.dropna ? nullKeyMask(keyAt.map((k) => batch.columns[k]), batch.length) : null;
    if (nullKeys !== null) {
      const kept: number[] = [];
      for (let i = 0; i < batch.length; i++) if (nullKeys[i] === 0) kept.push(i);
      batch = takeBatch(batch, Int32Array.from(kept));
    }
    const keyCols = keyAt.map((k) => batch.columns[k]);
    const { groups, groupOfRow, firstRows } = groupRowsByKeys(keyCols, batch.length);
    // The rows in key order (stable): every accumulator then writes its groups one after another,
    // where in row order each row touched a random group of arrays far larger than the caches.
    const { order } = rowsByBucket(groupOfRow, groups);
    const sortedGroups = new Int32Array(order.length);
    for (let j = 0; j < order.length; j++) sortedGroups[j] = groupOfRow[order[j]];
    const aggAt = this.aggIndex.map((i) => (i < 0 ? -1 : used.indexOf(i)));
    const sortedColumns = new Map<number, Column>();
    const sortedColumn = (at: number) => sortedColumns.get(at) ?? sortedColumns.set(at, takeColumn(batch.columns[at], order)).get(at)!;
    this.accs.forEach((acc, a) => {
      acc.ensure(groups);
      acc.add(aggAt[a] < 0 ? null : sortedColumn(aggAt[a]), sortedGroups, batch.length);
    });
    return { groups, keys: keyCols.map((c) => takeColumn(c, firstRows)) };
  }
}

/** Whether a sample of the first rows predicts more groups than SORT_GROUP_SHARE of all `length` rows. */
function manyGroups(keyCols: Column[], length: number): boolean {
  const rows = Math.min(length, SORT_SAMPLE_ROWS);
  const sample = new KeyTable(keyCols.map((c) => c.type));
  sample.insert(keyCols, hashKeys(keyCols, rows), rows);
  return estimatedGroups(sample.size, rows, length) > SORT_GROUP_SHARE * length;
}

/**
 * Groups expected in `rows` rows when `seen` distinct keys were seen in the first `sampled`: the
 * keys of a sample that saw every key at most once could be as many as the rows.
 */
function estimatedGroups(seen: number, sampled: number, rows: number): number {
  if (seen >= sampled) return rows;
  // Keys drawn evenly from d: seen = d (1 - e^(-sampled/d)); solve for d by bisection.
  let lo = seen, hi = rows * 4 + seen;
  for (let k = 0; k < 60; k++) {
    const d = (lo + hi) / 2;
    if (d * -Math.expm1(-sampled / d) < seen) lo = d; else hi = d;
  }
  return lo * -Math.expm1(-rows / lo);
}

function identity(n: number): Int32Array {
  const map = new Int32Array(n);
  for (let i = 0; i < n; i++) map[i] = i;
  return map;
}

/**
 * A merged partial's hash table and accumulators, kept (in this process only) so that a chain
 * merged = mergePartials(merged, next) extends them instead of rebuilding from `merged` every time.
 * Structured clone does not carry this; a partial without an entry is rebuilt from its data.
 */
interface Live { table: KeyTable; accs: Accumulator[] }
const liveState = new WeakMap<PartialAggregate, Live>();

/** Table and accumulators holding p; takes over p's live entry when it has one. */
function takeLive(p: PartialAggregate): Live {
  const live = liveState.get(p);
  if (live !== undefined) {
    liveState.delete(p); // about to be extended past p's groups
    return live;
  }
  const table = new KeyTable(p.keys.map((c) => c.type));
  table.reserve(p.groups);
  table.insert(p.keys, p.hashes, p.groups); // ids 0..p.groups-1 in p's own order
  const accs = newAccumulators(p, p.groups);
  const map = identity(p.groups);
  accs.forEach((acc, i) => acc.merge(p.states[i], map));
  return { table, accs };
}

function snapshot(header: Pick<PartialAggregate, 'schema' | 'spec' | 'aggInputTypes'>, live: Live): PartialAggregate {
  const groups = live.table.size;
  return { ...header, groups, keys: live.table.keyColumns(), hashes: live.table.hashes(), states: live.accs.map((acc) => acc.state(groups)) };
}

/** Combines two partials: a's groups first, then b's (a fixed order, for determinism). Neither input changes. */
export function mergePartials(a: PartialAggregate, b: PartialAggregate): PartialAggregate {
  const merger = new PartialMerger();
  merger.add(a);
  merger.add(b);
  return merger.result()!;
}

/**
 * Merges a sequence of partials in the order added (each one's groups after those already held),
 * as a chain of mergePartials does, but into one live table: no copy of the merged state per
 * partial (with 90k groups that copy cost as much as the merge itself), only in `result`.
 */
export class PartialMerger {
  private first: PartialAggregate | null = null;
  private live: Live | null = null;
  /** The most bytes a group (keys, hash, per-group states) and a nunique pair took in an added partial. */
  private largestGroupBytes = 0;
  private largestPairBytes = 0;

  add(p: PartialAggregate): void {
    const pairColumns = p.states.flatMap((s) => s.pairs ?? []);
    const pairBytes = columnsBytes(pairColumns);
    const pairs = p.states.reduce((n, s) => n + (s.pairs === null ? 0 : columnLength(s.pairs[0])), 0);
    if (p.groups > 0) this.largestGroupBytes = Math.max(this.largestGroupBytes, (partialBytes(p) - pairBytes) / p.groups);
    if (pairs > 0) this.largestPairBytes = Math.max(this.largestPairBytes, pairBytes / pairs);
    if (this.first === null) { this.first = p; return; }
    const live = (this.live ??= takeLive(this.first));
    live.table.reserve(live.table.size + p.groups);
    const map = live.table.insert(p.keys, p.hashes, p.groups);
    live.accs.forEach((acc, i) => {
      acc.ensure(live.table.size);
      acc.merge(p.states[i], map);
    });
  }

  /** Groups held. */
  groups(): number {
    return this.live?.table.size ?? this.first?.groups ?? 0;
  }

  /** About the bytes the merged state holds: its groups and nunique pairs at the largest sizes seen. */
  bytes(): number {
    if (this.live === null) return this.first === null ? 0 : partialBytes(this.first);
    const pairs = this.live.accs.reduce((n, acc) => n + (acc.pairCount?.() ?? 0), 0);
    return this.live.table.size * this.largestGroupBytes + pairs * this.largestPairBytes;
  }

  /** The merged partial; null before any was added. */
  result(): PartialAggregate | null {
    if (this.live === null) return this.first;
    const merged = snapshot(this.first!, this.live);
    liveState.set(merged, this.live);
    this.live = null;
    this.first = merged;
    return merged;
  }
}

/**
 * A partial from rows that each carry a key and one state per aggregate, where keys may repeat:
 * rows with equal keys merge, in row order (a partial re-keyed, as joins below aggregates need).
 * `states[a]` holds one row per input row, in the layout of aggregate a's accumulator.
 */
export function partialOfKeyedStates(header: Pick<PartialAggregate, 'schema' | 'spec' | 'aggInputTypes'>, keys: Column[], hashes: Uint32Array,
                                     rows: number, states: AggState[]): PartialAggregate {
  const table = new KeyTable(keys.map((c) => c.type));
  const gids = table.insert(keys, hashes, rows);
  const accs = newAccumulators(header, table.size);
  accs.forEach((acc, i) => acc.merge(states[i], gids));
  return snapshot(header, { table, accs });
}

/** The result: one row per group, sorted by the keys (sort.ts order: nulls last). */
export function finalizeAggregate(p: PartialAggregate): Batch {
  const live = takeLive(p);
  liveState.set(p, live); // finalising does not change the state
  const results = live.accs.map((acc) => finalizeNamingGroup(acc, p));
  const order = sortIndicesByKeys(p.keys, p.groups);
  const columns = [...p.keys, ...results].map((c) => takeColumn(c, order));
  return { schema: p.schema, length: p.groups, columns };
}

/**
 * The result of merging `partials` in the given order, found by ranking their keys instead of
 * hashing them (a key range's slices, each sorted by key, with many groups between them). Each
 * group's states merge in the partials' order, as PartialMerger merges them, so the bytes are the
 * same as finalizeAggregate(merged); the groups come out in key order without a sort.
 */
export function finalizeMergedBySort(partials: readonly PartialAggregate[]): Batch {
  const header = partials[0];
  const keySchema = header.schema.slice(0, header.keys.length);
  const allKeys = concatBatches(keySchema, partials.map((p) => ({ schema: keySchema, length: p.groups, columns: p.keys }))).columns;
  const total = partials.reduce((n, p) => n + p.groups, 0);
  const { groups, groupOfRow, firstRows } = groupRowsByKeys(allKeys, total);
  const accs = newAccumulators(header, groups);
  let at = 0;
  for (const p of partials) {
    const map = groupOfRow.subarray(at, at + p.groups);
    accs.forEach((acc, i) => acc.merge(p.states[i], map));
    at += p.groups;
  }
  const keys = allKeys.map((c) => takeColumn(c, firstRows));
  const named = { ...header, groups, keys };
  const results = accs.map((acc) => finalizeNamingGroup(acc, named));
  return { schema: header.schema, length: groups, columns: [...keys, ...results] };
}

/** acc's results; an overflow names its group by the key values (`origin=ATL, year=2024`). */
function finalizeNamingGroup(acc: Accumulator, p: Pick<PartialAggregate, 'schema' | 'groups' | 'keys'>): Column {
  try {
    return acc.finalize(p.groups);
  } catch (err) {
    if (!(err instanceof GroupOverflow)) throw err;
    const key = p.keys.map((col, k) => `${p.schema[k].name}=${cellFormatter(col, 'table')(err.group)}`).join(', ');
    throw new RuntimeFailure(`${err.detail} in the group ${key}`);
  }
}

/** Splits the groups into `parts` partials by key hash (for spilling); merging them back gives p again. */
export function splitPartial(p: PartialAggregate, parts: number): PartialAggregate[] {
  const bucket = new Int32Array(p.groups);
  for (let g = 0; g < p.groups; g++) bucket[g] = bucketOf(p.hashes[g], parts);
  return partitionPartial(p, bucket, parts);
}

/** Splits the groups into `parts` partials: group g goes to part `partOfGroup[g]`, keeping group order. */
export function partitionPartial(p: PartialAggregate, partOfGroup: Int32Array, parts: number): PartialAggregate[] {
  const sizes = new Int32Array(parts);
  for (let g = 0; g < p.groups; g++) sizes[partOfGroup[g]]++;
  const members = Array.from(sizes, (n) => new Int32Array(n));
  sizes.fill(0);
  for (let g = 0; g < p.groups; g++) members[partOfGroup[g]][sizes[partOfGroup[g]]++] = g;
  return members.map((groups) => takeGroups(p, groups));
}

/** The partial of groups `groups` of p (in that order): group i of the result is group groups[i] of p. */
export function takeGroups(p: PartialAggregate, groups: Int32Array): PartialAggregate {
  const hashes = new Uint32Array(groups.length);
  groups.forEach((g, i) => { hashes[i] = p.hashes[g]; });
  // Each group's new id, for renumbering nunique pairs (built only when a state has pairs).
  let newId: Int32Array | null = null;
  const renumbered = () => {
    if (newId === null) {
      newId = new Int32Array(p.groups).fill(-1);
      groups.forEach((g, i) => { newId![g] = i; });
    }
    return newId;
  };
  const states = p.states.map((s) => ({
    perGroup: s.perGroup.map((c) => takeColumn(c, groups)),
    pairs: s.pairs === null ? null : pairsOfGroups(s.pairs, renumbered()),
  }));
  return { ...p, groups: groups.length, keys: p.keys.map((c) => takeColumn(c, groups)), hashes, states };
}

/**
 * p with its groups in key order (sort.ts order) and its nunique pairs in group order, so that
 * consecutive groups can be cut off by `sliceOfSorted` without a scan of the whole partial.
 */
export function sortedPartial(p: PartialAggregate): PartialAggregate {
  const sorted = inKeyOrder(p.keys, p.groups) ? p : takeGroups(p, sortIndicesByKeys(p.keys, p.groups));
  const states = sorted.states.map((s) => (s.pairs === null ? s : { ...s, pairs: pairsInGroupOrder(s.pairs, sorted.groups) }));
  return { ...sorted, states };
}

/** Whether the groups' keys already ascend (a partial grouped by sorting: PartialAggregator.groupBySort). */
function inKeyOrder(keys: Column[], groups: number): boolean {
  const cmp = rowComparer(keys);
  for (let g = 1; g < groups; g++) if (cmp(g - 1, g) >= 0) return false;
  return true;
}

/** Groups [start, end) of a partial from `sortedPartial`, numbered from 0. */
export function sliceOfSorted(p: PartialAggregate, start: number, end: number): PartialAggregate {
  const states = p.states.map((s) => ({
    perGroup: s.perGroup.map((c) => sliceColumn(c, start, end)),
    pairs: s.pairs === null ? null : pairsOfSlice(s.pairs, start, end),
  }));
  return { ...p, groups: end - start, keys: p.keys.map((c) => sliceColumn(c, start, end)), hashes: p.hashes.slice(start, end), states };
}

/** Pairs stably reordered by group (a counting sort over the group ids). */
function pairsInGroupOrder(pairs: Column[], groups: number): Column[] {
  const gw = int64Words(pairs[0] as Int64Column);
  const groupOf = new Int32Array(gw.length / 2);
  for (let i = 0; i < groupOf.length; i++) groupOf[i] = gw[2 * i];
  const { order } = rowsByBucket(groupOf, groups);
  return [takeColumn(pairs[0], order), takeColumn(pairs[1], order)];
}

/** The pairs of groups [start, end) when pairs are in group order, renumbered from 0. */
function pairsOfSlice(pairs: Column[], start: number, end: number): Column[] {
  const gw = int64Words(pairs[0] as Int64Column);
  const firstAtLeast = (g: number) => {
    let lo = 0, hi = gw.length / 2;
    while (lo < hi) { const mid = (lo + hi) >>> 1; if (gw[2 * mid] < g) lo = mid + 1; else hi = mid; }
    return lo;
  };
  const a = firstAtLeast(start), b = firstAtLeast(end);
  const words = new Int32Array(2 * (b - a));
  for (let i = a; i < b; i++) words[2 * (i - a)] = gw[2 * i] - start;
  return [{ type: 'int64', values: new BigInt64Array(words.buffer), valid: null }, sliceColumn(pairs[1], a, b)];
}

/** The (group, value) pairs whose group has a new id (newId[g] >= 0), with their groups renumbered. */
function pairsOfGroups(pairs: Column[], newId: Int32Array): Column[] {
  const gw = int64Words(pairs[0] as Int64Column);
  const n = gw.length / 2;
  const rows: number[] = [];
  for (let i = 0; i < n; i++) if (newId[gw[2 * i]] >= 0) rows.push(i);
  const words = new Int32Array(2 * rows.length);
  rows.forEach((r, i) => { words[2 * i] = newId[gw[2 * r]]; });
  return [{ type: 'int64', values: new BigInt64Array(words.buffer), valid: null }, takeColumn(pairs[1], Int32Array.from(rows))];
}

/** Approximate bytes a partial holds, for memory accounting and spill decisions. */
export function partialBytes(p: PartialAggregate): number {
  return p.hashes.byteLength + columnsBytes([...p.keys, ...p.states.flatMap((s) => [...s.perGroup, ...(s.pairs ?? [])])]);
}

function columnsBytes(columns: Column[]): number {
  return batchBytes({ schema: [], length: 0, columns });
}
