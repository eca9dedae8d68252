// The partial-aggregate terminal over a CSV chunk with the byte work on the GPU: the chunk's raw
// bytes go up once; the GPU finds records and fields, detects nulls, parses int64/float64 fields
// and hashes the key fields (csv-rows.ts). One int64 key groups rows as it is; any other key set
// (text keys, several keys) groups them by its 64-bit hash, made exact by comparing each row's key
// bytes with its group representative's (key-hash.ts), and the representative row numbers become
// the group ids. gpuPartialAggregate then aggregates; the host copies each group's key fields out
// of the chunk, and the result is the CPU's PartialAggregate.
//
// Anything the GPU path does not handle, in the query (float/bool/timestamp columns, more than 4
// keys, a quote other than '"') or in the chunk (a blank or ragged record, a quote error, a value the
// GPU does not parse, a hash collision), returns a `fallback` reason: the caller then reads the
// chunk with the CPU reader, which gives the right rows or the located error.

import { takeColumn, type Column, type Int64Column, type Schema, type StringColumn } from '../batch.js';
import type { GpuContext } from '../gpu/device.js';
import { copyUnescaped } from '../io/csv/columns.js';
import { freeBuffer, readBack, readU32 } from '../gpu/buffers.js';
import { MAX_CSV_COLUMNS } from '../../kernels/csv-scan.js';
import { columnOf, MAX_KEY_COLUMNS, nullTextsFit, splitCsvRows, type CsvFieldKind, type CsvRows } from '../../kernels/csv-rows.js';
import { exactKeyGroups } from '../../kernels/key-hash.js';
import { dialectOf } from '../io/csv/options.js';
import { hashKeys } from '../ops/keys.js';
import { aggregateOutputSchema, partitionPartial, type AggregateSpec, type PartialAggregate } from '../ops/aggregate/index.js';
import type { SourceSpec } from './fragment.js';
import { gpuPartialAggregate } from './gpu-aggregate.js';
import { readChunkBytes, uploadChunk } from './gpu-csv-bytes.js';

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

/** The batch column holding each row's representative row (hashed keys); not an input name. */
const GROUP = '\u0000group';

export async function gpuCsvPartialAggregate(gpu: GpuContext, source: CsvSource, spec: AggregateSpec, input: Schema,
                                             options: GpuCsvOptions = {}): Promise<GpuCsvOutcome> {
  const plan = planOf(source, spec, input);
  if (typeof plan === 'string') return { fallback: plan };
  const bytes = readChunkBytes(source.chunk);
  // Key spans use the top two bits of a position as flags.
  if (bytes.length >= Math.min(gpu.device.limits.maxStorageBufferBindingSize, 2 ** 30)) return { fallback: 'chunk larger than a GPU binding' };
  const data = await uploadChunk(gpu, bytes);
  let rows: CsvRows | null = null;
  let groupOf: GPUBuffer | null = null;
  try {
    rows = await splitCsvRows(gpu, data, bytes.length, {
      width: plan.width, delimiter: plan.delimiter, columns: plan.columns, keyColumns: plan.keys, dropna: spec.dropna, nullValues: source.options.nullValues, hashMask: options.hashMask,
    });
    if (rows.problems !== 0) return { fallback: `records the GPU does not parse (problems ${rows.problems})` };
    const n = rows.records;
    const columns: Column[] = [];
    for (let j = 0; j < plan.columns.length; j++) columns.push(await columnOf(gpu, rows, j, plan.columns[j].kind));
    // Text columns are int64 stand-ins here (only their non-null counts are aggregated).
    const schema: Schema = input.map((f, j) => ({ name: f.name, type: columns[j].type }));
    let partial: PartialAggregate;
    if (plan.exactIntKey) {
      partial = await gpuPartialAggregate(gpu, [{ schema, length: n, columns }], schema, spec);
    } else {
      groupOf = await exactKeyGroups(gpu, data, rows.key);
      if (groupOf === null) return { fallback: 'key hash collision' };
      const group: Column = { type: 'int64', values: new BigInt64Array(await readBack(gpu, groupOf, 8 * n)), valid: null };
      const withGroup: Schema = [...schema, { name: GROUP, type: 'int64' }];
      let byGroup = await gpuPartialAggregate(gpu, [{ schema: withGroup, length: n, columns: [...columns, group] }], withGroup,
        { ...spec, keys: [GROUP], dropna: false });
      byGroup = withoutGroup(byGroup, BigInt(n)); // rows without a key (--dropna and a null key field)
      partial = { ...byGroup, keys: await keysOfGroups(gpu, rows, plan, columns, bytes, byGroup.keys[0] as Int64Column) };
      partial.hashes = hashKeys(partial.keys, partial.groups);
    }
    return {
      rows: n,
      partial: {
        ...partial,
        spec,
        schema: aggregateOutputSchema(input, spec),
        aggInputTypes: spec.aggs.map((a) => (a.column === null ? null : input.find((f) => f.name === a.column)!.type)),
      },
    };
  } finally {
    rows?.free();
    if (groupOf) freeBuffer(gpu, groupOf);
    freeBuffer(gpu, data);
  }
}

/** The partial without the group whose key is `key`, if there is one. */
function withoutGroup(p: PartialAggregate, key: bigint): PartialAggregate {
  const keys = (p.keys[0] as Int64Column).values;
  const at = keys.indexOf(key);
  if (at < 0) return p;
  const part = new Int32Array(p.groups);
  part[at] = 1;
  return partitionPartial(p, part, 2)[0];
}

/** The key columns of the groups, from each group's representative row. */
async function keysOfGroups(gpu: GpuContext, rows: CsvRows, plan: CsvPlan, columns: Column[], bytes: Uint8Array, reps: Int64Column): Promise<Column[]> {
  const spans = await readU32(gpu, rows.key.spans, 2 * rows.records * plan.keys.length);
  const repRows = Int32Array.from(reps.values, Number);
  return plan.keys.map((j, k) => (plan.columns[j].kind === 'text'
    ? textKeys(repRows, spans.subarray(2 * rows.records * k, 2 * rows.records * (k + 1)), bytes)
    : takeColumn(columns[j], repRows)));
}

/** The text of each representative row's key field (doubled quotes undone; null-text fields null). */
function textKeys(repRows: Int32Array, spans: Uint32Array, bytes: Uint8Array): StringColumn {
  const n = repRows.length;
  const offsets = new Int32Array(n + 1);
  let valid: Uint8Array | null = null;
  let total = 0;
  for (const r of repRows) total += spans[2 * r + 1] - (spans[2 * r] & 0x3fffffff);
  const data = new Uint8Array(total);
  let at = 0;
  for (let g = 0; g < n; g++) {
    const r = repRows[g];
    const flags = spans[2 * r] >>> 30, start = spans[2 * r] & 0x3fffffff, end = spans[2 * r + 1];
    if (flags & 1) {
      valid ??= new Uint8Array(n).fill(1);
      valid[g] = 0;
    } else if (flags & 2) {
      at = copyUnescaped(bytes, start, end, data, at, 0x22);
    } else {
      data.set(bytes.subarray(start, end), at);
      at += end - start;
    }
    offsets[g + 1] = at;
  }
  return { type: 'string', offsets, data: data.subarray(0, at), valid };
}

