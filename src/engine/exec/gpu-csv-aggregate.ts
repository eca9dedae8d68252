// The partial-aggregate terminal over a CSV chunk with the per-row work on the GPU: the chunk's
// raw bytes go up once; the GPU finds records and fields, detects nulls, parses int64/float64
// fields and hashes the key fields (csv-rows.ts), groups the rows in one key table (an int64 key
// by its value; any other key set by its 64-bit hash, made exact by comparing each row's key bytes
// with those of the row owning its slot: key-hash.ts) and aggregates the columns there
// (groupby-aggregate.ts). Nothing per row comes back: one record per group does, and the host
// takes each group's key from its owner row. The result is the CPU's PartialAggregate.
//
// Anything the GPU path does not handle, in the query (float/bool/timestamp columns, more than 4
// keys, a quote other than '"') or in the chunk (a blank or ragged record, a quote error, a value the
// GPU does not parse, a hash collision), returns a `fallback` reason: the caller then reads the
// chunk with the CPU reader, which gives the right rows or the located error.

import type { Column, Schema, StringColumn } from '../batch.js';
import type { GpuContext } from '../gpu/device.js';
import { copyUnescaped } from '../io/csv/columns.js';
import { freeBuffer, uploadNew } from '../gpu/buffers.js';
import { MAX_CSV_COLUMNS } from '../../kernels/csv-scan.js';
import { deviceColumn, MAX_KEY_COLUMNS, nullTextsFit, splitCsvRows, type CsvFieldKind, type CsvRows } from '../../kernels/csv-rows.js';
import {
  aggregateByTable, buildKeyTable, freeKeyTable, gatherEntries, type DeviceAggColumn, type DeviceGroupAggregates, type GatherSource, type KeyTable,
} from '../../kernels/groupby-aggregate.js';
import { keysGroupExactly } from '../../kernels/key-hash.js';
import { dialectOf } from '../io/csv/options.js';
import { hashKeys } from '../ops/keys.js';
import type { AggregateSpec, PartialAggregate } from '../ops/aggregate/index.js';
import type { SourceSpec, Task } from './fragment.js';
import { aggregatedColumns, columnNeeds, gpuSupports, groupsToKeep, partialOfGroups } from './gpu-aggregate.js';
import { PhaseTimes } from '../gpu/timing.js';
import { uploadChunkFromFile } from './gpu-csv-bytes.js';
import { gatherSpans, type PackedSpans } from '../../kernels/span-bytes.js';
import { aggregateBelowJoin } from './join-aggregate.js';

export type CsvSource = Extract<SourceSpec, { kind: 'csv' }>;

export type GpuCsvOutcome = { partial: PartialAggregate; rows: number } | { fallback: string };

export interface GpuCsvOptions {
  /** Test hook: ANDed into the string-key hash words to force collisions. */
  hashMask?: number;
}

/** Test hook GPUFRAME_GPU_KEY_HASH_MASK (a number): forces hash collisions in worker processes. */
export function gpuCsvOptionsFromEnv(): GpuCsvOptions {
  const mask = process.env.GPUFRAME_GPU_KEY_HASH_MASK;
  return mask === undefined || mask === '' ? {} : { hashMask: Number(mask) >>> 0 };
}

/** What the GPU extracts: one entry per input column, and which of them are the keys. */
interface CsvPlan {
  width: number;
  delimiter: number;
  columns: { index: number; kind: CsvFieldKind }[];
  /** Positions in `columns` of the keys, in key order. */
  keys: number[];
  /** One int64 key: its values group the rows as they are (no hashing, nothing to verify). */
  exactIntKey: boolean;
}

const KIND_OF: Partial<Record<string, CsvFieldKind>> = { int64: 'int64', float64: 'float64', string: 'text' };

/**
 * Whether the task is one the GPU CSV path runs (a partial aggregate straight over a CSV chunk):
 * the tasks a GPU worker speeds up. Anything else (joins, other sources) a GPU worker runs with
 * the CPU code, no faster than a CPU worker, so idle CPU workers should have it first; so are
 * group-bys with many groups per partition (terminal.manyGroups), for the host work per group.
 */
export function gpuCsvPathApplies(task: Task): boolean {
  const below = aggregateBelowJoin(task);
  if (below !== null) return gpuCsvPathApplies(below.leftTask);
  const { fragment, terminal } = task;
  return terminal.kind === 'partial-aggregate' && !terminal.manyGroups && fragment.source.kind === 'csv' && fragment.ops.every((op) => op.kind === 'project')
    && gpuSupports(terminal.spec, terminal.inputSchema) && typeof planOf(fragment.source, terminal.spec, terminal.inputSchema) !== 'string';
}

/** The plan, or why this query cannot take the GPU CSV path. */
function planOf(source: CsvSource, spec: AggregateSpec, input: Schema): CsvPlan | string {
  const { options, layout } = source;
  if (options.quote !== '"') return 'a quote other than "';
  if (!nullTextsFit(options.nullValues)) return 'too many or too long --null-values';
  if (spec.keys.length < 1 || spec.keys.length > MAX_KEY_COLUMNS) return `not 1 to ${MAX_KEY_COLUMNS} key columns`;
  if (input.length > MAX_CSV_COLUMNS) return 'too many columns';
  const names = layout.schema.map((f) => f.name);
  const columns: CsvPlan['columns'] = [];
  for (const field of input) {
    const index = names.indexOf(field.name);
    const kind = KIND_OF[field.type];
    if (index < 0 || !kind || layout.schema[index].type !== field.type) return `column ${field.name} (${field.type})`;
    columns.push({ index, kind });
  }
  const keys = spec.keys.map((name) => input.findIndex((f) => f.name === name));
  if (keys.some((j) => j < 0 || columns[j].kind === 'float64')) return 'a float64 key';
  return { width: layout.schema.length, delimiter: dialectOf(options).delimiter, columns, keys, exactIntKey: keys.length === 1 && columns[keys[0]].kind === 'int64' };
}

/** Groups seen in this process's last chunk: sizes the next chunk's first key table. */
let groupsSeen = 0;

export async function gpuCsvPartialAggregate(gpu: GpuContext, source: CsvSource, spec: AggregateSpec, input: Schema,
                                             options: GpuCsvOptions = {}): Promise<GpuCsvOutcome> {
  const plan = planOf(source, spec, input);
  if (typeof plan === 'string') return { fallback: plan };
  const phases = new PhaseTimes();
  // Key spans use the top two bits of a position as flags.
  if (source.chunk.end - source.chunk.start + 1 >= Math.min(gpu.device.limits.maxStorageBufferBindingSize, 2 ** 30)) return { fallback: 'chunk larger than a GPU binding' };
  let data: GPUBuffer | null = null;
  let rows: CsvRows | null = null;
  let table: KeyTable | null = null;
  const inputs: DeviceAggColumn[] = [];
  try {
    const uploaded = await uploadChunkFromFile(gpu, source.chunk);
    data = uploaded.data;
    const length = uploaded.length;
    phases.mark('upload');
    rows = await splitCsvRows(gpu, data, length, {
      width: plan.width, delimiter: plan.delimiter, columns: plan.columns, keyColumns: plan.keys, dropna: spec.dropna, nullValues: source.options.nullValues, hashMask: options.hashMask,
    });
    phases.mark('split');
    if (rows.problems !== 0) return { fallback: `records the GPU does not parse (problems ${rows.problems})` };
    const n = rows.records;
    // One table over the key words: an int64 key's own words, or a hash of the key fields whose
    // grouping is then checked byte by byte. Rows without a key (null, or --dropna) use the null slot.
    table = await buildKeyTable(gpu, rows.key.words, rows.key.validMask, true, n, Math.max(1024, 2 * groupsSeen));
    if (!plan.exactIntKey && !(await keysGroupExactly(gpu, data, rows.key, table))) return { fallback: 'key hash collision' };
    phases.mark('group');
    const inputSlot = new Map<number, number>();
    for (const j of aggregatedColumns(spec, input)) {
      if (plan.columns[j].kind === 'text' && rows.nulls[j] === 0) { inputSlot.set(j, -1); continue; }
      inputSlot.set(j, inputs.length);
      inputs.push({ ...deviceColumn(gpu, rows, j, plan.columns[j].kind), needs: columnNeeds(spec, input[j].name) });
    }
    const grouped = table;
    table = null; // aggregateByTable frees it
    const result = await aggregateByTable(gpu, grouped, inputs, n);
    groupsSeen = result.groups;
    phases.mark('aggregate');
    const pick = groupsToKeep(result, plan.exactIntKey && !spec.dropna);
    const keys = await keysOfGroups(gpu, data, rows, plan, pick, result);
    const partial = partialOfGroups(result, pick, keys, hashKeys(keys, pick.length), input, spec, inputSlot);
    phases.mark('keys');
    phases.report(`gpu csv ${source.chunk.displayName}@${source.chunk.start}: ${n} rows`);
    return { rows: n, partial };
  } finally {
    rows?.free();
    if (table) freeKeyTable(gpu, table);
    for (const c of inputs) { freeBuffer(gpu, c.values); freeBuffer(gpu, c.mask); }
    if (data) freeBuffer(gpu, data);
  }
}

/**
 * The key columns of the picked groups, from each group's owner row (null for the null-key group):
 * the owner rows' key spans and int64 words are gathered on the device, one readback for all, then
 * the text keys' bytes from the chunk in `data`, a second.
 */
async function keysOfGroups(gpu: GpuContext, data: GPUBuffer, rows: CsvRows, plan: CsvPlan, pick: Int32Array, result: DeviceGroupAggregates): Promise<Column[]> {
  const n = rows.records;
  // Plain loops here and below: TypedArray.from and forEach with a callback cost ~140 ns a group.
  const owners = new Uint32Array(pick.length);
  for (let i = 0; i < pick.length; i++) owners[i] = result.ownerRow[pick[i]];
  const reps = await uploadNew(gpu, owners, 'group owner rows');
  const sources: GatherSource[] = [];
  plan.keys.forEach((j, k) => {
    sources.push({ src: rows.key.spans, width: 2, srcOffset: 2 * k * n });
    if (plan.columns[j].kind === 'int64') sources.push({ src: rows.values, width: 2, srcOffset: 2 * j * n });
  });
  const gathered = await gatherEntries(gpu, reps, pick.length, sources);
  freeBuffer(gpu, reps);
  // Each key's gathered words, in the order pushed above: its spans, then an int64 key's values
  // (a key is text or int64; words null: text).
  let next = 0;
  const perKey = plan.keys.map((j) => ({ spans: gathered[next++], words: plan.columns[j].kind === 'int64' ? gathered[next++] : null }));
  // Every text key's bytes in one gather from the chunk on the device: the t-th text key's spans at t * groups.
  const textSpans = perKey.filter((k) => k.words === null).map((k) => k.spans);
  const text = textSpans.length > 0 ? await gatherSpans(gpu, data, ...spanBounds(textSpans)) : null;
  let textKey = 0;
  return perKey.map(({ spans, words }) => {
    if (words === null) return textKeys(spans, text!, textKey++ * pick.length);
    // A null int64 key field: the span says so (the exact one-key case puts such rows in the null group).
    const valid = new Uint8Array(pick.length);
    for (let i = 0; i < pick.length; i++) valid[i] = result.nullKey[pick[i]] || spans[2 * i] >>> 30 & 1 ? 0 : 1;
    return { type: 'int64', values: new BigInt64Array(words.slice().buffer), valid: valid.includes(0) ? valid : null };
  });
}

/** Start and end bytes of spans (2 words each: flags and start, end), one list after another; a null field is empty. */
function spanBounds(lists: Uint32Array[]): [Uint32Array, Uint32Array] {
  const count = lists.reduce((n, l) => n + l.length / 2, 0);
  const starts = new Uint32Array(count), ends = new Uint32Array(count);
  let i = 0;
  for (const spans of lists) {
    for (let g = 0; g < spans.length / 2; g++, i++) {
      starts[i] = spans[2 * g] & 0x3fffffff;
      ends[i] = spans[2 * g] >>> 30 & 1 ? starts[i] : spans[2 * g + 1];
    }
  }
  return [starts, ends];
}

/** The text of each group's key field (doubled quotes undone; null-text fields null): span g is packed span first + g. */
function textKeys(spans: Uint32Array, text: PackedSpans, first: number): StringColumn {
  const n = spans.length / 2;
  const offsets = new Int32Array(n + 1);
  let flagged = false;
  for (let g = 0; g < n && !flagged; g++) flagged = spans[2 * g] >>> 30 !== 0;
  if (!flagged) {
    // No null and no quoted field: the packed bytes are the column's bytes (one copy, no view per group).
    const base = text.offsets[first];
    for (let g = 1; g <= n; g++) offsets[g] = text.offsets[first + g] - base;
    return { type: 'string', offsets, data: text.data.slice(base, text.offsets[first + n]), valid: null };
  }
  let valid: Uint8Array | null = null;
  const data = new Uint8Array(text.offsets[first + n] - text.offsets[first]);
  let at = 0;
  for (let g = 0; g < n; g++) {
    const flags = spans[2 * g] >>> 30;
    if (flags & 1) {
      valid ??= new Uint8Array(n).fill(1);
      valid[g] = 0;
    } else {
      const field = text.data.subarray(text.offsets[first + g], text.offsets[first + g + 1]);
      if (flags & 2) at = copyUnescaped(field, 0, field.length, data, at, 0x22);
      else { data.set(field, at); at += field.length; }
    }
    offsets[g + 1] = at;
  }
  return { type: 'string', offsets, data: data.subarray(0, at), valid };
}
