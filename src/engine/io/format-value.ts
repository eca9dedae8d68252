// Text form of cell values, shared by the CSV, JSONL and table writers.
//
// Choices (DuckDB's CSV writer is the reference where the brief left it open):
// - float64: Python/DuckDB repr: shortest round-trip digits; fixed notation for decimal
//   exponents -4..15 with '.0' kept on integral values (1.0, -0.0), otherwise scientific with a
//   signed two-digit exponent (1e+16, 1e-05); NaN/Infinity as nan/inf/-inf. In JSON, NaN and
//   infinities are not numbers, so they are written as null.
// - timestamp: UTC 'YYYY-MM-DD HH:MM:SS' plus '.ffffff' when fractional (JSON: ISO 8601,
//   'YYYY-MM-DDTHH:MM:SS[.ffffff]Z').
// - int64: exact decimal digits (BigInt text), also in JSON, never rounded through a double.
// - CSV strings are quoted only when needed (delimiter, quote, CR/LF, leading/trailing space or
//   tab) and an empty string is written as "" so it reads back distinct from null (empty field).

import type { Column } from '../batch.js';

export function formatFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const abs = Math.abs(x);
  if (abs >= 1e-4 && abs < 1e16) {
    const fixed = String(x); // JS uses fixed notation for exponents -7..20
    return fixed.includes('.') ? fixed : fixed + '.0';
  }
  const sci = x.toExponential(); // shortest round-trip digits, e.g. '1.2345e+17'
  const e = Number(sci.slice(sci.indexOf('e') + 1));
  const mantissa = sci.slice(0, sci.indexOf('e'));
  const sign = e < 0 ? '-' : '+';
  return `${mantissa}e${sign}${String(Math.abs(e)).padStart(2, '0')}`;
}

const pad2 = (n: number) => (n < 10 ? '0' : '') + n;

/** UTC calendar fields of one timestamp. The byte encoders reuse one object for every value,
 *  so filling it allocates nothing. */
export interface TimestampFields {
  year: number; month: number; day: number;
  hour: number; minute: number; second: number; micros: number;
}

export function newTimestampFields(): TimestampFields {
  return { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0, micros: 0 };
}

const US_PER_DAY = 86_400_000_000;
const MAX_EXACT = 9_007_199_254_740_991; // 2^53 - 1

/** Fills `f` from microseconds since 1970: a bigint, or a number when exact (|us| < 2^53).
 *  Number arithmetic is exact within ±2^53 us (years 1685..2255) and much faster than BigInt. */
export function timestampFields(micros: bigint | number, f: TimestampFields): void {
  let days: number, r: number;
  if (typeof micros === 'bigint' && (micros <= -MAX_EXACT || micros >= MAX_EXACT)) {
    const big = BigInt(US_PER_DAY);
    let d = micros / big;
    let rest = micros % big;
    if (rest < 0n) { rest += big; d -= 1n; }
    days = Number(d);
    r = Number(rest);
  } else {
    const us = Number(micros);
    days = Math.floor(us / US_PER_DAY);
    r = us - days * US_PER_DAY;
  }
  civilFromDays(days, f);
  // Below here every value is a non-negative int32, so `| 0` is exact floor division.
  const secs = Math.floor(r / 1e6);
  f.micros = r - secs * 1e6;
  f.hour = (secs / 3600) | 0;
  f.minute = ((secs / 60) | 0) % 60;
  f.second = secs % 60;
}

/** Civil date of a day count since 1970-01-01 (proleptic Gregorian; H. Hinnant's algorithm).
 *  Only `era` can be negative; the other quotients are of non-negative int32s. */
function civilFromDays(days: number, f: TimestampFields): void {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = ((doe - ((doe / 1460) | 0) + ((doe / 36524) | 0) - ((doe / 146096) | 0)) / 365) | 0;
  const doy = doe - (365 * yoe + ((yoe / 4) | 0) - ((yoe / 100) | 0));
  const mp = ((5 * doy + 2) / 153) | 0;
  f.day = doy - (((153 * mp + 2) / 5) | 0) + 1;
  f.month = mp < 10 ? mp + 3 : mp - 9;
  f.year = yoe + era * 400 + (f.month <= 2 ? 1 : 0);
}

const scratchFields = newTimestampFields();

/** 'YYYY-MM-DD HH:MM:SS[.ffffff]' (separator ' ') or ISO 'YYYY-MM-DDTHH:MM:SS[.ffffff]Z'. */
export function formatTimestamp(micros: bigint, iso = false): string {
  const f = scratchFields;
  timestampFields(micros, f);
  const date = `${String(f.year).padStart(4, '0')}-${pad2(f.month)}-${pad2(f.day)}`;
  const time = `${pad2(f.hour)}:${pad2(f.minute)}:${pad2(f.second)}`;
  const fraction = f.micros === 0 ? '' : '.' + String(f.micros).padStart(6, '0');
  return iso ? `${date}T${time}${fraction}Z` : `${date} ${time}${fraction}`;
}

/** Quotes a CSV field when a reader would otherwise misread it (the CSV header; cells are
 *  quoted by the same rule at byte level in output/value-encode.ts). */
export function csvQuote(s: string, delimiter = ','): string {
  const needs = s.length === 0 || s.includes(delimiter) || /["\r\n]/.test(s) || /^[ \t]|[ \t]$/.test(s);
  return needs ? '"' + s.replaceAll('"', '""') + '"' : s;
}

/** How values are written as strings. CSV and JSONL cells are encoded straight to bytes
 *  instead (output/value-encode.ts); only the terminal table formats strings. */
export type ValueStyle = 'table';

/** A function giving the table text of row i of `col` (nulls included). Built once per column
 *  and batch so the per-row work is a type-specialised closure, not a switch. */
export function cellFormatter(col: Column, style: ValueStyle): (row: number) => string {
  const fmt = valueFormatter(col, style);
  const valid = col.valid;
  if (valid === null) return fmt;
  return (i) => (valid[i] === 0 ? 'null' : fmt(i));
}

function valueFormatter(col: Column, _style: ValueStyle): (row: number) => string {
  switch (col.type) {
    case 'int64': {
      const v = col.values;
      return (i) => v[i].toString();
    }
    case 'float64': {
      const v = col.values;
      return (i) => formatFloat(v[i]);
    }
    case 'bool': {
      const v = col.values;
      return (i) => (v[i] ? 'true' : 'false');
    }
    case 'timestamp': {
      const v = col.values;
      return (i) => formatTimestamp(v[i]);
    }
    case 'string': {
      // Buffer's utf8 slice is much faster than TextDecoder for many short strings.
      const buf = Buffer.from(col.data.buffer, col.data.byteOffset, col.data.byteLength);
      const o = col.offsets;
      return (i) => escapeControls(buf.toString('utf8', o[i], o[i + 1])); // one table row per line
    }
  }
}

/** Line breaks and tabs as visible escapes, so a table cell stays on one line. */
function escapeControls(s: string): string {
  return /[\r\n\t]/.test(s) ? s.replaceAll('\r', '\\r').replaceAll('\n', '\\n').replaceAll('\t', '\\t') : s;
}
