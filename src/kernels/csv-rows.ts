// Splitting a CSV chunk already on the device into records and the selected columns' values, with
// the CPU reader's rules (WGSL: csv-rows.wgsl.ts). Results stay on the device; `columnOf` decodes
// one column on the host when it is needed there.

import type { Column, Validity } from '../engine/batch.js';
import type { GpuContext } from '../engine/gpu/device.js';
import { fillU32, freeBuffer, kernelFor, readU32, storageBuffer, uniformWords, workgroupsFor } from '../engine/gpu/buffers.js';
import { decimalToDouble, findRecords, MAX_CSV_COLUMNS } from './csv-scan.js';
import { CSV_ROWS_WGSL } from './csv-rows.wgsl.js';
import type { HashedKeys } from './key-hash.js';

export type CsvFieldKind = 'int64' | 'float64' | 'text';
const KIND_CODE: Record<CsvFieldKind, number> = { int64: 0, float64: 1, text: 2 };

export const MAX_NULL_TEXTS = 8;
export const MAX_NULL_TEXT_BYTES = 16;

export interface CsvRowsRequest {
  /** Fields every record must have. */
  width: number;
  /** Fields to extract (at most MAX_CSV_COLUMNS). */
  columns: readonly { index: number; kind: CsvFieldKind }[];
  /** Position in `columns` of the grouping key (its words, validity and spans are kept); -1 for none. */
  keyColumn: number;
  /** Field texts that mean null (at most MAX_NULL_TEXTS of at most MAX_NULL_TEXT_BYTES bytes). */
  nullValues: readonly string[];
  /** Test hook: ANDed into both hash words of text keys, so that tests can force collisions. */
  hashMask?: number;
}

export interface CsvRows {
  records: number;
  /** Bits of CSV_ROW_PROBLEMS (csv-rows.wgsl.ts), plus 16 when the bytes do not end a record; 0 = all parsed. */
  problems: number;
  /** 4 words per (column, record), column-major. */
  fields: GPUBuffer;
  key: HashedKeys;
  /** Frees the device buffers. */
  free(): void;
}

export const UNFINISHED_RECORD = 16;

/** Whether `nullValues` fit the kernel's table. */
export function nullTextsFit(nullValues: readonly string[]): boolean {
  return nullValues.length <= MAX_NULL_TEXTS && nullValues.every((t) => Buffer.byteLength(t) <= MAX_NULL_TEXT_BYTES);
}

/** Splits the `nbytes` bytes in `data` (whole records, the last one ending in '\n'). */
export async function splitCsvRows(ctx: GpuContext, data: GPUBuffer, nbytes: number, req: CsvRowsRequest): Promise<CsvRows> {
  if (req.columns.length > MAX_CSV_COLUMNS) throw new Error(`splitCsvRows extracts at most ${MAX_CSV_COLUMNS} columns`);
  if (!nullTextsFit(req.nullValues)) throw new Error('splitCsvRows: too many or too long null texts');
  const { records, recEnd } = await findRecords(ctx, data, nbytes, Math.ceil(nbytes / 4));
  const lastEnd = records === 0 ? -1 : (await readU32(ctx, recEnd, 1, records - 1))[0];
  const n = Math.max(1, records);
  const fields = storageBuffer(ctx, n * req.columns.length * 16, 'csv row fields');
  const key: HashedKeys = {
    n: records,
    words: storageBuffer(ctx, n * 8, 'csv key words'),
    validMask: storageBuffer(ctx, Math.ceil(n / 32) * 4, 'csv key validity'),
    spans: storageBuffer(ctx, n * 8, 'csv key spans'),
  };
  const problems = storageBuffer(ctx, 4, 'csv row problems');
  fillU32(ctx, key.validMask, 0);
  fillU32(ctx, problems, 0);
  const params = uniformWords(ctx, paramWords(records, req));
  kernelFor(ctx, 'csv-rows', CSV_ROWS_WGSL)
    .dispatch('split_rows', [data, recEnd, fields, key.words, key.validMask, key.spans, problems, params], workgroupsFor(records));
  const [found] = await readU32(ctx, problems, 1);
  params.destroy();
  for (const b of [recEnd, problems]) freeBuffer(ctx, b);
  return {
    records,
    problems: found | (lastEnd === nbytes - 1 || nbytes === 0 ? 0 : UNFINISHED_RECORD),
    fields,
    key,
    free: () => { for (const b of [fields, key.words, key.validMask, key.spans]) freeBuffer(ctx, b); },
  };
}

function paramWords(records: number, req: CsvRowsRequest): number[] {
  const cols = new Array<number>(4 * MAX_CSV_COLUMNS).fill(0);
  req.columns.forEach((c, j) => { cols[4 * j] = c.index; cols[4 * j + 1] = KIND_CODE[c.kind]; });
  const lengths = new Array<number>(MAX_NULL_TEXTS).fill(0);
  const texts = new Uint32Array(MAX_NULL_TEXTS * 4);
  const textBytes = new Uint8Array(texts.buffer);
  req.nullValues.forEach((t, i) => {
    const b = Buffer.from(t, 'utf8');
    lengths[i] = b.length;
    textBytes.set(b, i * MAX_NULL_TEXT_BYTES);
  });
  const head = [records, req.columns.length, req.width, req.keyColumn < 0 ? 0xffffffff : req.keyColumn, req.hashMask ?? 0xffffffff, req.nullValues.length, 0, 0];
  return [...head, ...cols, ...lengths, ...texts];
}

/**
 * Column j of the split rows as a host column: int64 / float64 values with validity, or for a text
 * column only its validity (values are zeros: the GPU aggregates count such a column's non-nulls).
 */
export async function columnOf(ctx: GpuContext, rows: CsvRows, j: number, kind: CsvFieldKind): Promise<Column> {
  const n = rows.records;
  const words = await readU32(ctx, rows.fields, n * 4, j * n * 4);
  const valid = new Uint8Array(n);
  if (kind === 'float64') {
    const values = new Float64Array(n);
    for (let at = 0; at < n; at += 4096) decodeFloats(words, at, Math.min(n, at + 4096), values, valid);
    return { type: 'float64', values, valid: allSet(valid) ? null : valid };
  }
  const lohi = new Int32Array(2 * n);
  for (let at = 0; at < n; at += 4096) decodeInts(words, at, Math.min(n, at + 4096), lohi, valid);
  return { type: 'int64', values: new BigInt64Array(lohi.buffer), valid: allSet(valid) ? null : valid };
}

// Host loops run per 4096-row slice in small functions: a hot top-level loop writing large typed
// arrays crashes dawn.node processes (notes/webgpu.md).
function decodeInts(words: Uint32Array, from: number, to: number, lohi: Int32Array, valid: Uint8Array): void {
  for (let r = from; r < to; r++) {
    if (words[4 * r + 3] === 1) continue;
    valid[r] = 1;
    lohi[2 * r] = words[4 * r];
    lohi[2 * r + 1] = words[4 * r + 1];
  }
}

function decodeFloats(words: Uint32Array, from: number, to: number, values: Float64Array, valid: Uint8Array): void {
  for (let r = from; r < to; r++) {
    const status = words[4 * r + 3];
    if (status === 1) continue;
    valid[r] = 1;
    const v = decimalToDouble(words[4 * r], words[4 * r + 1], words[4 * r + 2] | 0);
    values[r] = status & 0x100 ? -v : v;
  }
}

function allSet(valid: Validity): boolean {
  return valid === null || valid.every((v) => v === 1);
}
