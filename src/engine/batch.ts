// Typed column batches: the unit of data every operator consumes and produces.
// No row objects: each column is a typed array (plus a validity mask where nulls exist),
// so batches cross process boundaries by structured clone and map directly onto GPU buffers
// and Arrow vectors.

export type DType = 'int64' | 'float64' | 'string' | 'bool' | 'timestamp';
export const DTYPES: readonly DType[] = ['int64', 'float64', 'string', 'bool', 'timestamp'];

export interface Field {
  name: string;
  type: DType;
}
export type Schema = Field[];

/** 1 = value present, 0 = null. `null` means the column has no nulls. */
export type Validity = Uint8Array | null;

/** int64: exact 64-bit integers. Hot paths read the same buffer as (lo, hi) u32 words via `int64Words`. */
export interface Int64Column { type: 'int64'; values: BigInt64Array; valid: Validity }
/** timestamp: microseconds since 1970-01-01T00:00:00Z, stored like int64. */
export interface TimestampColumn { type: 'timestamp'; values: BigInt64Array; valid: Validity }
export interface Float64Column { type: 'float64'; values: Float64Array; valid: Validity }
/** bool: 0 or 1 per row. */
export interface BoolColumn { type: 'bool'; values: Uint8Array; valid: Validity }
/** string: UTF-8 bytes of row i are data[offsets[i] .. offsets[i+1]) (Arrow's Utf8 layout). */
export interface StringColumn { type: 'string'; offsets: Int32Array; data: Uint8Array; valid: Validity }

export type Column = Int64Column | TimestampColumn | Float64Column | BoolColumn | StringColumn;

export interface Batch {
  schema: Schema;
  length: number;
  columns: Column[];
}

export function columnLength(col: Column): number {
  return col.type === 'string' ? col.offsets.length - 1 : col.values.length;
}

export function isNull(col: Column, row: number): boolean {
  return col.valid !== null && col.valid[row] === 0;
}

/** Little-endian (lo, hi) 32-bit words of an int64/timestamp column, sharing its buffer. */
export function int64Words(col: Int64Column | TimestampColumn): Int32Array {
  const v = col.values;
  return new Int32Array(v.buffer, v.byteOffset, v.length * 2);
}

/** The value of row i of an int64/timestamp column as a double (exact when |v| < 2^53). */
export function int64AsNumber(words: Int32Array, row: number): number {
  return words[2 * row + 1] * 4294967296 + (words[2 * row] >>> 0);
}

const utf8 = new TextDecoder('utf-8');
const utf8Encoder = new TextEncoder();

export function stringAt(col: StringColumn, row: number): string {
  return utf8.decode(col.data.subarray(col.offsets[row], col.offsets[row + 1]));
}

/** A string column from JS strings (null entries become nulls). For tests and small results, not hot paths. */
export function stringColumn(values: readonly (string | null)[]): StringColumn {
  const parts = values.map((v) => (v === null ? new Uint8Array(0) : utf8Encoder.encode(v)));
  const offsets = new Int32Array(values.length + 1);
  for (let i = 0; i < parts.length; i++) offsets[i + 1] = offsets[i] + parts[i].length;
  const data = new Uint8Array(offsets[values.length]);
  for (let i = 0; i < parts.length; i++) data.set(parts[i], offsets[i]);
  return { type: 'string', offsets, data, valid: validityOf(values) };
}

function validityOf(values: readonly unknown[]): Validity {
  if (!values.some((v) => v === null)) return null;
  return Uint8Array.from(values, (v) => (v === null ? 0 : 1));
}

/** Builds a column of the given type from JS values; for tests, fixtures and small results. */
export function columnFromValues(type: DType, values: readonly unknown[]): Column {
  const valid = validityOf(values);
  switch (type) {
    case 'string':
      return stringColumn(values as (string | null)[]);
    case 'float64':
      return { type, values: Float64Array.from(values, (v) => (v === null ? 0 : Number(v))), valid };
    case 'bool':
      return { type, values: Uint8Array.from(values, (v) => (v ? 1 : 0)), valid };
    case 'int64':
    case 'timestamp':
      return { type, values: BigInt64Array.from(values, (v) => (v === null ? 0n : BigInt(v as bigint | number))), valid };
  }
}

/** The JS value of one cell: bigint for int64/timestamp, number, boolean, string, or null. */
export function valueAt(col: Column, row: number): bigint | number | boolean | string | null {
  if (isNull(col, row)) return null;
  switch (col.type) {
    case 'string': return stringAt(col, row);
    case 'bool': return col.values[row] === 1;
    default: return col.values[row];
  }
}

export function emptyColumn(type: DType): Column {
  return columnFromValues(type, []);
}

export function emptyBatch(schema: Schema): Batch {
  return { schema, length: 0, columns: schema.map((f) => emptyColumn(f.type)) };
}

/** Rows `indices` of `col`, in that order; index -1 gives a null (used by outer joins). */
export function takeColumn(col: Column, indices: Int32Array): Column {
  const valid = takeValidity(col.valid, indices);
  switch (col.type) {
    case 'string': return { type: 'string', ...takeStrings(col, indices), valid };
    case 'float64': return { type: 'float64', values: takeNumbers(col.values, new Float64Array(indices.length), indices), valid };
    case 'bool': return { type: 'bool', values: takeNumbers(col.values, new Uint8Array(indices.length), indices), valid };
    case 'int64':
    case 'timestamp': return { type: col.type, values: takeInt64(col.values, indices), valid } as Column;
  }
}

// Loops by element type: a generic loop over typed arrays of every kind ran many times slower,
// BigInt64Array elements each becoming a BigInt.

function takeValidity(valid: Validity, indices: Int32Array): Validity {
  let someMissing = false;
  for (let i = 0; i < indices.length; i++) if (indices[i] < 0) { someMissing = true; break; }
  if (valid === null && !someMissing) return null;
  const out = new Uint8Array(indices.length);
  for (let i = 0; i < indices.length; i++) {
    const r = indices[i];
    out[i] = r >= 0 && (valid === null || valid[r] === 1) ? 1 : 0;
  }
  return out;
}

function takeStrings(col: StringColumn, indices: Int32Array): { offsets: Int32Array; data: Uint8Array } {
  const n = indices.length;
  const from = col.offsets, src = col.data;
  const offsets = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) {
    const r = indices[i];
    offsets[i + 1] = offsets[i] + (r >= 0 ? from[r + 1] - from[r] : 0);
  }
  const data = new Uint8Array(offsets[n]);
  for (let i = 0; i < n; i++) {
    const r = indices[i];
    if (r < 0) continue;
    const start = from[r], end = from[r + 1];
    // Most values are a few bytes: a loop beats a subarray object per value.
    if (end - start > 64) data.set(src.subarray(start, end), offsets[i]);
    else for (let b = start, o = offsets[i]; b < end; b++, o++) data[o] = src[b];
  }
  return { offsets, data };
}

/** Float64 and bool values (two element kinds share this loop; BigInts must not). */
function takeNumbers<T extends Float64Array | Uint8Array>(src: T, out: T, indices: Int32Array): T {
  for (let i = 0; i < indices.length; i++) {
    const r = indices[i];
    if (r >= 0) out[i] = src[r];
  }
  return out;
}

/** 64-bit values moved as two 32-bit words each. */
function takeInt64(src: BigInt64Array, indices: Int32Array): BigInt64Array {
  const out = new BigInt64Array(indices.length);
  const from = new Int32Array(src.buffer, src.byteOffset, src.length * 2);
  const to = new Int32Array(out.buffer);
  for (let i = 0; i < indices.length; i++) {
    const r = indices[i];
    if (r >= 0) { to[2 * i] = from[2 * r]; to[2 * i + 1] = from[2 * r + 1]; }
  }
  return out;
}

export function takeBatch(batch: Batch, indices: Int32Array): Batch {
  return { schema: batch.schema, length: indices.length, columns: batch.columns.map((c) => takeColumn(c, indices)) };
}

/** Concatenates batches of one schema into one batch. */
export function concatBatches(schema: Schema, batches: readonly Batch[]): Batch {
  if (batches.length === 1) return batches[0];
  const length = batches.reduce((s, b) => s + b.length, 0);
  const columns = schema.map((f, ci) => concatColumns(f.type, batches.map((b) => b.columns[ci]), length));
  return { schema, length, columns };
}

function concatColumns(type: DType, cols: Column[], length: number): Column {
  let valid: Uint8Array | null = null;
  if (cols.some((c) => c.valid !== null)) {
    valid = new Uint8Array(length);
    let at = 0;
    for (const c of cols) {
      const n = columnLength(c);
      if (c.valid) valid.set(c.valid, at); else valid.fill(1, at, at + n);
      at += n;
    }
  }
  if (type === 'string') {
    const scs = cols as StringColumn[];
    const offsets = new Int32Array(length + 1);
    const data = new Uint8Array(scs.reduce((s, c) => s + c.offsets[c.offsets.length - 1] - c.offsets[0], 0));
    let row = 0, byte = 0;
    for (const c of scs) {
      const n = c.offsets.length - 1;
      const base = c.offsets[0];
      for (let i = 1; i <= n; i++) offsets[row + i] = byte + c.offsets[i] - base;
      data.set(c.data.subarray(base, c.offsets[n]), byte);
      byte += c.offsets[n] - base;
      row += n;
    }
    return { type, offsets, data, valid };
  }
  const first = cols[0] as Exclude<Column, StringColumn>;
  const out = new ((first.values as Float64Array).constructor as { new (n: number): Float64Array })(length);
  let at = 0;
  for (const c of cols as Exclude<Column, StringColumn>[]) {
    (out as Float64Array).set(c.values as Float64Array, at);
    at += c.values.length;
  }
  return { type, values: out, valid } as Column;
}

/** Keeps the named columns, in the given order. */
export function selectColumns(batch: Batch, names: readonly string[]): Batch {
  const at = new Map(batch.schema.map((f, i) => [f.name, i] as const));
  const idx = names.map((n) => at.get(n) ?? -1);
  return { schema: idx.map((i) => batch.schema[i]), length: batch.length, columns: idx.map((i) => batch.columns[i]) };
}

/** Rows [start, end) of `batch`, copied. */
export function sliceBatch(batch: Batch, start: number, end: number): Batch {
  return { schema: batch.schema, length: end - start, columns: batch.columns.map((c) => sliceColumn(c, start, end)) };
}

/** Rows [start, end) of a column, copied. */
export function sliceColumn(col: Column, start: number, end: number): Column {
  const valid = col.valid === null ? null : col.valid.slice(start, end);
  if (col.type !== 'string') return { type: col.type, values: col.values.slice(start, end), valid } as Column;
  const base = col.offsets[start];
  const offsets = col.offsets.slice(start, end + 1);
  for (let i = 0; i < offsets.length; i++) offsets[i] -= base;
  return { type: 'string', offsets, data: col.data.slice(base, col.offsets[end]), valid };
}

/** Approximate bytes held by a batch, for memory accounting. */
export function batchBytes(batch: Batch): number {
  let bytes = 0;
  for (const c of batch.columns) {
    bytes += c.valid ? c.valid.byteLength : 0;
    bytes += c.type === 'string' ? c.offsets.byteLength + c.data.byteLength : c.values.byteLength;
  }
  return bytes;
}
