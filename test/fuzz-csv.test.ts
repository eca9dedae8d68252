// Differential fuzzing of the CSV reader: seeded random and mutated inputs (quotes, delimiters,
// CR/LF, blank lines, empty and huge fields, invalid UTF-8, BOM) are read by gpuframe's reader
// (readCsvFile, at several block sizes, so chunk boundaries fall everywhere) and by csv-parse.
// Both must give the same rows, byte for byte, or both must reject the input; gpuframe's
// rejection must be a DataError/UsageError (a message with a place), never a crash.
// The normal suite runs a fast slice; GPUFRAME_FUZZ_CASES=100000 is the nightly-style run.
// A failure prints the case's seed and input; GPUFRAME_FUZZ_SEED=<seed> GPUFRAME_FUZZ_CASES=1 replays it.

import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { GpuframeError } from '../src/engine/errors.js';
import { DEFAULT_CSV_OPTIONS, inferCsvLayout, readCsvFile, type CsvOptions } from '../src/engine/io/csv/index.js';
import { rng, tempDir } from './helpers/data.js';

const CASES = Number(process.env.GPUFRAME_FUZZ_CASES ?? 3000);
const FIRST_SEED = Number(process.env.GPUFRAME_FUZZ_SEED ?? 1);
const BLOCKSIZES = [1, 13, 1 << 20];
const dir = tempDir('fuzz-csv');

type Outcome = { rows: string[][] } | { error: string };

type Random = () => number;
const pick = <T>(r: Random, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const int = (r: Random, n: number) => Math.floor(r() * n);

/** Bytes that stress a CSV reader; strings are latin1 (one char = one byte) so any byte is expressible. */
const NASTY = ['"', '""', "'", ',', ';', '\t', '|', '\n', '\r\n', '\r', ' ', '', 'x', '7', '-1.5e3', 'NA',
  '\u00c3\u00a9' /* é in UTF-8 */, '\u00ff' /* invalid UTF-8 */, '\u00c3' /* truncated sequence */, '\u0001' /* csv-parse tolerates NUL after a closing quote; gpuframe rejects it */, '\u00ef\u00bb\u00bf'];

function field(r: Random): string {
  if (r() < 0.002) return 'y'.repeat(20_000 + int(r, 200_000)); // a huge field
  const n = int(r, 5);
  let s = '';
  for (let i = 0; i < n; i++) s += r() < 0.6 ? pick(r, ['a', 'bc', '12', '3.25', 'true', '', ' ']) : pick(r, NASTY);
  return s;
}

function quoteField(s: string, delim: string, quote: string): string {
  const needs = s.includes(delim) || s.includes(quote) || s.includes('\n') || s.includes('\r') || s === '';
  return needs ? quote + s.split(quote).join(quote + quote) + quote : s;
}

/** A well-formed file (most of the time) in the given dialect. */
function structured(r: Random, delim: string, quote: string): string {
  const width = 1 + int(r, 5);
  const rows = 1 + int(r, 12);
  const eol = pick(r, ['\n', '\r\n']);
  let s = r() < 0.1 ? '\u00ef\u00bb\u00bf' : '';
  for (let i = 0; i < rows; i++) {
    const fields = Array.from({ length: width }, () => {
      const f = field(r);
      return r() < 0.3 ? quote + f.split(quote).join(quote + quote) + quote : quoteField(f, delim, quote);
    });
    s += fields.join(delim) + (i < rows - 1 || r() < 0.7 ? eol : '');
    if (r() < 0.05) s += eol; // a blank line
  }
  return s;
}

/** A few random byte edits: inserts, deletes and replacements with nasty bytes. */
function mutate(r: Random, s: string): string {
  const edits = 1 + int(r, 4);
  for (let e = 0; e < edits; e++) {
    const at = int(r, s.length + 1);
    const what = int(r, 3);
    if (what === 0) s = s.slice(0, at) + pick(r, NASTY) + s.slice(at);
    else if (what === 1) s = s.slice(0, at) + s.slice(at + 1 + int(r, 3));
    else s = s.slice(0, at) + pick(r, NASTY) + s.slice(at + 1);
  }
  return s;
}

function soup(r: Random): string {
  let s = '';
  const n = 1 + int(r, 40);
  for (let i = 0; i < n; i++) s += r() < 0.5 ? pick(r, NASTY) : pick(r, ['a', 'b', '1', ',']);
  return s;
}

function generate(seed: number): { input: Buffer; delimiter: string; quote: string } {
  const r = rng(seed * 2654435761);
  const delimiter = r() < 0.7 ? ',' : pick(r, [';', '\t', '|']);
  const quote = r() < 0.85 ? '"' : "'";
  const kind = r();
  const text = kind < 0.45 ? structured(r, delimiter, quote) : kind < 0.9 ? mutate(r, structured(r, delimiter, quote)) : soup(r);
  let input = Buffer.from(text, 'latin1');
  if (input[0] === 0x1f && input[1] === 0x8b) input = input.subarray(1); // not a gzip file
  return { input, delimiter, quote };
}

function options(delimiter: string, quote: string): Partial<CsvOptions> {
  return { delimiter, quote, header: false, nullValues: [], onBadLines: 'error' };
}

/** gpuframe's reading, every column as strings (their bytes as latin1, so invalid UTF-8 compares exactly). */
async function ours(path: string, opts: Partial<CsvOptions>, blocksize: number): Promise<Outcome> {
  try {
    const layout = await inferCsvLayout(path, path, { ...DEFAULT_CSV_OPTIONS, ...opts });
    const dtypes = Object.fromEntries(layout.schema.map((f) => [f.name, 'string' as const]));
    const { batch } = await readCsvFile(path, { ...opts, dtypes }, { blocksize, tmpDir: dir });
    const rows: string[][] = Array.from({ length: batch.length }, () => []);
    for (const col of batch.columns) {
      if (col.type !== 'string') throw new Error(`column read as ${col.type} despite dtypes`);
      for (let i = 0; i < batch.length; i++) {
        rows[i].push(col.valid && !col.valid[i] ? '<null>' : Buffer.from(col.data.subarray(col.offsets[i], col.offsets[i + 1])).toString('latin1'));
      }
    }
    return { rows };
  } catch (err) {
    if (err instanceof GpuframeError) return { error: err.message };
    throw err; // a crash: not an acceptable answer to bad input
  }
}

/** csv-parse's reading in the same dialect: blank lines skipped, ragged rows rejected, CR only before LF (or at the end) ends a line. */
function reference(input: Buffer, delimiter: string, quote: string): Outcome {
  try {
    // csv-parse's own BOM option switches it to decoding UTF-8; strip the BOM here to keep raw bytes.
    // gpuframe (by design) also takes a CR at the very end of the file as the end of the last line.
    const bom = input[0] === 0xef && input[1] === 0xbb && input[2] === 0xbf;
    const finalCr = input.length > 0 && input[input.length - 1] === 0x0d;
    const rows = parse(input.subarray(bom ? 3 : 0, input.length - (finalCr ? 1 : 0)), {
      delimiter, quote, escape: quote, encoding: null, skip_empty_lines: true, record_delimiter: ['\r\n', '\n'],
    }) as Buffer[][];
    // gpuframe's contract: a file without a single record is bad input (exit 3), not an empty table.
    if (rows.length === 0) return { error: 'no records' };
    return { rows: rows.map((r) => r.map((b) => b.toString('latin1'))) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

function agree(a: Outcome, b: Outcome): boolean {
  if ('error' in a || 'error' in b) return 'error' in a && 'error' in b;
  return JSON.stringify(a.rows) === JSON.stringify(b.rows);
}

function show(o: Outcome): string {
  return 'error' in o ? `error: ${o.error}` : JSON.stringify(o.rows).slice(0, 600);
}

describe('CSV reader fuzzing against csv-parse', () => {
  it(`${CASES} seeded cases from seed ${FIRST_SEED}: same rows or both an error, no crash`, async () => {
    const path = join(dir, 'case.csv');
    let errors = 0;
    for (let seed = FIRST_SEED; seed < FIRST_SEED + CASES; seed++) {
      const { input, delimiter, quote } = generate(seed);
      writeFileSync(path, input);
      const ref = reference(input, delimiter, quote);
      const opts = options(delimiter, quote);
      for (const blocksize of BLOCKSIZES) {
        let got: Outcome;
        try {
          got = await ours(path, opts, blocksize);
        } catch (err) {
          got = { error: `CRASH ${(err as Error).stack}` };
        }
        const crashed = 'error' in got && got.error.startsWith('CRASH');
        if (crashed || !agree(got, ref)) {
          expect.fail(`seed ${seed} (delimiter ${JSON.stringify(delimiter)}, quote ${JSON.stringify(quote)}, blocksize ${blocksize})\n`
            + `input (latin1): ${JSON.stringify(input.toString('latin1').slice(0, 2000))}\n`
            + `gpuframe: ${show(got)}\ncsv-parse: ${show(ref)}`);
        }
      }
      if ('error' in ref) errors++;
    }
    rmSync(path, { force: true });
    // The generator must exercise both sides of the contract.
    expect(errors).toBeGreaterThan(CASES * 0.05);
    expect(errors).toBeLessThan(CASES * 0.95);
  }, Math.max(120_000, CASES * 50));
});
