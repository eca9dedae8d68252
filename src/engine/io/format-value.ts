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

/** Civil date of a day count since 1970-01-01 (proleptic Gregorian; H. Hinnant's algorithm). */
function civilFromDays(days: number): [number, number, number] {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

const US_PER_DAY = 86_400_000_000;

/** Whole days since 1970 (floored) and the microseconds into that day. Number arithmetic is
 *  exact within ±2^53 us (years 1685..2255) and much faster than BigInt division. */
function splitDays(micros: bigint): [number, number] {
  if (micros > -9_007_199_254_740_991n && micros < 9_007_199_254_740_991n) {
    const us = Number(micros);
    const days = Math.floor(us / US_PER_DAY);
    return [days, us - days * US_PER_DAY];
  }
  const big = BigInt(US_PER_DAY);
  let days = micros / big;
  let rest = micros % big;
  if (rest < 0n) { rest += big; days -= 1n; }
  return [Number(days), Number(rest)];
}

/** 'YYYY-MM-DD HH:MM:SS[.ffffff]' (separator ' ') or ISO 'YYYY-MM-DDTHH:MM:SS[.ffffff]Z'. */
export function formatTimestamp(micros: bigint, iso = false): string {
  const [days, r] = splitDays(micros);
  const [y, mo, d] = civilFromDays(days);
  const secs = Math.floor(r / 1e6);
  const frac = r - secs * 1e6;
  const date = `${String(y).padStart(4, '0')}-${pad2(mo)}-${pad2(d)}`;
  const time = `${pad2(Math.floor(secs / 3600))}:${pad2(Math.floor(secs / 60) % 60)}:${pad2(secs % 60)}`;
  const fraction = frac === 0 ? '' : '.' + String(frac).padStart(6, '0');
  return iso ? `${date}T${time}${fraction}Z` : `${date} ${time}${fraction}`;
}

/** How one style writes values: CSV fields, JSON values, or table cells. */
export type ValueStyle = 'csv' | 'json' | 'table';

/** Quotes a CSV field when a reader would otherwise misread it. */
export function csvQuote(s: string, delimiter = ','): string {
  const needs = s.length === 0 || s.includes(delimiter) || /["\r\n]/.test(s) || /^[ \t]|[ \t]$/.test(s);
  return needs ? '"' + s.replaceAll('"', '""') + '"' : s;
}

const NULL_TEXT: Record<ValueStyle, string> = { csv: '', json: 'null', table: 'null' };

/** A function giving the text of row i of `col` in `style` (nulls included). Built once per
 *  column and batch so the per-row work is a type-specialised closure, not a switch. */
export function cellFormatter(col: Column, style: ValueStyle): (row: number) => string {
  const fmt = valueFormatter(col, style);
  const valid = col.valid;
  if (valid === null) return fmt;
  const nullText = NULL_TEXT[style];
  return (i) => (valid[i] === 0 ? nullText : fmt(i));
}

function valueFormatter(col: Column, style: ValueStyle): (row: number) => string {
  switch (col.type) {
    case 'int64': {
      const v = col.values;
      return (i) => v[i].toString();
    }
    case 'float64': {
      const v = col.values;
      if (style === 'json') return (i) => (Number.isFinite(v[i]) ? formatFloat(v[i]) : 'null');
      return (i) => formatFloat(v[i]);
    }
    case 'bool': {
      const v = col.values;
      return (i) => (v[i] ? 'true' : 'false');
    }
    case 'timestamp': {
      const v = col.values;
      if (style === 'json') return (i) => `"${formatTimestamp(v[i], true)}"`;
      return (i) => formatTimestamp(v[i]);
    }
    case 'string': {
      // Buffer's utf8 slice is much faster than TextDecoder for many short strings.
      const buf = Buffer.from(col.data.buffer, col.data.byteOffset, col.data.byteLength);
      const o = col.offsets;
      const text = (i: number) => buf.toString('utf8', o[i], o[i + 1]);
      if (style === 'csv') return (i) => csvQuote(text(i));
      if (style === 'json') return (i) => JSON.stringify(text(i));
      return (i) => escapeControls(text(i)); // one table row per line

    }
  }
}

/** Line breaks and tabs as visible escapes, so a table cell stays on one line. */
function escapeControls(s: string): string {
  return /[\r\n\t]/.test(s) ? s.replaceAll('\r', '\\r').replaceAll('\n', '\\n').replaceAll('\t', '\\t') : s;
}
