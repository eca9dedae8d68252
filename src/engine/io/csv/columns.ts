// Converts one column of a FieldTable into a typed column of src/engine/batch.ts.
import { int64Words, type Column, type DType, type StringColumn } from '../../batch.js';
import type { CsvDialect } from './options.js';
import type { FieldTable } from './tokenizer.js';
import { isNanText, isNullField, parseBool, parseFloat64, parseInt64Into, shortInt } from './field-values.js';
import { parseTimestampInto } from './timestamp.js';

/** Called with the record index when a field does not parse as the column's type; throws. */
export type BadValue = (record: number) => never;

/** Field `column` of every record in `t`, as a column of `type`. One small function per type keeps
 *  each loop monomorphic for the JIT. */
export function buildColumn(buf: Buffer, t: FieldTable, column: number, type: DType,
                            d: CsvDialect, bad: BadValue): Column {
  const valid = nullMask(buf, t, column, d);
  switch (type) {
    case 'string': return buildStrings(buf, t, column, valid);
    case 'float64': return buildFloat64(buf, t, column, valid, bad);
    case 'bool': return buildBool(buf, t, column, valid, bad);
    case 'int64': return buildInt64(buf, t, column, valid, bad);
    case 'timestamp': return buildTimestamp(buf, t, column, valid, bad);
  }
}

function buildFloat64(buf: Buffer, t: FieldTable, column: number, valid: Uint8Array | null, bad: BadValue): Column {
  const n = t.records;
  const { starts, ends } = t;
  const values = new Float64Array(n);
  for (let r = 0, i = t.index(column, 0); r < n; r++, i++) {
    if (valid !== null && valid[r] === 0) continue;
    const s = starts[i];
    const x = s < 0 ? NaN : parseFloat64(buf, s, ends[i]);
    if (x !== x && (s < 0 || !isNanText(buf, s, ends[i]))) bad(r);
    values[r] = x;
  }
  return { type: 'float64', values, valid };
}

function buildBool(buf: Buffer, t: FieldTable, column: number, valid: Uint8Array | null, bad: BadValue): Column {
  const n = t.records;
  const { starts, ends } = t;
  const values = new Uint8Array(n);
  for (let r = 0, i = t.index(column, 0); r < n; r++, i++) {
    if (valid !== null && valid[r] === 0) continue;
    const v = starts[i] < 0 ? -1 : parseBool(buf, starts[i], ends[i]);
    if (v < 0) bad(r);
    values[r] = v;
  }
  return { type: 'bool', values, valid };
}

function buildInt64(buf: Buffer, t: FieldTable, column: number, valid: Uint8Array | null, bad: BadValue): Column {
  const n = t.records;
  const { starts, ends } = t;
  const col = { type: 'int64' as const, values: new BigInt64Array(n), valid };
  const words = int64Words(col);
  for (let r = 0, i = t.index(column, 0); r < n; r++, i++) {
    if (valid !== null && valid[r] === 0) continue;
    const s = starts[i], e = ends[i];
    const x = shortInt(buf, s, e);
    if (x === x) {
      words[2 * r] = x;
      words[2 * r + 1] = x < 0 ? -1 : 0;
    } else if (s < 0 || !parseInt64Into(buf, s, e, col.values, words, r)) bad(r);
  }
  return col;
}

function buildTimestamp(buf: Buffer, t: FieldTable, column: number, valid: Uint8Array | null, bad: BadValue): Column {
  const n = t.records;
  const { starts, ends } = t;
  const col = { type: 'timestamp' as const, values: new BigInt64Array(n), valid };
  const words = int64Words(col);
  for (let r = 0, i = t.index(column, 0); r < n; r++, i++) {
    if (valid !== null && valid[r] === 0) continue;
    if (starts[i] < 0 || !parseTimestampInto(buf, starts[i], ends[i], col.values, words, r)) bad(r);
  }
  return col;
}

/** Validity of the column (1 = present), or null when no field is a null text. */
function nullMask(buf: Buffer, t: FieldTable, column: number, d: CsvDialect): Uint8Array | null {
  let valid: Uint8Array | null = null;
  const { starts, ends } = t;
  const { nullsByLength: nullLengths, nullFirstBytes } = d;
  for (let r = 0, i = t.index(column, 0); r < t.records; r++, i++) {
    const s = starts[i], e = ends[i];
    // Most fields have a length or a first byte no null text has: skip the call for them.
    if (s < 0 || e - s >= nullLengths.length || nullLengths[e - s] === undefined) continue;
    if ((e > s && nullFirstBytes[buf[s]] === 0) || !isNullField(buf, s, e, d)) continue;
    if (valid === null) valid = new Uint8Array(t.records).fill(1);
    valid[r] = 0;
  }
  return valid;
}

/** Copies the UTF-8 bytes of each field (collapsing doubled quotes) into Arrow's offsets + data. */
function buildStrings(buf: Buffer, t: FieldTable, column: number, valid: Uint8Array | null): StringColumn {
  const n = t.records;
  const { starts, ends } = t;
  let total = 0;
  for (let r = 0, i = t.index(column, 0); r < n; r++, i++) {
    if (valid === null || valid[r] === 1) total += ends[i] - unescapedStart(starts[i]);
  }
  const offsets = new Int32Array(n + 1);
  const data = new Uint8Array(total);
  let at = 0;
  for (let r = 0, i = t.index(column, 0); r < n; r++, i++) {
    if (valid === null || valid[r] === 1) {
      const s = starts[i], e = ends[i];
      if (s < 0) at = copyUnescaped(buf, ~s, e, data, at);
      else if (e - s > 32) { data.set(buf.subarray(s, e), at); at += e - s; }
      else for (let k = s; k < e; k++) data[at++] = buf[k];
    }
    offsets[r + 1] = at;
  }
  return { type: 'string', offsets, data: at === total ? data : data.subarray(0, at), valid };
}

/** Copies a quoted field's content, keeping one quote of each doubled pair. */
/** Copies quoted content buf[s, e) to out[at..], keeping one quote of each doubled pair; returns the new end.
 *  By default the quote is the byte after the content (the closing quote). */
export function copyUnescaped(buf: Uint8Array, s: number, e: number, out: Uint8Array, at: number, quote = buf[e]): number {
  for (let k = s; k < e; k++) {
    out[at++] = buf[k];
    if (buf[k] === quote) k++;
  }
  return at;
}

/** The text of one field, for headers and messages (not hot paths). */
export function fieldText(buf: Buffer, t: FieldTable, column: number, record: number): string {
  const i = t.index(column, record);
  const s = t.starts[i], e = t.ends[i];
  if (s >= 0) return buf.toString('utf8', s, e);
  const out = new Uint8Array(e - ~s);
  return Buffer.from(out.buffer, 0, copyUnescaped(buf, ~s, e, out, 0)).toString('utf8');
}

/** A field's start whether or not it is marked as holding doubled quotes. */
export function unescapedStart(start: number): number {
  return start < 0 ? ~start : start;
}
