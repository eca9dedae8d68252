// Differential fuzzing of the GPU CSV aggregate path (gpu-csv-aggregate.ts: records, fields,
// nulls, numbers and key hashes found on the GPU, rows grouped and aggregated there) against the
// CPU reader + PartialAggregator, chunk by chunk, on lavapipe in CI. Seeded random files vary:
// string keys (quoted or not, doubled quotes, the delimiter, LF / CRLF / a lone CR inside quotes,
// "" against an empty field, null texts, UTF-8, long keys that differ only at the end), int64
// keys (sign, '+', leading zeros, quoted, 18 digits, nulls), 1 to 4 key columns, every aggregate
// the path takes (count(), count/sum/mean/min/max of int64 and float64, count of text), floats
// with exponents and up to 19 digits, ±0, all rows in one group or each in its own, --dropna,
// tab delimiter, --null-values, CRLF and LF, a last record without a line break, a lone CR ending
// the file, several chunks per file, a few files of thousands of records (the key table grows),
// and the test hook that masks the key hash (collisions the exact key check must find). A few
// cases carry a record the GPU path must leave to the CPU reader (blank line, ragged, stray
// quote, spaces, inf/nan, 19-digit ints, 20+ digit or far-exponent floats) or one the CPU rejects.
//
// The GPU partial must equal the CPU's exactly (expectSamePartial: same groups, order, keys,
// hashes and finalised cells, -0 apart from 0). Float sums and means are compared exactly only
// over values the CPU's double-double accumulates without error: magnitudes in [1e-4, 1e7) (or
// 0), so every value is a multiple of 2^-66 and every running sum of a group below 2^36, where
// each step of the double-double sum is exact; the GPU's sum is exact, rounded to double-double.
// A second float column of any magnitude (integers past 2^53, halfway between two doubles, among
// them) is compared through count/min/max, which are exact on both sides whatever the values.
//
// When the GPU path declines a chunk, the test runs what a GPU worker then does (gpu-task.ts: the
// CPU reader, then gpuPartialAggregate over its rows) and compares that; when the CPU reader
// rejects the chunk the GPU path must have declined it. The share of chunks the GPU path took is
// printed and must stay above half.
// GPUFRAME_FUZZ_CASES sets the number of cases (default 1500, ~40 s here), GPUFRAME_FUZZ_SEED the
// first seed; a failure prints the seed (GPUFRAME_FUZZ_SEED=<seed> GPUFRAME_FUZZ_CASES=1 replays
// it), the options, the query and the file.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { valueAt, type DType, type Schema } from '../src/engine/batch.js';
import { GpuframeError } from '../src/engine/errors.js';
import { gpuPartialAggregate, gpuSupports } from '../src/engine/exec/gpu-aggregate.js';
import type { CsvSource } from '../src/engine/exec/gpu-csv-aggregate.js';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { DEFAULT_CSV_OPTIONS, planCsvChunks, readCsvChunk, type CsvLayout, type CsvOptions } from '../src/engine/io/csv/index.js';
import { parseAggList, type AggregateSpec, type PartialAggregate } from '../src/engine/ops/aggregate/index.js';
import { rng, tempDir } from './helpers/data.js';
import { cpuPartial, expectSamePartial, finalCells, gpuOutcome, inputSchemaOf } from './helpers/gpu-csv.js';

const CASES = Math.max(1, Math.floor(Number(process.env.GPUFRAME_FUZZ_CASES ?? 1500)));
const FIRST_SEED = Number(process.env.GPUFRAME_FUZZ_SEED ?? 1);
const dir = tempDir('fuzz-csv-gpu-agg');

type Random = () => number;
const pick = <T>(r: Random, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const int = (r: Random, n: number) => Math.floor(r() * n);
const digits = (r: Random, n: number) => Array.from({ length: n }, () => int(r, 10)).join('');

/** skey/ikey: key columns; int, float (bounded range), wild (any exponent), text: aggregated; junk: in the file, not read. */
type Kind = 'skey' | 'ikey' | 'int' | 'float' | 'wild' | 'text' | 'junk';
const DTYPE: Record<Kind, DType> = { skey: 'string', ikey: 'int64', int: 'int64', float: 'float64', wild: 'float64', text: 'string', junk: 'string' };

/** Records the GPU path must leave to the CPU reader, or that the CPU rejects (one per case at most). */
const SPICES = ['blank', 'ragged', 'stray quote', 'spaces', 'long int', 'int overflow', 'special float', 'bad float', 'long float', 'quoted doubled quote'] as const;
type Spice = (typeof SPICES)[number];

interface Case {
  text: string;
  names: string[];
  kinds: Kind[];
  /** Columns the query reads (the input schema), in order. */
  columns: string[];
  spec: AggregateSpec;
  options: CsvOptions;
  blocksize: number;
  /** The test hook that masks the string-key hash: collisions the exact key check must find. */
  hashMask: number | undefined;
  headerBytes: number;
  spice: Spice | null;
}

// ---- field texts ----

function quoteText(s: string): string {
  return `"${s.replace(/"/g, '""')}"`;
}

function mustQuote(s: string, delim: string): boolean {
  return s.includes(delim) || s.includes('"') || s.includes('\n') || s.includes('\r');
}

/** A string key's CSV text: quoted when it must be, and often when it need not. */
function stringField(r: Random, s: string, delim: string): string {
  return mustQuote(s, delim) || r() < 0.25 ? quoteText(s) : s;
}

/** A null: one of the null texts (sometimes quoted: still null, as it holds no doubled quote). */
function nullField(r: Random, options: CsvOptions): string | null {
  if (options.nullValues.length === 0) return null;
  const t = pick(r, options.nullValues);
  return r() < 0.15 ? `"${t}"` : t;
}

/** Distinct string keys of many shapes. */
function stringPool(r: Random, size: number, unique: boolean): string[] {
  const prefix = 'p'.repeat(40 + int(r, 120)) + pick(r, ['', 'ü', ',', '"']);
  const shapes: ((i: number) => string)[] = [
    (i) => `k${i}`,
    (i) => `k${i}, with comma`,
    (i) => `k${i} "quoted"`,
    (i) => `"${i}"`,
    (i) => `line\n${i}`,
    (i) => `crlf\r\n${i}`,
    (i) => `cr\r${i}`,
    (i) => `tab\t${i}`,
    (i) => `ключ${i}`,
    (i) => `日本語${i}€`,
    (i) => `🚀${i}`,
    (i) => `${prefix}${i}`, // long (> 64 bytes), differing only at the end
    (i) => `${prefix}${String.fromCharCode(0x3b1 + (i % 24))}${Math.floor(i / 24)}`,
    (i) => ` sp ${i} `,
    (i) => String(i), // looks like a number
    (i) => `${i}.5e3`,
  ];
  const specials = ['', 'NA', 'null', 'x', '-', '""', ' ', '\r'];
  const out = new Set<string>();
  const shape = unique ? null : pick(r, shapes);
  for (let i = 0; out.size < size; i++) {
    if (!unique && r() < 0.08) out.add(pick(r, specials));
    else out.add((shape && r() < 0.5 ? shape : pick(r, shapes))(i));
  }
  return [...out];
}

/** An int's text; `respell`: sometimes with '+' or leading zeros (a key spelled two ways, which a multi-column key leaves to the CPU). */
function intText(r: Random, v: bigint, respell: boolean): string {
  let t = v < 0n ? `-${-v}` : (respell && r() < 0.2 ? '+' : '') + String(v);
  if (respell && r() < 0.1) t = t.replace(/^([+-]?)/, (sign) => `${sign}00`); // leading zeros
  if (t.replace(/^[+-]/, '').length > 18) t = String(v); // the GPU parses up to 18 digits; 19-digit ints are a spice
  return r() < 0.1 ? `"${t}"` : t;
}

function randomInt(r: Random): bigint {
  const d = 1 + int(r, int(r, 4) === 0 ? 18 : 8);
  const v = BigInt(digits(r, d));
  return r() < 0.4 ? -v : v;
}

function intPool(r: Random, size: number): bigint[] {
  const out = new Set<bigint>();
  const edge = [0n, -1n, 1n, 999_999_999_999_999_999n, -999_999_999_999_999_999n, 2n ** 53n + 1n, -(2n ** 32n), 2n ** 31n];
  while (out.size < size) out.add(r() < 0.1 ? pick(r, edge) : r() < 0.5 ? BigInt(out.size) * BigInt(pick(r, [1, -1, 7, 1_000_003])) : randomInt(r));
  return [...out];
}

/** A float in [1e-4, 1e7) or a zero, in any of the ways a CSV writes one (the CPU double-double sum of such values is exact). */
function boundedFloat(r: Random): string {
  const sign = pick(r, ['', '', '', '-', '-', '+']);
  if (r() < 0.05) return sign + pick(r, ['0', '0.0', '0e5', '.0', '0.000', '00']);
  const n = 1 + int(r, pick(r, [3, 8, 17, 19]));
  const m = String(1 + int(r, 9)) + digits(r, n - 1);
  const e = -4 + int(r, 11); // value in [10^e, 10^(e+1))
  return sign + decimalText(r, m, e);
}

/**
 * Significant digits `m` (first one nonzero) times 10^(e - len + 1), written with or without an
 * exponent; plain only while it stays within the GPU's reach (19 digits, 10^±22 on them).
 */
function decimalText(r: Random, m: string, e: number): string {
  const form = int(r, 4);
  const point = e + 1;
  if (form === 0 && point <= 19 && point - m.length >= -22) {
    // Plain decimal, sometimes with trailing zeros, a leading '0' dropped or a trailing point.
    let t = point <= 0 ? `0.${'0'.repeat(-point)}${m}` : point >= m.length ? m + '0'.repeat(point - m.length) : `${m.slice(0, point)}.${m.slice(point)}`;
    if (r() < 0.2 && t.includes('.') && m.length < 17 && point - m.length >= -19) t += '0'.repeat(1 + int(r, 3));
    if (r() < 0.2 && t.startsWith('0.')) t = t.slice(1);
    if (r() < 0.1 && !t.includes('.') && t.length < 19) t += '.';
    return t;
  }
  // m[0].m[1..] e<e>, or all digits with a shifted exponent.
  const exp = form <= 1 ? e : e - (m.length - 1);
  const mant = form <= 1 && m.length > 1 ? `${m[0]}.${m.slice(1)}` : m;
  const es = exp < 0 ? `-${-exp}` : (r() < 0.3 ? '+' : '') + String(exp);
  return `${mant}${pick(r, ['e', 'E'])}${r() < 0.1 ? es.replace(/(\d+)$/, '0$1') : es}`;
}

/** A float with any exponent (GPU-parsed up to 19 digits and |e10| <= 22; past that the path declines). */
function wildFloat(r: Random, far: boolean): string {
  const sign = pick(r, ['', '-', '-', '+']);
  const t = r();
  if (t < 0.08) {
    // Integers at and past 2^53, many of them halfway between two doubles.
    const v = 2n ** BigInt(53 + int(r, 10)) + BigInt(int(r, 1 << 20)) * pick(r, [1n, 2n, 4n]) + pick(r, [0n, 1n]);
    return sign + (r() < 0.5 || v >= 10n ** 18n ? String(v) : `${v}.0`);
  }
  if (t < 0.12) return sign + pick(r, ['0', '0.0', '0e-300', '.0']);
  const n = 1 + int(r, 19);
  const m = String(1 + int(r, 9)) + digits(r, n - 1);
  const e = !far || r() < 0.9 ? -22 + int(r, 44) + (n - 1) : -330 + int(r, 640); // far: some past the GPU's reach
  return sign + decimalText(r, m, e);
}

// ---- files ----

function generate(seed: number): Case {
  const r = rng(seed * 2246822519 + 3266489917);
  const delim = r() < 0.8 ? ',' : '\t';
  const nullValues = r() < 0.65 ? [...DEFAULT_CSV_OPTIONS.nullValues] : pick(r, [['-'], ['NA', '-', 'N/A'], [], ['', 'x', '\\N']]);
  const options: CsvOptions = { ...DEFAULT_CSV_OPTIONS, delimiter: delim, nullValues, dtypes: {} };
  const eol = pick(r, ['\n', '\r\n', 'mixed'] as const);
  const lineEnd = () => (eol === 'mixed' ? pick(r, ['\n', '\r\n']) : eol);

  // Columns: 1-4 keys, 0-3 aggregated columns, 0-2 not read, in a random order.
  const keyCount = r() < 0.05 ? 4 : 1 + int(r, r() < 0.6 ? 1 : 3);
  const kinds: Kind[] = [];
  for (let k = 0; k < keyCount; k++) kinds.push(r() < 0.65 ? 'skey' : 'ikey');
  for (let k = int(r, 4); k > 0; k--) kinds.push(pick(r, ['int', 'int', 'float', 'float', 'wild', 'text'] as const));
  for (let k = r() < 0.3 ? 1 + int(r, 2) : 0; k > 0; k--) kinds.push('junk');
  for (let i = kinds.length - 1; i > 0; i--) { const j = int(r, i + 1); [kinds[i], kinds[j]] = [kinds[j], kinds[i]]; }
  const names = kinds.map((k, i) => `${k}${i}`);
  options.dtypes = Object.fromEntries(names.map((n, i) => [n, DTYPE[kinds[i]]]));

  // Rows and groups: mostly small files; a few of thousands of records.
  const big = r() < 0.03;
  const rows = big ? 2000 + int(r, 4000) : int(r, 5) === 0 ? int(r, 8) : int(r, 300);
  const shape = pick(r, ['one group', 'own group', 'few', 'many', 'skewed'] as const);
  const poolSize = (k: number) => shape === 'one group' ? 1 : shape === 'own group' && k === 0 ? Math.max(1, rows) : shape === 'few' ? 1 + int(r, 6) : 1 + int(r, Math.max(1, rows));
  const keyIdx = kinds.flatMap((k, i) => (k === 'skey' || k === 'ikey' ? [i] : []));
  const pools = keyIdx.map((c, k) => (kinds[c] === 'skey' ? stringPool(r, poolSize(k), shape === 'own group' && k === 0) : intPool(r, poolSize(k))));
  const nullShare = pick(r, [0, 0.02, 0.1, 0.3]);

  const spice: Spice | null = r() < 0.2 ? pick(r, SPICES) : null;
  const respell = r() < 0.3;
  const far = r() < 0.15;
  const spiceRow = int(r, Math.max(1, rows));

  const fieldOf = (c: number, row: number): string => {
    const kind = kinds[c];
    const k = keyIdx.indexOf(c);
    if (r() < nullShare && kind !== 'junk') {
      const n = nullField(r, options);
      if (n !== null) return n;
    }
    switch (kind) {
      case 'skey': {
        const pool = pools[k] as string[];
        const i = shape === 'own group' && k === 0 ? row : shape === 'skewed' ? Math.floor(pool.length * r() ** 3) : int(r, pool.length);
        return stringField(r, pool[i], delim);
      }
      case 'ikey': {
        const pool = pools[k] as bigint[];
        const i = shape === 'own group' && k === 0 ? row : shape === 'skewed' ? Math.floor(pool.length * r() ** 3) : int(r, pool.length);
        return intText(r, pool[i], respell);
      }
      case 'int': return intText(r, randomInt(r), respell);
      case 'float': { const t = boundedFloat(r); return r() < 0.05 ? `"${t}"` : t; }
      case 'wild': return wildFloat(r, far);
      case 'text': return stringField(r, pick(r, ['x', 'a,b', 'q"q', '', 'ü', 'l\nl']), delim);
      case 'junk': return stringField(r, pick(r, ['true', '2024-01-02 03:04:05', 'z', '', '1.5', 'j,k']), delim);
    }
  };

  const spiced = (c: number, text: string): string => {
    const kind = kinds[c];
    const number = kind === 'int' || kind === 'ikey' || kind === 'float' || kind === 'wild';
    switch (spice) {
      case 'stray quote': return kind === 'skey' || kind === 'text' || kind === 'junk' ? 'a"b' : text;
      case 'spaces': return number ? ` ${text.replace(/"/g, '')} ` : text;
      case 'long int': return kind === 'int' || kind === 'ikey' ? pick(r, ['9223372036854775807', '-9223372036854775808', '1234567890123456789']) : text;
      case 'int overflow': return kind === 'int' || kind === 'ikey' ? pick(r, ['9223372036854775808', '-99999999999999999999']) : text;
      case 'special float': return kind === 'float' || kind === 'wild' ? pick(r, ['inf', '-Infinity', 'nan', 'NaN']) : text;
      case 'bad float': return kind === 'float' || kind === 'wild' ? pick(r, ['1.2.3', '1e', '--1', '.']) : text;
      case 'long float': return kind === 'float' || kind === 'wild' ? `1.${digits(r, 25)}` : text;
      case 'quoted doubled quote': return number ? '"1"""' : text;
      default: return text;
    }
  };

  const header = names.join(delim) + lineEnd();
  let text = header;
  for (let row = 0; row < rows; row++) {
    let fields = kinds.map((_, c) => fieldOf(c, row));
    if (row === spiceRow) {
      fields = fields.map((f, c) => spiced(c, f));
      if (spice === 'ragged') fields = r() < 0.5 || fields.length === 1 ? [...fields, 'extra'] : fields.slice(1);
      if (spice === 'blank') text += lineEnd();
    }
    text += fields.join(delim) + (row < rows - 1 || r() < 0.7 ? lineEnd() : '');
  }
  if (r() < 0.1) text += '\r'; // a lone CR ending the file (after a line break: a blank line; else the last record's end)

  // The query: the keys and the aggregated columns, in any order; aggregates of all kinds.
  const read = kinds.flatMap((k, i) => (k === 'junk' ? [] : [i]));
  for (let i = read.length - 1; i > 0; i--) { const j = int(r, i + 1); [read[i], read[j]] = [read[j], read[i]]; }
  const aggs: string[] = [];
  if (r() < 0.7) aggs.push('count()');
  for (const c of read) {
    const name = names[c];
    const kind = kinds[c];
    const funcs = kind === 'int' || kind === 'float' || (kind === 'ikey' && r() < 0.3) ? ['count', 'sum', 'mean', 'min', 'max']
      : kind === 'wild' ? ['count', 'min', 'max'] : r() < 0.3 ? ['count'] : [];
    for (const f of funcs) if (r() < 0.7) aggs.push(`${f}(${name})`);
  }
  if (aggs.length === 0) aggs.push('count()');
  const keys = keyIdx.map((c) => names[c]);
  for (let i = keys.length - 1; i > 0; i--) { const j = int(r, i + 1); [keys[i], keys[j]] = [keys[j], keys[i]]; }
  const spec: AggregateSpec = { keys, aggs: parseAggList(aggs.join(',')), dropna: r() < 0.5 };
  // Most files are one chunk; some are cut into 2 to 6 (chunks then start inside the file).
  const blocksize = r() < 0.15 ? Math.max(64, Math.floor(Buffer.byteLength(text) / (2 + int(r, 5)))) : 1 << 30;
  const hashMask = r() < 0.1 ? pick(r, [0, 1, 3, 0xff, 0xffff]) : undefined;
  return { text, names, kinds, columns: read.map((c) => names[c]), spec, options, blocksize, hashMask, headerBytes: Buffer.byteLength(header), spice };
}

/** The sources of the case's chunks; the layout is the one the header gives (typed by dtypes). */
async function sourcesOfCase(path: string, c: Case): Promise<CsvSource[]> {
  const layout: CsvLayout = {
    path, displayName: path, fileSize: Buffer.byteLength(c.text), dataStart: c.headerBytes, dataStartLine: 2,
    schema: c.names.map((name, i) => ({ name, type: DTYPE[c.kinds[i]] })),
  };
  return (await planCsvChunks(layout, c.options, c.blocksize)).map((chunk) => ({ kind: 'csv', chunk, layout, options: c.options, columns: c.columns }));
}

type Cpu = { partial: PartialAggregate; rows: number } | { error: string };

function cpuOf(source: CsvSource, spec: AggregateSpec): Cpu {
  try {
    return cpuPartial(source, spec);
  } catch (err) {
    if (err instanceof GpuframeError) return { error: err.message };
    throw err;
  }
}

/** What a GPU worker does with a chunk the GPU CSV path declined: the CPU reader's rows, grouped by gpuPartialAggregate. */
async function declinedPath(source: CsvSource, spec: AggregateSpec, input: Schema): Promise<PartialAggregate> {
  const batch = readCsvChunk(source.chunk, source.layout, source.options, source.columns);
  return gpuPartialAggregate(await testGpu(), [batch], input, spec);
}

/** The first few cells (keys, then finalised aggregates) where two partials differ, for the failure message. */
function differences(got: PartialAggregate, want: PartialAggregate): string {
  const table = (p: PartialAggregate) => {
    const keys = p.keys.map((c) => Array.from({ length: p.groups }, (_, g) => valueAt(c, g)));
    const final = finalCells(p);
    return [...keys, ...('error' in final ? [[final.error]] : final)];
  };
  const a = table(got), b = table(want);
  const out: string[] = [];
  const show = (v: unknown) => (Object.is(v, -0) ? '-0' : typeof v === 'bigint' ? `${v}n` : JSON.stringify(v));
  for (let col = 0; col < Math.max(a.length, b.length) && out.length < 8; col++) {
    for (let g = 0; g < Math.max(a[col]?.length ?? 0, b[col]?.length ?? 0) && out.length < 8; g++) {
      if (!Object.is(a[col]?.[g], b[col]?.[g])) out.push(`column ${col} group ${g}: ${show(a[col]?.[g])} / ${show(b[col]?.[g])}`);
    }
  }
  return `${got.groups} / ${want.groups} groups; ${out.join('; ') || 'cells agree (hashes or schema differ)'}`;
}

describe.skipIf(skipGpuTests)('GPU CSV aggregate path fuzzing against the CPU reader + PartialAggregator', () => {
  it(`${CASES} seeded cases from seed ${FIRST_SEED}: the same partial aggregate per chunk, or a decline`, async () => {
    await testGpu();
    const path = join(dir, 'case.csv');
    let chunks = 0, onGpu = 0, cpuErrors = 0;
    const declines = new Map<string, number>();
    for (let seed = FIRST_SEED; seed < FIRST_SEED + CASES; seed++) {
      const c = generate(seed);
      writeFileSync(path, c.text);
      const sources = await sourcesOfCase(path, c);
      for (const source of sources) {
        chunks++;
        const where = `chunk ${source.chunk.start}-${source.chunk.end}`;
        let compared: [PartialAggregate, PartialAggregate] | null = null;
        try {
          const input = inputSchemaOf(source);
          expect(gpuSupports(c.spec, input)).toBe(true);
          const cpu = cpuOf(source, c.spec);
          const gpu = await gpuOutcome(source, c.spec, { hashMask: c.hashMask });
          if ('partial' in gpu) {
            onGpu++;
            if ('error' in cpu) throw new Error(`the GPU path took a chunk the CPU reader rejects (${cpu.error})`);
            expect(gpu.rows).toBe(cpu.rows);
            compared = [gpu.partial, cpu.partial];
            expectSamePartial(gpu.partial, cpu.partial);
          } else {
            const reason = gpu.fallback.replace(/\(problems \d+\)/, '');
            declines.set(reason, (declines.get(reason) ?? 0) + 1);
            if ('error' in cpu) cpuErrors++;
            else {
              compared = [await declinedPath(source, c.spec, input), cpu.partial];
              expectSamePartial(compared[0], cpu.partial);
            }
          }
        } catch (err) {
          expect.fail(`seed ${seed} (replay: GPUFRAME_FUZZ_SEED=${seed} GPUFRAME_FUZZ_CASES=1), ${where}, spice ${c.spice}\n`
            + `options ${JSON.stringify({ delimiter: c.options.delimiter, nullValues: c.options.nullValues, blocksize: c.blocksize, hashMask: c.hashMask })}\n`
            + `keys ${c.spec.keys.join(',')} aggs ${c.spec.aggs.map((a) => a.name).join(',')} dropna ${c.spec.dropna} columns ${c.columns.join(',')}\n`
            + `file: ${JSON.stringify(c.text.slice(0, 3000))}${c.text.length > 3000 ? ` … (${c.text.length} chars)` : ''}\n`
            + (compared ? `differences (got / want): ${differences(...compared)}\n` : '')
            + `${err instanceof Error ? err.stack ?? err.message : String(err)}`);
        }
      }
    }
    const share = onGpu / Math.max(1, chunks);
    console.log(`fuzz-csv-gpu-aggregate: ${CASES} cases, ${chunks} chunks, ${onGpu} on the GPU path (${(100 * share).toFixed(1)}%); `
      + `declined: ${[...declines].map(([why, n]) => `${why.trim()} ${n}`).join(', ') || 'none'} (${cpuErrors} of them rejected by the CPU reader too)`);
    if (CASES >= 50) {
      expect(share).toBeGreaterThan(0.5);
      expect(chunks - onGpu).toBeGreaterThan(0); // the decline side is exercised too
    }
  }, Math.max(180_000, CASES * 600));
});
