// The partial-aggregate terminal over a CSV chunk with the byte work on the GPU: the chunk's raw
// bytes go up once; the GPU finds records and fields, detects nulls, parses int64/float64 fields
// and hashes the string key; rows are grouped by the exact key (hash, then a byte comparison with
// each group's representative row); gpuPartialAggregate then aggregates. The host copies each
// group's key bytes out of the chunk, and the result is the CPU's PartialAggregate.
//
// Anything the GPU path does not handle, in the query (several keys, bool/timestamp columns, other
// delimiters) or in the chunk (a blank or ragged record, a quote error, a value the GPU does not
// parse, a hash collision), returns a `fallback` reason: the caller then reads the chunk with the
// CPU reader, which gives the right rows or the located error.

import type { Column, Int64Column, Schema, StringColumn } from '../batch.js';
import type { GpuContext } from '../gpu/device.js';
import { freeBuffer, readU32 } from '../gpu/buffers.js';
import { MAX_CSV_COLUMNS } from '../../kernels/csv-scan.js';
import { columnOf, nullTextsFit, splitCsvRows, type CsvFieldKind, type CsvRows } from '../../kernels/csv-rows.js';
import { exactKeyGroups } from '../../kernels/key-hash.js';
import { hashKeys } from '../ops/keys.js';
import { aggregateOutputSchema, type AggregateSpec, type PartialAggregate } from '../ops/aggregate/index.js';
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

/** What the GPU extracts: one entry per input column, and which of them is the key. */
interface CsvPlan {
  width: number;
  columns: { index: number; kind: CsvFieldKind }[];
  key: number;
  keyIsText: boolean;
}

const KIND_OF: Partial<Record<string, CsvFieldKind>> = { int64: 'int64', float64: 'float64', string: 'text' };

/** The plan, or why this query cannot take the GPU CSV path. */
function planOf(source: CsvSource, spec: AggregateSpec, input: Schema): CsvPlan | string {
  const { options, layout } = source;
  if (options.delimiter !== ',' || options.quote !== '"') return 'delimiter or quote other than , and "';
  if (!nullTextsFit(options.nullValues)) return 'too many or too long --null-values';
  if (spec.keys.length !== 1) return 'not exactly one key column';
  if (input.length > MAX_CSV_COLUMNS) return 'too many columns';
  const names = layout.schema.map((f) => f.name);
  const columns: CsvPlan['columns'] = [];
  for (const field of input) {
    const index = names.indexOf(field.name);
    const kind = KIND_OF[field.type];
    if (index < 0 || !kind || layout.schema[index].type !== field.type) return `column ${field.name} (${field.type})`;
    columns.push({ index, kind });
  }
  const key = input.findIndex((f) => f.name === spec.keys[0]);
  if (columns[key].kind === 'float64') return 'float64 key';
  return { width: layout.schema.length, columns, key, keyIsText: columns[key].kind === 'text' };
}

export async function gpuCsvPartialAggregate(gpu: GpuContext, source: CsvSource, spec: AggregateSpec, input: Schema,
                                             options: GpuCsvOptions = {}): Promise<GpuCsvOutcome> {
  const plan = planOf(source, spec, input);
  if (typeof plan === 'string') return { fallback: plan };
  const bytes = readChunkBytes(source.chunk);
  if (bytes.length >= Math.min(gpu.device.limits.maxStorageBufferBindingSize, 2 ** 31)) return { fallback: 'chunk larger than a GPU binding' };
  const data = await uploadChunk(gpu, bytes);
  let rows: CsvRows | null = null;
  let groupOf: GPUBuffer | null = null;
  try {
    rows = await splitCsvRows(gpu, data, bytes.length, {
      width: plan.width, columns: plan.columns, keyColumn: plan.key, nullValues: source.options.nullValues, hashMask: options.hashMask,
    });
    if (rows.problems !== 0) return { fallback: `records the GPU does not parse (problems ${rows.problems})` };
    if (plan.keyIsText) {
      groupOf = await exactKeyGroups(gpu, data, rows.key);
      if (groupOf === null) return { fallback: 'key hash collision' };
    }
    // The key column as the GPU groups it: a text key becomes its representative row number.
    const columns: Column[] = [];
    for (let j = 0; j < plan.columns.length; j++) {
      const col = await columnOf(gpu, rows, j, plan.columns[j].kind);
      if (j === plan.key && groupOf !== null) {
        const words = await readU32(gpu, groupOf, 2 * rows.records);
        columns.push({ type: 'int64', values: new BigInt64Array(words.buffer, 0, rows.records), valid: col.valid });
      } else {
        columns.push(col);
      }
    }
    const gpuSchema: Schema = input.map((f, j) => ({ name: f.name, type: columns[j].type }));
    const partial = await gpuPartialAggregate(gpu, [{ schema: gpuSchema, length: rows.records, columns }], gpuSchema, spec);
    let keys = partial.keys;
    if (plan.keyIsText) keys = [textKeys(partial.keys[0] as Int64Column, await readU32(gpu, rows.key.spans, 2 * rows.records), bytes)];
    return {
      rows: rows.records,
      partial: {
        ...partial,
        schema: aggregateOutputSchema(input, spec),
        aggInputTypes: spec.aggs.map((a) => (a.column === null ? null : input.find((f) => f.name === a.column)!.type)),
        keys,
        hashes: plan.keyIsText ? hashKeys(keys, partial.groups) : partial.hashes,
      },
    };
  } finally {
    rows?.free();
    if (groupOf) freeBuffer(gpu, groupOf);
    freeBuffer(gpu, data);
  }
}

/** The groups' string keys: the text of each representative row's key field (doubled quotes undone). */
function textKeys(repRows: Int64Column, spans: Uint32Array, bytes: Uint8Array): StringColumn {
  const n = repRows.values.length;
  const offsets = new Int32Array(n + 1);
  let total = 0;
  for (let g = 0; g < n; g++) {
    if (repRows.valid !== null && repRows.valid[g] === 0) continue;
    const r = Number(repRows.values[g]);
    total += spans[2 * r + 1] - (spans[2 * r] & 0x7fffffff);
  }
  const data = new Uint8Array(total);
  let at = 0;
  for (let g = 0; g < n; g++) {
    if (repRows.valid === null || repRows.valid[g] === 1) {
      const r = Number(repRows.values[g]);
      const start = spans[2 * r] & 0x7fffffff, end = spans[2 * r + 1];
      if (spans[2 * r] >>> 31) at = copyUnescaped(bytes, start, end, data, at);
      else { data.set(bytes.subarray(start, end), at); at += end - start; }
    }
    offsets[g + 1] = at;
  }
  return { type: 'string', offsets, data: data.subarray(0, at), valid: repRows.valid };
}

/** Copies a quoted field's content, keeping one quote of each doubled pair. */
function copyUnescaped(bytes: Uint8Array, start: number, end: number, out: Uint8Array, at: number): number {
  for (let k = start; k < end; k++) {
    out[at++] = bytes[k];
    if (bytes[k] === 0x22) k++;
  }
  return at;
}
