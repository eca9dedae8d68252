// CSV/JSONL row encoding: the byte-level encoder against the string-based one it replaced.
// The old encoder is kept below verbatim (with its cell formatting) as the reference that the new
// one must match byte for byte.

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { type Batch, type Column, type DType, type Schema, columnFromValues, stringColumn } from '../src/engine/batch.js';
import { formatFloat } from '../src/engine/io/format-value.js';
import { encodeRows, openFileWriter } from '../src/engine/io/output/index.js';

const pad2 = (n: number) => (n < 10 ? '0' : '') + n;

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

export function referenceTimestamp(micros: bigint, iso = false): string {
  const [days, r] = splitDays(micros);
  const [y, mo, d] = civilFromDays(days);
  const secs = Math.floor(r / 1e6);
  const frac = r - secs * 1e6;
  const date = `${String(y).padStart(4, '0')}-${pad2(mo)}-${pad2(d)}`;
  const time = `${pad2(Math.floor(secs / 3600))}:${pad2(Math.floor(secs / 60) % 60)}:${pad2(secs % 60)}`;
  const fraction = frac === 0 ? '' : '.' + String(frac).padStart(6, '0');
  return iso ? `${date}T${time}${fraction}Z` : `${date} ${time}${fraction}`;
}

function csvQuote(s: string, delimiter = ','): string {
  const needs = s.length === 0 || s.includes(delimiter) || /["\r\n]/.test(s) || /^[ \t]|[ \t]$/.test(s);
  return needs ? '"' + s.replaceAll('"', '""') + '"' : s;
}

type Style = 'csv' | 'json';

function cellFormatter(col: Column, style: Style): (row: number) => string {
  const fmt = valueFormatter(col, style);
  const valid = col.valid;
  if (valid === null) return fmt;
  const nullText = style === 'csv' ? '' : 'null';
  return (i) => (valid[i] === 0 ? nullText : fmt(i));
}

function valueFormatter(col: Column, style: Style): (row: number) => string {
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
      if (style === 'json') return (i) => `"${referenceTimestamp(v[i], true)}"`;
      return (i) => referenceTimestamp(v[i]);
    }
    case 'string': {
      const buf = Buffer.from(col.data.buffer, col.data.byteOffset, col.data.byteLength);
      const o = col.offsets;
      const text = (i: number) => buf.toString('utf8', o[i], o[i + 1]);
      if (style === 'csv') return (i) => csvQuote(text(i));
      return (i) => JSON.stringify(text(i));
    }
  }
}

function csvRows(batch: Batch, start: number, end: number): string {
  const cells = batch.columns.map((c) => cellFormatter(c, 'csv'));
  const lines: string[] = [];
  for (let i = start; i < end; i++) {
    let line = cells.length > 0 ? cells[0](i) : '';
    for (let c = 1; c < cells.length; c++) line += ',' + cells[c](i);
    lines.push(line);
  }
  return lines.join('\n') + '\n';
}

function jsonlRows(batch: Batch, start: number, end: number): string {
  const cells = batch.columns.map((c) => cellFormatter(c, 'json'));
  const keys = batch.schema.map((f, c) => (c === 0 ? '{' : ',') + JSON.stringify(f.name) + ':');
  const lines: string[] = [];
  for (let i = start; i < end; i++) {
    let line = cells.length === 0 ? '{' : '';
    for (let c = 0; c < cells.length; c++) line += keys[c] + cells[c](i);
    lines.push(line + '}');
  }
  return lines.join('\n') + '\n';
}

const ROWS_PER_SLICE = 16_384;

/** The old `encodeRows`: all rows of a batch as CSV or JSONL bytes, no header. */
export function referenceEncodeRows(format: 'csv' | 'jsonl', batch: Batch): Uint8Array {
  const encode = format === 'csv' ? csvRows : jsonlRows;
  const parts: Buffer[] = [];
  for (let start = 0; start < batch.length; start += ROWS_PER_SLICE) {
    parts.push(Buffer.from(encode(batch, start, Math.min(batch.length, start + ROWS_PER_SLICE)), 'utf8'));
  }
  return Buffer.concat(parts);
}

// ---------------------------------------------------------------------------------------------
// Random batches with every type and the awkward values of each.

/** Seeded xorshift, so a failure reproduces. */
function rng(seed: number) {
  let s = seed >>> 0 || 1;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
  const u64 = () => (BigInt(int(2 ** 32)) << 32n) | BigInt(int(2 ** 32));
  return { next, int, pick, u64 };
}
type Rng = ReturnType<typeof rng>;

const I64_MIN = -(2n ** 63n), I64_MAX = 2n ** 63n - 1n, P53 = 2n ** 53n;

function randomInt64(r: Rng): bigint {
  switch (r.int(6)) {
    case 0: return BigInt(r.int(2001) - 1000);
    case 1: return BigInt.asIntN(64, r.u64());
    case 2: return r.pick([I64_MIN, I64_MAX, I64_MIN + 1n, 0n, -1n, P53, -P53, P53 - 1n, 1n - P53, P53 + 1n, -P53 - 1n, 2n ** 31n, -(2n ** 31n), 2n ** 32n, -(2n ** 32n)]);
    case 3: return (r.next() < 0.5 ? -1n : 1n) * (P53 + BigInt(r.int(5000)) - 2500n);
    case 4: return BigInt(Math.floor((r.next() - 0.5) * 2 ** (r.int(53) + 1)));
    default: return BigInt(r.int(2 ** 31)) * (r.next() < 0.5 ? -1n : 1n);
  }
}

function randomFloat(r: Rng): number {
  const sign = r.next() < 0.5 ? -1 : 1;
  switch (r.int(7)) {
    case 0: return r.pick([NaN, Infinity, -Infinity, 0, -0, Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, 5e-324, 2.2250738585072014e-308,
      1e-4, 9.9999e-5, 1e-5, 0.00015, 1e9, 999999999.9999, 1e16, 9999999999999998, 1e15 + 0.5, 2 ** 53, 2 ** 53 + 2, 1e21, 1e22, 0.1 + 0.2, 1 / 3, 123456789.0001]);
    case 1: { // short decimals: the shape of prices and measurements
      const d = r.int(7);
      return sign * Number((r.next() * 10 ** r.int(12)).toFixed(d));
    }
    case 2: return sign * r.int(2 ** 31) * 10 ** r.int(10); // integral, some beyond 1e16
    case 3: { // any bit pattern
      const b = new Float64Array(new BigUint64Array([r.u64()]).buffer)[0];
      return b;
    }
    case 4: return sign * r.next() * 10 ** (r.int(40) - 20);
    case 5: return sign * (r.int(100000) / 10 ** r.int(9)); // decimals near the 4-decimal fast path's edges
    default: return sign * r.next() * 1000;
  }
}

const DAY_US = 86_400_000_000n;
function randomTimestamp(r: Rng): bigint {
  switch (r.int(5)) {
    case 0: return r.pick([I64_MIN, I64_MAX, 0n, -1n, 1n, P53, -P53, P53 - 1n, 1n - P53, -DAY_US, -DAY_US - 1n, -DAY_US + 1n, -62_135_596_800_000_000n, 253_402_300_799_999_999n, 253_402_300_800_000_000n, -62_167_219_200_000_001n]);
    case 1: return BigInt.asIntN(64, r.u64());
    case 2: return BigInt(r.int(2 ** 31) - 2 ** 30) * 1_000_000n; // whole seconds around 1970
    case 3: return BigInt(Math.floor((r.next() - 0.5) * 2 * 2 ** 53)); // any microsecond, years 1685..2255
    default: return BigInt(r.int(3_000_000) - 1_500_000) * DAY_US / 10n + BigInt(r.int(1_000_000));
  }
}

const PIECES = ['', 'a', 'xyz', ' ', '\t', ',', '"', '""', '\r', '\n', '\r\n', '\\', '/', 'é', '日本', '🚀', '\u2028', '\x7f', '\x00', '\x01', '\x08', '\x0c', '\x1b', '\x1f', 'nan', 'null', '0'];
function randomString(r: Rng): string {
  let s = '';
  for (let k = r.int(6); k > 0; k--) s += r.pick(PIECES);
  return s;
}

function withNulls<T>(r: Rng, n: number, nullRate: number, value: () => T): (T | null)[] {
  return Array.from({ length: n }, () => (r.next() < nullRate ? null : value()));
}

/** A batch of `n` rows with one or more columns of every type, some with nulls. */
function randomBatch(r: Rng, n: number): Batch {
  const types: DType[] = ['int64', 'float64', 'string', 'bool', 'timestamp', 'string', 'float64', 'int64'];
  const make: Record<DType, () => unknown> = {
    int64: () => randomInt64(r), float64: () => randomFloat(r), string: () => randomString(r),
    bool: () => r.next() < 0.5, timestamp: () => randomTimestamp(r),
  };
  const schema: Schema = types.map((type, c) => ({ name: c === 2 ? 'sé "q",\n' : `${type}_${c}`, type }));
  const columns = types.map((type, c) => columnFromValues(type, withNulls(r, n, c % 2 === 0 ? 0.15 : 0, make[type])));
  return { schema, length: n, columns };
}

/** Equal bytes; on a mismatch, the two texts around the first difference are shown. */
function expectSameBytes(actual: Uint8Array, expected: Uint8Array) {
  if (Buffer.from(actual).equals(Buffer.from(expected))) return;
  let at = 0;
  while (at < actual.length && actual[at] === expected[at]) at++;
  const around = (b: Uint8Array) => Buffer.from(b.subarray(Math.max(0, at - 80), at + 80)).toString('latin1');
  expect({ at, text: around(actual) }).toEqual({ at, text: around(expected) });
  expect(actual.length).toBe(expected.length);
}

describe('encodeRows matches the string-based encoder byte for byte', () => {
  for (const format of ['csv', 'jsonl'] as const) {
    test(`${format}: random batches of every type`, () => {
      const r = rng(format === 'csv' ? 7 : 11);
      for (let k = 0; k < 40; k++) {
        const batch = randomBatch(r, 1 + r.int(1500));
        expectSameBytes(encodeRows(format, batch), referenceEncodeRows(format, batch));
      }
    });

    test(`${format}: invalid UTF-8 and characters split between strings become U+FFFD as before`, () => {
      const r = rng(3);
      const n = 500;
      const lengths = Array.from({ length: n }, () => r.int(6));
      const offsets = new Int32Array(n + 1);
      for (let i = 0; i < n; i++) offsets[i + 1] = offsets[i] + lengths[i];
      // Mostly valid text ('é' is two bytes, so strings of odd length split it), some stray bytes.
      const valid = Buffer.from('é,"日'.repeat(offsets[n]));
      const data = Uint8Array.from({ length: offsets[n] }, (_, k) => (r.next() < 0.05 ? 0x80 + r.int(128) : valid[k]));
      const split: Column = { type: 'string', offsets, data: valid.subarray(0, offsets[n]), valid: null };
      const broken: Column = { type: 'string', offsets, data, valid: null };
      for (const col of [split, broken]) {
        const batch: Batch = { schema: [{ name: 's', type: 'string' }], length: n, columns: [col] };
        expectSameBytes(encodeRows(format, batch), referenceEncodeRows(format, batch));
      }
    });

    test(`${format}: offsets that start past 0, no columns, no rows`, () => {
      const data = Buffer.from('skip me|a,b|" c|');
      const view: Column = { type: 'string', offsets: Int32Array.from([8, 11, 15, 15]), data, valid: Uint8Array.from([1, 1, 0]) };
      const cases: Batch[] = [
        { schema: [{ name: 's', type: 'string' }], length: 3, columns: [view] },
        { schema: [], length: 3, columns: [] },
        randomBatch(rng(5), 0),
      ];
      for (const batch of cases) expectSameBytes(encodeRows(format, batch), referenceEncodeRows(format, batch));
    });
  }

  test('file writers (header, slices of rows) give the old bytes', async () => {
    const batch = randomBatch(rng(9), 40_000); // more than one 16k-row slice
    const dir = mkdtempSync(join(tmpdir(), 'gpuframe-encode-'));
    for (const format of ['csv', 'jsonl'] as const) {
      const path = join(dir, `out.${format}`);
      const w = await openFileWriter(path, format, batch.schema);
      await w.write(batch);
      await w.writeEncoded!(encodeRows(format, batch));
      await w.close();
      const rows = Buffer.from(referenceEncodeRows(format, batch));
      const header = format === 'csv' ? 'int64_0,float64_1,"sé ""q"",\n",bool_3,timestamp_4,string_5,float64_6,int64_7\n' : '';
      expectSameBytes(readFileSync(path), Buffer.concat([Buffer.from(header), rows, rows]));
    }
  });
});

// ---------------------------------------------------------------------------------------------

function flightsBatch(n: number): Batch {
  let s = 42;
  const rand = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  const codes = Array.from({ length: 300 }, (_, i) => letters[i % 26] + letters[Math.floor(i / 26) % 26] + letters[(i * 7) % 26]);
  const carriers = ['AA', 'DL', 'UA', 'WN', 'B6', 'AS', 'NK', 'F9'];
  const pick = (xs: string[]) => Array.from({ length: n }, () => xs[Math.floor(rand() * xs.length)]);
  const ints = (f: () => number) => columnFromValues('int64', Array.from({ length: n }, () => BigInt(f())));
  const schema: Schema = [['id', 'int64'], ['origin', 'string'], ['dest', 'string'], ['carrier', 'string'], ['delay', 'int64'], ['distance', 'int64'], ['price', 'float64']]
    .map(([name, type]) => ({ name, type: type as DType }));
  const columns: Column[] = [
    columnFromValues('int64', Array.from({ length: n }, (_, i) => BigInt(i))),
    stringColumn(pick(codes)), stringColumn(pick(codes)), stringColumn(pick(carriers)),
    ints(() => Math.floor(rand() * rand() * 300) - 30), ints(() => 100 + Math.floor(rand() * 4900)),
    columnFromValues('float64', Array.from({ length: n }, () => Number((rand() * 900 + 50).toFixed(2)))),
  ];
  return { schema, length: n, columns };
}

/** Output MB per CPU-second of the encoding thread, best of several runs: this measures the
 *  encoder, not how busy the machine's other cores are. */
function mbPerSecond(encode: () => Uint8Array): string {
  encode(); // warm up
  let best = Infinity, bytes = 0;
  for (let k = 0; k < 5; k++) {
    const start = process.cpuUsage().user;
    bytes = encode().length;
    best = Math.min(best, (process.cpuUsage().user - start) / 1e6);
  }
  return `${(bytes / 1e6 / best).toFixed(1)} MB/s (${best.toFixed(3)} s for ${(bytes / 1e6).toFixed(1)} MB)`;
}

describe.skipIf(!process.env.GPUFRAME_BENCH)('bench (GPUFRAME_BENCH=1)', () => {
  test('500k flights rows x 7 columns', () => {
    const batch = flightsBatch(500_000);
    for (const format of ['csv', 'jsonl'] as const) {
      console.log(`${format} reference: ${mbPerSecond(() => referenceEncodeRows(format, batch))}`);
      console.log(`${format} encodeRows: ${mbPerSecond(() => encodeRows(format, batch))}`);
    }
  });
});
