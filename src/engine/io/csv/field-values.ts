// Parsers from a field's bytes buf[s, e) to a typed value, with no intermediate strings on the
// common paths. Numeric and timestamp parsers ignore surrounding spaces; bool and the others
// report failure so that type inference and conversion errors share them.
import { CR, type CsvDialect } from './options.js';

const SPACE = 0x20, PLUS = 0x2b, MINUS = 0x2d, DOT = 0x2e, ZERO = 0x30, NINE = 0x39;
const TWO_32 = 4294967296;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** Exact powers of ten as doubles (10^22 is the largest exactly representable one). */
const POW10 = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));

/** True when the field's text is one of the null texts. Fields holding doubled quotes (marked by
 *  a negative start, see FieldTable) never are. */
export function isNullField(buf: Uint8Array, s: number, e: number, d: CsvDialect): boolean {
  if (s < 0) return false;
  const candidates = d.nullsByLength[e - s];
  if (candidates === undefined) return false;
  next: for (const text of candidates) {
    for (let i = 0; i < text.length; i++) if (buf[s + i] !== text[i]) continue next;
    return true;
  }
  return false;
}

function isDigit(b: number): boolean {
  return b >= ZERO && b <= NINE;
}

function trimStart(buf: Uint8Array, s: number, e: number): number {
  while (s < e && buf[s] === SPACE) s++;
  return s;
}

function trimEnd(buf: Uint8Array, s: number, e: number): number {
  while (e > s && (buf[e - 1] === SPACE || buf[e - 1] === CR)) e--;
  return e;
}

/** Stores a safe integer as the (lo, hi) words of an int64 (`| 0` keeps the low 32 bits of any
 *  safe integer in two's complement). */
export function storeSafeInteger(words: Int32Array, row: number, x: number): void {
  words[2 * row] = x | 0;
  words[2 * row + 1] = x >= 0 && x < TWO_32 ? 0 : Math.floor(x / TWO_32);
}

/** The common int64 case, small enough for the JIT to inline: an optional minus and 1 to 9
 *  digits (so below 2^31). NaN for anything else, which parseInt64Into then handles. */
export function shortInt(buf: Uint8Array, s: number, e: number): number {
  const unsigned = buf[s] === MINUS ? s + 1 : s;
  if (e <= unsigned || e - unsigned > 9) return NaN;
  let x = 0;
  for (let i = unsigned; i < e; i++) {
    const v = buf[i] - ZERO;
    if (!(v >= 0 && v <= 9)) return NaN; // also rejects bytes outside buf
    x = x * 10 + v;
  }
  return unsigned === s ? x : -x;
}

/** Optional sign and decimal digits. Up to 15 digits go through a double (exact below 10^15);
 *  longer ones through BigInt, so values past 2^53 stay exact. False when it does not parse or
 *  does not fit in int64. */
export function parseInt64Into(buf: Buffer, s: number, e: number, values: BigInt64Array, words: Int32Array, row: number): boolean {
  s = trimStart(buf, s, e);
  e = trimEnd(buf, s, e);
  let i = s;
  const negative = buf[i] === MINUS;
  if (negative || buf[i] === PLUS) i++;
  const digits = e - i;
  if (digits <= 0) return false;
  if (digits <= 15) {
    let x = 0;
    for (; i < e; i++) {
      const b = buf[i];
      if (b < ZERO || b > NINE) return false;
      x = x * 10 + (b - ZERO);
    }
    storeSafeInteger(words, row, negative ? -x : x);
    return true;
  }
  for (let j = i; j < e; j++) if (!isDigit(buf[j])) return false;
  const magnitude = BigInt(buf.toString('latin1', i, e));
  const v = negative ? -magnitude : magnitude;
  if (v < INT64_MIN || v > INT64_MAX) return false;
  values[row] = v;
  return true;
}

/** Decimal with optional fraction and exponent, or inf/infinity/nan (any case, optional sign).
 *  Returns NaN when the text does not parse; call isNanText to tell that from a literal nan.
 *  Short inputs are computed exactly (Clinger's fast path); the rest by Number() after validation. */
export function parseFloat64(buf: Buffer, s: number, e: number): number {
  s = trimStart(buf, s, e);
  e = trimEnd(buf, s, e);
  let i = s;
  const negative = buf[i] === MINUS;
  if (negative || buf[i] === PLUS) i++;
  if (i < e && !isDigit(buf[i]) && buf[i] !== DOT) {
    const special = specialFloat(buf, i, e);
    return negative ? -special : special;
  }
  let mantissa = 0;
  let significant = 0;
  let digits = 0;
  let exponent = 0;
  for (; i < e && isDigit(buf[i]); i++, digits++) {
    if (significant > 0 || buf[i] !== ZERO) { mantissa = mantissa * 10 + (buf[i] - ZERO); significant++; }
  }
  if (i < e && buf[i] === DOT) {
    for (i++; i < e && isDigit(buf[i]); i++, digits++) {
      if (significant > 0 || buf[i] !== ZERO) { mantissa = mantissa * 10 + (buf[i] - ZERO); significant++; }
      exponent--;
    }
  }
  if (digits === 0) return NaN;
  if (i < e && (buf[i] === 0x65 || buf[i] === 0x45)) {
    i++;
    const expNegative = buf[i] === MINUS;
    if (expNegative || buf[i] === PLUS) i++;
    if (i >= e) return NaN;
    let explicit = 0;
    for (; i < e && isDigit(buf[i]); i++) explicit = Math.min(explicit * 10 + (buf[i] - ZERO), 1e6);
    exponent += expNegative ? -explicit : explicit;
  }
  if (i !== e) return NaN;
  let x: number;
  if (significant <= 15 && exponent >= -22 && exponent <= 22) {
    x = exponent < 0 ? mantissa / POW10[-exponent] : mantissa * POW10[exponent];
  } else {
    x = Math.abs(Number(buf.toString('latin1', s, e)));
  }
  return negative ? -x : x;
}

function specialFloat(buf: Buffer, s: number, e: number): number {
  const word = buf.toString('latin1', s, e).toLowerCase();
  if (word === 'inf' || word === 'infinity') return Infinity;
  return NaN; // 'nan' or not a number: isNanText tells them apart
}

export function isNanText(buf: Buffer, s: number, e: number): boolean {
  s = trimStart(buf, s, e);
  e = trimEnd(buf, s, e);
  if (buf[s] === MINUS || buf[s] === PLUS) s++;
  return e - s === 3 && buf.toString('latin1', s, e).toLowerCase() === 'nan';
}

/** 1 for true, 0 for false (any case), -1 otherwise. */
export function parseBool(buf: Buffer, s: number, e: number): number {
  s = trimStart(buf, s, e);
  e = trimEnd(buf, s, e);
  const n = e - s;
  if (n !== 4 && n !== 5) return -1;
  const word = buf.toString('latin1', s, e).toLowerCase();
  return word === 'true' ? 1 : word === 'false' ? 0 : -1;
}
