// Splitting a CSV chunk already on the device into records and the selected columns' values, with
// the CPU reader's rules (WGSL: csv-rows.wgsl.ts). Results stay on the device, in the layout of
// src/engine/batch.ts columns; `columnOf` brings one back as it is, with no per-row host work.

import type { Column } from '../engine/batch.js';
import type { GpuContext } from '../engine/gpu/device.js';
import { freeBuffer, kernelFor, readBack, readU32, sharedUniform, storageBuffer, submit, workgroupsFor } from '../engine/gpu/buffers.js';
import { findRecords, MAX_CSV_COLUMNS } from './csv-scan.js';
import { CSV_ROWS_WGSL, CSV_VALID_BITS_WGSL } from './csv-rows.wgsl.js';
import { decimalTableWords } from './csv-float.wgsl.js';
import type { DeviceAggColumn } from './groupby-aggregate.js';
import type { HashedKeys } from './key-hash.js';

/** The reciprocals split_rows converts decimals with, appended to its parameters. */
const DECIMAL_TABLE = decimalTableWords();

export type CsvFieldKind = 'int64' | 'float64' | 'text';
const KIND_CODE: Record<CsvFieldKind, number> = { int64: 0, float64: 1, text: 2 };

export const MAX_KEY_COLUMNS = 4;
export const MAX_NULL_TEXTS = 8;
export const MAX_NULL_TEXT_BYTES = 16;

export interface CsvRowsRequest {
  /** Fields every record must have. */
  width: number;
  /** The field delimiter byte (the quote is always '"'). */
  delimiter: number;
  /** Fields to extract (at most MAX_CSV_COLUMNS). */
  columns: readonly { index: number; kind: CsvFieldKind }[];
  /** Positions in `columns` of the group-by keys, in key order (at most MAX_KEY_COLUMNS). */
  keyColumns: readonly number[];
  /** Rows with a null key get no group (--dropna). */
  dropna: boolean;
  /** Field texts that mean null (at most MAX_NULL_TEXTS of at most MAX_NULL_TEXT_BYTES bytes). */
  nullValues: readonly string[];
  /** Test hook: ANDed into both words of hashed keys, so that tests can force collisions. */
  hashMask?: number;
}

export interface CsvRows {
  records: number;
  /** Bits of CSV_ROW_PROBLEMS (csv-rows.wgsl.ts), plus UNFINISHED_RECORD; 0 = all parsed. */
  problems: number;
  /** Nulls per extracted column. */
  nulls: Uint32Array;
  /** 2 words per (column, record), column-major: int64 words, float64 bits, or a text key's hash. */
  values: GPUBuffer;
  /** 1 byte per (column, record), 1 = present; each column starts at a multiple of 4 bytes. */
  validBytes: GPUBuffer;
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
  if (req.keyColumns.length > MAX_KEY_COLUMNS) throw new Error(`splitCsvRows groups by at most ${MAX_KEY_COLUMNS} keys`);
  const { records, recEnd } = await findRecords(ctx, data, nbytes, Math.ceil(nbytes / 4));
  const lastEnd = records === 0 ? -1 : (await readU32(ctx, recEnd, 1, records - 1))[0];
  const n = Math.max(1, records);
  const ncols = Math.max(1, req.columns.length);
  const values = storageBuffer(ctx, n * ncols * 8, 'csv values');
  const validBytes = storageBuffer(ctx, validStride(n) * ncols * 4, 'csv validity');
  const key: HashedKeys = {
    n: records,
    keyCount: req.keyColumns.length,
    words: storageBuffer(ctx, n * 8, 'csv key words'),
    validMask: storageBuffer(ctx, Math.ceil(n / 32) * 4, 'csv key validity'),
    spans: storageBuffer(ctx, n * Math.max(1, req.keyColumns.length) * 8, 'csv key spans'),
  };
  const counters = storageBuffer(ctx, (1 + MAX_CSV_COLUMNS) * 4, 'csv row counters');
  const params = sharedUniform(ctx, paramWords(records, req));
  kernelFor(ctx, 'csv-rows', CSV_ROWS_WGSL)
    .dispatch('split_rows', [data, recEnd, values, validBytes, key.words, key.validMask, key.spans, counters, params], workgroupsFor(records));
  const found = await readU32(ctx, counters, 1 + req.columns.length);
  for (const b of [recEnd, counters]) freeBuffer(ctx, b);
  return {
    records,
    problems: found[0] | (lastEnd === nbytes - 1 || nbytes === 0 ? 0 : UNFINISHED_RECORD),
    nulls: found.slice(1),
    values,
    validBytes,
    key,
    free: () => { for (const b of [values, validBytes, key.words, key.validMask, key.spans]) freeBuffer(ctx, b); },
  };
}

/** Words per column in the validity bytes: whole groups of 32 rows, so valid_bits reads only its own column. */
function validStride(records: number): number {
  return Math.ceil(records / 32) * 8;
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
  const keyCols = [0, 1, 2, 3].map((k) => req.keyColumns[k] ?? 0xffffffff);
  const exactInt = req.keyColumns.length === 1 && req.columns[req.keyColumns[0]].kind === 'int64';
  const flags = (exactInt ? 1 : 0) | (req.dropna ? 2 : 0) | (req.delimiter << 8);
  const head = [records, req.columns.length, req.width, req.keyColumns.length, req.hashMask ?? 0xffffffff, req.nullValues.length,
    validStride(Math.max(1, records)), flags, ...keyCols];
  return [...head, ...cols, ...lengths, ...texts, ...DECIMAL_TABLE];
}

/**
 * Column j of the split rows as a host column, straight from the GPU's words: int64 / float64
 * values with validity, or for a text column an int64 column of its hash words (zeros for a
 * non-key column) with the text's validity (the GPU aggregates count such a column's non-nulls).
 */
export async function columnOf(ctx: GpuContext, rows: CsvRows, j: number, kind: CsvFieldKind): Promise<Column> {
  const n = rows.records;
  const words = await readBack(ctx, rows.values, n * 8, j * n * 8);
  const stride = validStride(Math.max(1, n)) * 4;
  const valid = rows.nulls[j] === 0 ? null : new Uint8Array(await readBack(ctx, rows.validBytes, stride, j * stride), 0, n);
  return kind === 'float64'
    ? { type: 'float64', values: new Float64Array(words), valid }
    : { type: 'int64', values: new BigInt64Array(words), valid };
}

/**
 * Column j of the split rows as a group-by input that stays on the device: its value words
 * copied out, its validity bytes packed into bits. Text columns give their validity only (the
 * group-by counts their non-nulls). The caller frees both buffers.
 */
export function deviceColumn(ctx: GpuContext, rows: CsvRows, j: number, kind: CsvFieldKind): DeviceAggColumn {
  const n = rows.records;
  const values = storageBuffer(ctx, n * 8, 'csv column values');
  const mask = storageBuffer(ctx, Math.ceil(n / 32) * 4, 'csv column validity');
  const enc = ctx.device.createCommandEncoder();
  if (n > 0) enc.copyBufferToBuffer(rows.values, j * n * 8, values, 0, n * 8);
  submit(ctx, enc.finish());
  const hasNulls = rows.nulls[j] !== 0;
  if (hasNulls) {
    const words = Math.ceil(n / 32);
    const params = sharedUniform(ctx, [words, j * validStride(Math.max(1, n))]);
    kernelFor(ctx, 'csv-valid-bits', CSV_VALID_BITS_WGSL).dispatch('valid_bits', [rows.validBytes, mask, params], workgroupsFor(words));
  }
  return { type: kind === 'float64' ? 'float64' : 'int64', values, mask, hasNulls };
}
