// Parsing selected int64/float64 columns of a CSV chunk on the GPU. The chunk starts at a record
// boundary; records end at '\n' outside quotes (a '\r' before it is dropped). Blank records are
// skipped. WGSL: csv-scan.wgsl.ts. CPU twin (and the host's parser for flagged fields): csvScanCpu.

import type { Float64Column, Int64Column } from '../engine/batch.js';
import { DataError } from '../engine/errors.js';
import type { GpuContext } from '../engine/gpu/device.js';
import { freeBuffer, kernelFor, readU32, requireWholeQuads, sharedUniform, storageBuffer, uploadNew, workgroupsFor, writeBuffer, type StagingRing } from '../engine/gpu/buffers.js';
import { exclusiveScan } from './prefix-scan.js';
import { CSV_BOUNDARIES_WGSL, CSV_PARSE_WGSL } from './csv-scan.wgsl.js';

export interface CsvColumnRequest { index: number; type: 'int64' | 'float64' }

export interface CsvScanRequest {
  bytes: Uint8Array;
  columns: readonly CsvColumnRequest[];
  /** Last chunk of the input: bytes after the last newline form a record too. */
  final: boolean;
}

export interface CsvScanResult {
  /** Records parsed (blank ones not counted). */
  records: number;
  /** Bytes consumed: up to and including the last record's newline (all bytes when final). */
  consumed: number;
  columns: (Int64Column | Float64Column)[];
}

export const MAX_CSV_COLUMNS = 16;
const STATUS = { ok: 0, null: 1, host: 2, missing: 3, blank: 4 } as const;

export async function csvScan(ctx: GpuContext, req: CsvScanRequest, ring?: StagingRing): Promise<CsvScanResult> {
  if (req.columns.length > MAX_CSV_COLUMNS) throw new Error(`csvScan parses at most ${MAX_CSV_COLUMNS} columns per pass`);
  let bytes = req.bytes;
  if (req.final && bytes.length > 0 && bytes[bytes.length - 1] !== 10) {
    bytes = new Uint8Array(req.bytes.length + 1);
    bytes.set(req.bytes);
    bytes[req.bytes.length] = 10;
  }
  const nbytes = bytes.length;
  const nwords = Math.ceil(nbytes / 4);
  const data = await uploadNew(ctx, bytes, 'csv bytes', ring);
  const { records, recEnd } = await findRecords(ctx, data, nbytes, nwords);
  const consumed = records === 0 ? 0 : Math.min(req.bytes.length, (await readU32(ctx, recEnd, 1, records - 1))[0] + 1);

  const ncols = req.columns.length;
  const out = storageBuffer(ctx, Math.max(1, records * ncols) * 16, 'csv parsed fields');
  const colWords = new Array<number>(4 * MAX_CSV_COLUMNS).fill(0);
  req.columns.forEach((c, j) => { colWords[4 * j] = c.index; colWords[4 * j + 1] = c.type === 'int64' ? 0 : 1; });
  const params = sharedUniform(ctx, [records, ncols, 0, 0, ...colWords]);
  kernelFor(ctx, 'csv-parse', CSV_PARSE_WGSL).dispatch('parse_fields', [data, recEnd, out, params], workgroupsFor(records));
  const words = await readU32(ctx, out, records * ncols * 4);
  for (const b of [data, recEnd, out]) freeBuffer(ctx, b);
  return assembleColumns(words, records, req, bytes, consumed);
}

/**
 * Record ends of the chunk in device buffer `data` (nbytes bytes): a device buffer holding the
 * position of each record's '\n' (outside quotes), in order, and their count. Caller frees recEnd.
 */
export async function findRecords(ctx: GpuContext, data: GPUBuffer, nbytes: number, nwords: number): Promise<{ records: number; recEnd: GPUBuffer }> {
  requireWholeQuads(data, nbytes, 'findRecords'); // the kernels read the chunk 16 bytes at a time
  const quotes = storageBuffer(ctx, (nwords + 1) * 4, 'csv quote counts');
  const recs = storageBuffer(ctx, (nwords + 1) * 4, 'csv record counts');
  const params = sharedUniform(ctx, [nbytes, nwords]);
  const k = kernelFor(ctx, 'csv-boundaries', CSV_BOUNDARIES_WGSL);
  const wg = workgroupsFor(nwords, 4); // a quad of words a thread
  k.dispatch('quote_counts', [data, quotes, null, null, params], wg);
  exclusiveScan(ctx, quotes, nwords);
  writeBuffer(ctx, recs, nwords * 4, new Uint32Array(1));
  k.dispatch('count_records', [data, quotes, recs, null, params], wg);
  exclusiveScan(ctx, recs, nwords + 1);
  const [records] = await readU32(ctx, recs, 1, nwords);
  const recEnd = storageBuffer(ctx, Math.max(1, records) * 4, 'csv record ends');
  k.dispatch('list_records', [data, quotes, recs, recEnd, params], wg);
  for (const b of [quotes, recs]) freeBuffer(ctx, b); // later users of a recycled buffer queue after list_records
  return { records, recEnd };
}

/** Builds the columns from the GPU's per-field words, 4096 records per call (see validity.ts). */
function assembleColumns(words: Uint32Array, records: number, req: CsvScanRequest, bytes: Uint8Array, consumed: number): CsvScanResult {
  const ncols = req.columns.length;
  const keep: number[] = [];
  for (let r = 0; r < records; r++) if (ncols === 0 || words[r * ncols * 4 + 3] !== STATUS.blank) keep.push(r);
  const columns = req.columns.map((c, j) => {
    const valid = new Uint8Array(keep.length);
    const values = c.type === 'int64' ? new BigInt64Array(keep.length) : new Float64Array(keep.length);
    for (let at = 0; at < keep.length; at += 4096) fillSlice(words, ncols, keep, at, Math.min(keep.length, at + 4096), j, c, values, valid, bytes);
    const allValid = valid.every((v) => v === 1);
    return (c.type === 'int64'
      ? { type: 'int64', values: values as BigInt64Array, valid: allValid ? null : valid }
      : { type: 'float64', values: values as Float64Array, valid: allValid ? null : valid }) as Int64Column | Float64Column;
  });
  return { records: keep.length, consumed, columns };
}

const utf8 = new TextDecoder('utf-8');

function fillSlice(words: Uint32Array, ncols: number, keep: number[], from: number, to: number, j: number, c: CsvColumnRequest, values: BigInt64Array | Float64Array, valid: Uint8Array, bytes: Uint8Array): void {
  for (let k = from; k < to; k++) {
    const r = keep[k];
    const at = (r * ncols + j) * 4;
    const status = words[at + 3];
    if (status === STATUS.null) continue;
    if (status === STATUS.missing) throw new DataError(`record has no field ${c.index + 1}`, { line: r + 1, column: c.index + 1 });
    valid[k] = 1;
    if (status === STATUS.host) {
      const text = utf8.decode(bytes.subarray(words[at], words[at + 1]));
      const v = parseCsvField(text, c.type, r, c.index);
      if (v === null) valid[k] = 0; else values[k] = v as never;
    } else if (c.type === 'int64') {
      (values as BigInt64Array)[k] = BigInt.asIntN(64, (BigInt(words[at + 1]) << 32n) | BigInt(words[at]));
    } else {
      const v = decimalToDouble(words[at], words[at + 1], words[at + 2] | 0);
      (values as Float64Array)[k] = status & 0x100 ? -v : v;
    }
  }
}

const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i); // exact doubles

/** The double nearest to mant·10^exp10 (mant < 2^64 as lo, hi words). */
export function decimalToDouble(lo: number, hi: number, exp10: number): number {
  if (hi < 0x200000) {
    // Fast path (as in strtod): both operands are exact doubles, so one operation rounds once.
    const m = hi * 4294967296 + lo;
    if (m === 0) return 0;
    if (exp10 === 0) return m;
    if (exp10 > 0 && exp10 <= 22) return m * POW10[exp10];
    if (exp10 < 0 && exp10 >= -22) return m / POW10[-exp10];
  }
  return Number(`${(BigInt(hi) << 32n) | BigInt(lo)}e${exp10}`);
}

const INT_TEXT = /^[+-]?\d+$/;
const FLOAT_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const SPECIAL_FLOATS: Record<string, number> = { nan: NaN, '+nan': NaN, '-nan': NaN, inf: Infinity, '+inf': Infinity, '-inf': -Infinity, infinity: Infinity, '+infinity': Infinity, '-infinity': -Infinity };

/** One field's value (text already without its record's quotes): null when empty; DataError when malformed. */
export function parseCsvField(raw: string, type: 'int64' | 'float64', record: number, column: number): bigint | number | null {
  let text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) text = text.slice(1, -1).replaceAll('""', '"');
  if (text === '') return null;
  if (type === 'int64') {
    if (!INT_TEXT.test(text)) throw new DataError(`cannot parse '${text}' as int64`, { line: record + 1, column: column + 1 });
    const v = BigInt(text);
    if (v !== BigInt.asIntN(64, v)) throw new DataError(`'${text}' is out of int64 range`, { line: record + 1, column: column + 1 });
    return v;
  }
  if (FLOAT_TEXT.test(text)) return Number(text);
  const special = SPECIAL_FLOATS[text.toLowerCase()];
  if (special === undefined) throw new DataError(`cannot parse '${text}' as float64`, { line: record + 1, column: column + 1 });
  return special;
}

/** Splits a chunk into records and fields (RFC 4180 quoting), sequentially. */
export function csvRecordsCpu(bytes: Uint8Array, final: boolean): { fields: string[][]; consumed: number } {
  const text = utf8.decode(bytes);
  const fields: string[][] = [];
  let record: string[] = [];
  let fieldStart = 0, inQuotes = false, consumed = 0;
  for (let i = 0; i <= text.length; i++) {
    const atEnd = i === text.length;
    if (atEnd && (!final || fieldStart === i && record.length === 0)) break;
    const ch = atEnd ? '\n' : text[i];
    if (ch === '"') inQuotes = !inQuotes;
    else if (!inQuotes && (ch === ',' || ch === '\n')) {
      record.push(text.slice(fieldStart, i));
      fieldStart = i + 1;
      if (ch === '\n') {
        const blank = record.length === 1 && (record[0] === '' || record[0] === '\r');
        if (!blank) fields.push(record);
        record = [];
        consumed = atEnd ? bytes.length : Buffer.byteLength(text.slice(0, i + 1));
      }
    }
  }
  return { fields, consumed };
}

/** CPU twin and test oracle: the same columns parsed sequentially with JS's own number parsing. */
export function csvScanCpu(req: CsvScanRequest): CsvScanResult {
  const { fields, consumed } = csvRecordsCpu(req.bytes, req.final);
  const columns = req.columns.map((c) => {
    const valid = new Uint8Array(fields.length);
    const values = c.type === 'int64' ? new BigInt64Array(fields.length) : new Float64Array(fields.length);
    fields.forEach((rec, r) => {
      if (c.index >= rec.length) throw new DataError(`record has no field ${c.index + 1}`, { line: r + 1, column: c.index + 1 });
      const v = parseCsvField(rec[c.index], c.type, r, c.index);
      if (v !== null) { valid[r] = 1; values[r] = v as never; }
    });
    const allValid = valid.every((v) => v === 1);
    return { type: c.type, values, valid: allValid ? null : valid } as Int64Column | Float64Column;
  });
  return { records: fields.length, consumed, columns };
}
