// Cell encoders for CSV and JSONL: each column becomes a closure that appends the text of row i
// straight to a ByteBuffer, byte for byte what format-value.ts defines (float repr, timestamp
// layout, CSV quoting rule), without building a JS string per cell.
//
// - strings: UTF-8 bytes are copied as they are; CSV quoting and JSON escaping look only at
//   ASCII bytes, which never occur inside a multi-byte UTF-8 sequence.
// - int64: digits from the (lo, hi) words below 2^53; BigInt text only beyond.
// - float64: integral and short decimal values are written digit by digit; the rest go through
//   formatFloat. timestamp: fields from timestampFields, written as digits.

import { isUtf8 } from 'node:buffer';
import {
  type Column, type Float64Column, type Int64Column, type StringColumn, type TimestampColumn,
  int64Words, stringColumn,
} from '../../batch.js';
import { type TimestampFields, formatFloat, formatTimestamp, newTimestampFields, timestampFields } from '../format-value.js';
import { type ByteBuffer, putDigits } from './text-encode-buffer.js';
import type { TextFormat } from './types.js';

/** Appends the text of row i of one column. */
export type CellEncoder = (row: number) => void;

const ascii = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
const TRUE = ascii('true');
const FALSE = ascii('false');
const NULL = ascii('null');

const QUOTE = 0x22, BACKSLASH = 0x5c, SPACE = 0x20, TAB = 0x09, DOT = 0x2e, MINUS = 0x2d, COLON = 0x3a;

/** The encoder of one column into `out`: built once per batch, called once per row. Nulls are an
 *  empty CSV field or JSON null. */
export function cellEncoder(col: Column, format: TextFormat, out: ByteBuffer): CellEncoder {
  const encode = valueEncoder(col, format, out);
  const valid = col.valid;
  if (valid === null) return encode;
  if (format === 'csv') return (i) => { if (valid[i] !== 0) encode(i); }; // null: empty field
  return (i) => { if (valid[i] === 0) out.append(NULL); else encode(i); };
}

function valueEncoder(col: Column, format: TextFormat, out: ByteBuffer): CellEncoder {
  switch (col.type) {
    case 'int64': return int64Encoder(col, out);
    case 'float64': return floatEncoder(col, format, out);
    case 'bool': {
      const v = col.values;
      return (i) => out.append(v[i] ? TRUE : FALSE);
    }
    case 'timestamp': return timestampEncoder(col, format, out);
    case 'string': return format === 'csv' ? csvStringEncoder(wellFormed(col), out) : jsonStringEncoder(wellFormed(col), out);
  }
}

/** Typical text bytes per cell, to size the output buffer once for most batches. */
const TYPICAL_CELL_BYTES = { int64: 8, float64: 12, bool: 5, timestamp: 28 } as const;

/** About how many bytes rows [start, end) of `col` take as text (quotes and escapes aside). */
export function estimatedCellBytes(col: Column, start: number, end: number): number {
  if (col.type === 'string') return col.offsets[end] - col.offsets[start] + 2 * (end - start);
  return TYPICAL_CELL_BYTES[col.type] * (end - start);
}

/** The int64 word hi of values that are exact as doubles: -2^53 <= v < 2^53. */
const EXACT_HI = 0x200000;

function int64Encoder(col: Int64Column, out: ByteBuffer): CellEncoder {
  const words = int64Words(col);
  const values = col.values;
  return (i) => {
    const hi = words[2 * i + 1];
    if (hi >= -EXACT_HI && hi < EXACT_HI) out.integer(hi * 4294967296 + (words[2 * i] >>> 0));
    else out.ascii(values[i].toString());
  };
}

function floatEncoder(col: Float64Column, format: TextFormat, out: ByteBuffer): CellEncoder {
  const v = col.values;
  if (format === 'csv') return (i) => writeFloat(out, v[i]);
  // NaN and infinities are not JSON numbers.
  return (i) => { const x = v[i]; if (x - x === 0) writeFloat(out, x); else out.append(NULL); };
}

/** formatFloat's text. Values whose shortest round-trip form is an integer below 10^16 or has at
 *  most 4 decimals below 10^9 (prices, counts, measurements) are written without a string.
 *  Below 10^9 the multiples of 10^-4 are far apart compared with the spacing of doubles, so at
 *  most one of them reads back as x: n = round(x·10^4) with n/10^4 === x. It is then the
 *  shortest form once its trailing zeros are dropped. */
function writeFloat(out: ByteBuffer, x: number): void {
  const abs = Math.abs(x);
  if (Number.isInteger(x) && abs < 1e16) {
    if (x < 0 || 1 / x === -Infinity) out.byte(MINUS); // -0 is written '-0.0'
    out.integer(abs);
    out.byte(DOT);
    out.byte(0x30);
    return;
  }
  if (abs >= 1e-4 && abs < 1e9) {
    const n = Math.round(abs * 1e4);
    if (n / 1e4 === abs) {
      // n = whole · 10^4 + frac; frac < 10^4 as an int32, so that its % is integer arithmetic
      // (a double's % is a library call).
      const whole = Math.floor(n / 10000);
      let frac = (n - whole * 10000) | 0;
      let decimals = 4;
      while (frac % 10 === 0) { frac = (frac / 10) | 0; decimals--; } // x is not integral: frac > 0
      if (x < 0) out.byte(MINUS);
      out.integer(whole);
      out.byte(DOT);
      out.fixedDigits(frac, decimals);
      return;
    }
  }
  out.ascii(formatFloat(x));
}

function timestampEncoder(col: TimestampColumn, format: TextFormat, out: ByteBuffer): CellEncoder {
  const words = int64Words(col);
  const values = col.values;
  const iso = format === 'jsonl';
  const f = newTimestampFields();
  return (i) => {
    const hi = words[2 * i + 1];
    timestampFields(hi >= -EXACT_HI && hi < EXACT_HI ? hi * 4294967296 + (words[2 * i] >>> 0) : values[i], f);
    if (iso) out.byte(QUOTE);
    if (f.year < 0 || f.year > 9999) out.ascii(formatTimestamp(values[i], iso)); // beyond 4-digit years: rare, keep one definition
    else writeTimestampFields(out, f, iso);
    if (iso) out.byte(QUOTE);
  };
}

/** 'YYYY-MM-DD HH:MM:SS[.ffffff]' or 'YYYY-MM-DDTHH:MM:SS[.ffffff]Z' for years 0..9999. */
function writeTimestampFields(out: ByteBuffer, f: TimestampFields, iso: boolean): void {
  out.reserve(28);
  const b = out.bytes;
  let p = putDigits(b, out.length, f.year, 4);
  b[p++] = MINUS;
  p = putDigits(b, p, f.month, 2);
  b[p++] = MINUS;
  p = putDigits(b, p, f.day, 2);
  b[p++] = iso ? 0x54 : SPACE; // 'T'
  p = putDigits(b, p, f.hour, 2);
  b[p++] = COLON;
  p = putDigits(b, p, f.minute, 2);
  b[p++] = COLON;
  p = putDigits(b, p, f.second, 2);
  if (f.micros !== 0) {
    b[p++] = DOT;
    p = putDigits(b, p, f.micros, 6);
  }
  if (iso) b[p++] = 0x5a; // 'Z'
  out.length = p;
}

/** Bytes that force a CSV field into quotes wherever they occur. */
const CSV_SPECIAL = new Uint8Array(256);
for (const c of ',"\r\n') CSV_SPECIAL[c.charCodeAt(0)] = 1;

/** A CSV field, quoted when it is empty, holds a delimiter, quote, CR or LF, or starts or ends
 *  with a space or tab (csvQuote's rule). The bytes are copied while scanning; a special byte
 *  sends the cell back to be written quoted. */
function csvStringEncoder(col: StringColumn, out: ByteBuffer): CellEncoder {
  const o = col.offsets;
  const data = col.data;
  return (i) => {
    const s = o[i], e = o[i + 1];
    out.reserve(2 * (e - s) + 2);
    const bytes = out.bytes;
    const start = out.length;
    let p = start;
    let quote = s === e || data[s] === SPACE || data[s] === TAB || data[e - 1] === SPACE || data[e - 1] === TAB;
    if (!quote) {
      for (let k = s; k < e; k++) {
        const b = data[k];
        if (CSV_SPECIAL[b] === 1) { quote = true; break; }
        bytes[p++] = b;
      }
    }
    if (quote) {
      p = start;
      bytes[p++] = QUOTE;
      for (let k = s; k < e; k++) {
        const b = data[k];
        if (b === QUOTE) bytes[p++] = QUOTE;
        bytes[p++] = b;
      }
      bytes[p++] = QUOTE;
    }
    out.length = p;
  };
}

/** JSON.stringify's escape of each byte below 0x80 ('' where the byte passes as it is): quote,
 *  backslash and control characters (short forms where JSON has them, else \u00xx). */
const JSON_ESCAPE: (Uint8Array | null)[] = Array.from({ length: 128 }, (_, b) => {
  if (b >= 0x20 && b !== QUOTE && b !== BACKSLASH) return null;
  return ascii(JSON.stringify(String.fromCharCode(b)).slice(1, -1));
});
const JSON_PLAIN = Uint8Array.from({ length: 256 }, (_, b) => (b >= 0x80 || JSON_ESCAPE[b] === null ? 1 : 0));

function jsonStringEncoder(col: StringColumn, out: ByteBuffer): CellEncoder {
  const o = col.offsets;
  const data = col.data;
  return (i) => {
    const s = o[i], e = o[i + 1];
    out.reserve(6 * (e - s) + 2);
    const bytes = out.bytes;
    let p = out.length;
    bytes[p++] = QUOTE;
    for (let k = s; k < e; k++) {
      const b = data[k];
      if (JSON_PLAIN[b] === 1) {
        bytes[p++] = b;
      } else {
        const escape = JSON_ESCAPE[b]!;
        for (let j = 0; j < escape.length; j++) bytes[p++] = escape[j];
      }
    }
    bytes[p++] = QUOTE;
    out.length = p;
  };
}

/** The column itself when every string is valid UTF-8, which is the common case and lets bytes be
 *  copied as they are. Otherwise each string is decoded (invalid sequences become U+FFFD, as
 *  the string-based writer did) and re-encoded. */
function wellFormed(col: StringColumn): StringColumn {
  const o = col.offsets, data = col.data, n = o.length - 1;
  if (isUtf8(data.subarray(o[0], o[n])) && startsOnCharacters(col)) return col;
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const texts = Array.from({ length: n }, (_, i) => buf.toString('utf8', o[i], o[i + 1]));
  return { ...stringColumn(texts), valid: col.valid };
}

/** In valid UTF-8, every string starts on a character (not on a continuation byte 10xxxxxx),
 *  so the strings split the data between characters and each one is valid by itself. */
function startsOnCharacters(col: StringColumn): boolean {
  const o = col.offsets, data = col.data, end = o[o.length - 1];
  for (let i = 0; i < o.length - 1; i++) {
    if (o[i] < end && (data[o[i]] & 0xc0) === 0x80) return false;
  }
  return true;
}
