// ISO 8601 timestamps to UTC microseconds:
//   YYYY-MM-DD, then optionally ('T' | ' ') HH:MM[:SS[.fraction]], then optionally 'Z' or ±HH[:MM].
// Fractions beyond microseconds are truncated.
import { storeSafeInteger } from './field-values.js';

const SPACE = 0x20, COLON = 0x3a, DASH = 0x2d, PLUS = 0x2b, DOT = 0x2e, ZERO = 0x30;
const MAX_SAFE_SECONDS = 9e9; // 9e9 s * 1e6 stays below 2^53 µs (about year 2255)

/** Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's days_from_civil). */
export function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

/** n decimal digits at buf[i..i+n) as a number, or -1. */
function digitsAt(buf: Uint8Array, i: number, n: number, e: number): number {
  if (i + n > e) return -1;
  let x = 0;
  for (let k = 0; k < n; k++) {
    const v = buf[i + k] - ZERO;
    if (v < 0 || v > 9) return -1;
    x = x * 10 + v;
  }
  return x;
}

/** Writes the timestamp in buf[s, e) into row `row` (as int64 words, or through BigInt far from
 *  1970); false when it does not parse. */
export function parseTimestampInto(buf: Uint8Array, s: number, e: number, values: BigInt64Array, words: Int32Array, row: number): boolean {
  while (s < e && buf[s] === SPACE) s++;
  while (e > s && buf[e - 1] === SPACE) e--;
  const year = digitsAt(buf, s, 4, e);
  const month = digitsAt(buf, s + 5, 2, e);
  const day = digitsAt(buf, s + 8, 2, e);
  if (year < 0 || month < 1 || month > 12 || day < 1 || buf[s + 4] !== DASH || buf[s + 7] !== DASH) return false;
  if (day > daysInMonth(year, month)) return false;
  let i = s + 10;
  let seconds = daysFromCivil(year, month, day) * 86400;
  let micros = 0;
  if (i < e && (buf[i] === 0x54 || buf[i] === SPACE)) {
    const hour = digitsAt(buf, i + 1, 2, e);
    const minute = digitsAt(buf, i + 4, 2, e);
    if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || buf[i + 3] !== COLON) return false;
    seconds += hour * 3600 + minute * 60;
    i += 6;
    if (i < e && buf[i] === COLON) {
      const second = digitsAt(buf, i + 1, 2, e);
      if (second < 0 || second > 59) return false;
      seconds += second;
      i += 3;
      if (i < e && buf[i] === DOT) {
        i++;
        const first = i;
        let scale = 100000;
        for (; i < e && buf[i] >= ZERO && buf[i] <= ZERO + 9; i++, scale /= 10) {
          if (scale >= 1) micros += (buf[i] - ZERO) * scale;
        }
        if (i === first || i - first > 9) return false;
      }
    }
  }
  if (i < e) {
    const b = buf[i];
    if (b === 0x5a && i + 1 === e) i++; // 'Z'
    else if (b === PLUS || b === DASH) {
      const oh = digitsAt(buf, i + 1, 2, e);
      if (oh < 0 || oh > 23) return false;
      i += 3;
      let om = 0;
      if (i < e) {
        if (buf[i] === COLON) i++;
        om = digitsAt(buf, i, 2, e);
        if (om < 0 || om > 59) return false;
        i += 2;
      }
      const offset = (oh * 3600 + om * 60) * (b === PLUS ? 1 : -1);
      seconds -= offset; // local time minus its offset is UTC
    }
  }
  if (i !== e) return false;
  if (Math.abs(seconds) < MAX_SAFE_SECONDS) storeSafeInteger(words, row, seconds * 1e6 + micros);
  else values[row] = BigInt(seconds) * 1000000n + BigInt(micros);
  return true;
}
