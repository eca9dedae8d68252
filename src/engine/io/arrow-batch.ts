// Arrow <-> column batches. Arrow's layout is close to ours: numbers and UTF-8 offsets copy
// straight across; only validity and bool bitmaps (Arrow packs bits, we keep one byte per row) and
// narrower or differently-united types (ints, dates, timestamp units, decimals) are converted.
// Loads apache-arrow: only modules that handle Arrow data import this one.

import type * as Arrow from 'apache-arrow';
import { arrow } from './apache-arrow.js';
import {
  type Batch, type Column, type DType, type Schema, type StringColumn, type Validity,
  concatBatches, emptyBatch, sliceBatch, takeColumn,
} from '../batch.js';
import { DataError, columnIndices } from '../errors.js';
import { columnNames } from './column-names.js';
import { decimalValues, float64Values, int64Values, stringColumnOf, timestampMicros, unpackBits, type ArrowIntArray, type ArrowTimeUnit } from './arrow-values.js';

// ---------------------------------------------------------------------------------------------
// Schemas

/** Our DType for an Arrow type, or null when we cannot represent it. */
function dtypeOf(type: Arrow.DataType): DType | null {
  const T = arrow.DataType;
  if (T.isInt(type)) return 'int64';
  if (T.isFloat(type) || T.isDecimal(type)) return 'float64';
  if (T.isUtf8(type) || T.isLargeUtf8(type)) return 'string';
  if (T.isBool(type)) return 'bool';
  if (T.isTimestamp(type) || T.isDate(type)) return 'timestamp';
  if (T.isDictionary(type)) return dtypeOf(type.dictionary) === 'string' ? 'string' : null;
  return null;
}

/**
 * The names gpuframe gives the schema's fields (column-names.ts: an empty name is column<i>, a
 * name given twice a DataError). apache-arrow decodes a field whose name is empty as null (its
 * writer leaves an empty name out, and so reads one left out), so read the schema a reader
 * decoded, not a RecordBatch's or Table's: their constructors merge fields of one name
 * (Schema.assign), so the first such field takes the type of the last and a null name becomes
 * 'null' (the batches' data keeps each field's own type).
 */
export function arrowColumnNames(schema: Arrow.Schema, file?: string): string[] {
  return columnNames(schema.fields.map((f) => (f.name as string | null) ?? ''), file);
}

/** Our schema of an Arrow schema, field by field (see arrowColumnNames for which schema to pass). */
export function arrowSchemaToSchema(schema: Arrow.Schema, file?: string): Schema {
  const names = arrowColumnNames(schema, file);
  return schema.fields.map((f, i) => {
    const name = names[i];
    const type = dtypeOf(f.type);
    if (type === null) throw new DataError(`column '${name}' has Arrow type ${f.type}, which gpuframe cannot read`, { file, column: name });
    return { name, type };
  });
}

// ---------------------------------------------------------------------------------------------
// Arrow -> Batch

function validityOfData(data: Arrow.Data): Validity {
  if (data.nullCount === 0 || !data.nullBitmap || data.nullBitmap.length === 0) return null;
  return unpackBits(data.nullBitmap, data.offset, data.length);
}

/** Our unit name for an Arrow date or timestamp type. */
function timeUnitOf(type: Arrow.Timestamp | Arrow.Date_): ArrowTimeUnit {
  if (arrow.DataType.isDate(type)) return (type as Arrow.Date_).unit === arrow.DateUnit.DAY ? 'day' : 'ms';
  const units: Record<number, ArrowTimeUnit> = { [arrow.TimeUnit.SECOND]: 's', [arrow.TimeUnit.MILLISECOND]: 'ms', [arrow.TimeUnit.MICROSECOND]: 'us', [arrow.TimeUnit.NANOSECOND]: 'ns' };
  return units[(type as Arrow.Timestamp).unit];
}

function stringColumnOfData(data: Arrow.Data, valid: Validity): StringColumn {
  return stringColumnOf(data.valueOffsets as Int32Array | BigInt64Array, data.values as Uint8Array, data.length, valid);
}

function dictionaryColumn(data: Arrow.Data, valid: Validity): StringColumn {
  const dict = data.dictionary!;
  const words = concatBatches([{ name: 'd', type: 'string' }], dict.data.map((d) => ({
    schema: [{ name: 'd', type: 'string' as const }], length: d.length, columns: [stringColumnOfData(d, validityOfData(d))],
  }))).columns[0] as StringColumn;
  const idx = data.values as ArrayLike<number | bigint>;
  const take = new Int32Array(data.length);
  for (let i = 0; i < data.length; i++) take[i] = valid && valid[i] === 0 ? -1 : Number(idx[i]);
  return takeColumn(words, take) as StringColumn;
}

function columnOfData(data: Arrow.Data, name: string): Column {
  const type = data.type as Arrow.DataType;
  const T = arrow.DataType;
  const valid = validityOfData(data);
  const n = data.length;
  if (T.isInt(type)) return { type: 'int64', values: int64Values(data.values as ArrowIntArray, n, valid, name), valid };
  if (T.isFloat(type)) {
    if (type.precision === arrow.Precision.HALF) {
      const vec = arrow.makeVector(data);
      return { type: 'float64', values: Float64Array.from({ length: n }, (_, i) => Number(vec.get(i) ?? 0)), valid };
    }
    // float64: a view of the buffer the batch was read into (arrow-ipc.ts reads one per chunk),
    // not a copy; a float32 column is widened with set(), which runs at memory speed (from() iterates).
    const values = data.values as Float64Array | Float32Array;
    return { type: 'float64', values: values instanceof Float64Array ? values.subarray(0, n) : float64Values(values, n), valid };
  }
  if (T.isDecimal(type)) return { type: 'float64', values: decimalValues(data.values as Uint32Array, n, type.bitWidth, type.scale), valid };
  if (T.isUtf8(type) || T.isLargeUtf8(type)) return stringColumnOfData(data, valid);
  if (T.isDictionary(type)) return dictionaryColumn(data, valid);
  if (T.isBool(type)) return { type: 'bool', values: unpackBits(data.values as Uint8Array, data.offset, n), valid };
  if (T.isTimestamp(type) || T.isDate(type)) return { type: 'timestamp', values: timestampMicros(data.values as Int32Array | BigInt64Array, timeUnitOf(type), n), valid };
  throw new DataError(`column '${name}' has Arrow type ${type}, which gpuframe cannot read`, { column: name });
}

/** Our batch of the record batch's fields at positions `at`, typed and named by `schema`. */
function recordBatchToBatch(rb: Arrow.RecordBatch, at: readonly number[], schema: Schema): Batch {
  // By position: getChild(name) searches the fields by name each time (quadratic for wide files).
  const columns = at.map((j, i) => columnOfData(rb.getChildAt(j)!.data[0], schema[i].name));
  return { schema, length: rb.numRows, columns };
}

/**
 * Our batch of the named columns (default: all) of an Arrow table or record batch. `schema` is
 * ours of its fields, by position: by default arrowSchemaToSchema of the table's schema; readers
 * pass the one of the schema they decoded (see arrowColumnNames).
 */
export function arrowTableToBatch(table: Arrow.Table | Arrow.RecordBatch, columns?: readonly string[], schema?: Schema): Batch {
  const batches = arrowTableToBatches(table, columns, schema);
  return batches.length === 1 ? batches[0] : concatBatches(batches[0].schema, batches);
}

/** One batch per record batch (at least one: an empty one for a table without any), not joined. */
export function arrowTableToBatches(table: Arrow.Table | Arrow.RecordBatch, columns?: readonly string[], schema = arrowSchemaToSchema(table.schema)): Batch[] {
  const all = schema.map((f) => f.name);
  const at = columnIndices(all, columns ?? all);
  const picked = at.map((i) => schema[i]);
  const rbs = table instanceof arrow.Table ? table.batches : [table];
  if (rbs.length === 0) return [emptyBatch(picked)];
  return rbs.map((rb) => recordBatchToBatch(rb, at, picked));
}

// ---------------------------------------------------------------------------------------------
// Batch -> Arrow

/** Arrow bitmap (LSB first) from one byte per row. */
function packBits(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array((bytes.length + 7) >> 3);
  for (let i = 0; i < bytes.length; i++) if (bytes[i]) out[i >> 3] |= 1 << (i & 7);
  return out;
}

/** Arrow type written for each DType. Timestamps carry no time zone: values are UTC wall time. */
export function arrowTypeOf(type: DType): Arrow.DataType {
  switch (type) {
    case 'int64': return new arrow.Int64();
    case 'float64': return new arrow.Float64();
    case 'string': return new arrow.Utf8();
    case 'bool': return new arrow.Bool();
    case 'timestamp': return new arrow.TimestampMicrosecond();
  }
}

/** Nulls in a validity array (plain loops here: typed arrays' map and reduce call a function per row, which cost a 1 GB .arrow output ~0.5 s). */
function nullsIn(valid: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < valid.length; i++) n += valid[i] === 0 ? 1 : 0;
  return n;
}

/** String offsets from 0 (a batch cut from a larger one starts further on). */
function offsetsFromZero(offsets: Int32Array, length: number): Int32Array {
  const base = offsets[0];
  if (base === 0) return offsets;
  const out = new Int32Array(length + 1);
  for (let i = 0; i <= length; i++) out[i] = offsets[i] - base;
  return out;
}

function columnToData(col: Column, length: number): Arrow.Data {
  const nullBitmap = col.valid ? packBits(col.valid) : undefined;
  const nullCount = col.valid ? nullsIn(col.valid) : 0;
  const type = arrowTypeOf(col.type);
  switch (col.type) {
    case 'string': {
      const base = col.offsets[0];
      const valueOffsets = offsetsFromZero(col.offsets, length);
      const data = col.data.subarray(base, col.offsets[length]);
      return arrow.makeData({ type: type as Arrow.Utf8, length, nullCount, nullBitmap, valueOffsets, data });
    }
    case 'bool':
      return arrow.makeData({ type: type as Arrow.Bool, length, nullCount, nullBitmap, data: packBits(col.values) });
    default:
      return arrow.makeData({ type: type as Arrow.Int64, length, nullCount, nullBitmap, data: col.values as BigInt64Array });
  }
}

export function batchToArrowSchema(schema: Schema): Arrow.Schema {
  return new arrow.Schema(schema.map((f) => new arrow.Field(f.name, arrowTypeOf(f.type), true)));
}

export function batchToRecordBatch(batch: Batch): Arrow.RecordBatch {
  const schema = batchToArrowSchema(batch.schema);
  const children = batch.columns.map((c) => columnToData(c, batch.length));
  const struct = arrow.makeData({ type: new arrow.Struct(schema.fields), length: batch.length, nullCount: 0, children });
  return new arrow.RecordBatch(schema, struct);
}

/** An Arrow table of the batch's rows, in record batches of `rowsPerBatch` rows (the last fewer; at least one). */
export function batchToArrowTable(batch: Batch, rowsPerBatch = Math.max(1, batch.length)): Arrow.Table {
  const parts: Batch[] = [];
  for (let at = 0; at < batch.length; at += rowsPerBatch) parts.push(at === 0 && rowsPerBatch >= batch.length ? batch : sliceBatch(batch, at, Math.min(batch.length, at + rowsPerBatch)));
  return new arrow.Table((parts.length > 0 ? parts : [batch]).map(batchToRecordBatch));
}
