// Differential fuzzing of the GPU csvScan kernel (on lavapipe in CI) against gpuframe's CPU CSV
// reader, for the numeric subset the kernel parses: int64/float64 columns, empty fields (null),
// quoted numbers, CRLF, blank lines, a last record without a newline. Fewer cases than the CPU
// fuzzing (each GPU call costs milliseconds); seeded, and a failure prints the seed and input.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { valueAt, type Column } from '../src/engine/batch.js';
import { GpuframeError } from '../src/engine/errors.js';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { readCsvFile } from '../src/engine/io/csv/index.js';
import { csvScan } from '../src/kernels/csv-scan.js';
import { rng, tempDir } from './helpers/data.js';

const CASES = Math.max(1, Math.floor(Number(process.env.GPUFRAME_FUZZ_CASES ?? 3000) / 3));
const FIRST_SEED = Number(process.env.GPUFRAME_FUZZ_SEED ?? 1);
const dir = tempDir('fuzz-csv-gpu');

type Random = () => number;
const pick = <T>(r: Random, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

function number(r: Random, type: 'int64' | 'float64'): string {
  if (r() < 0.1) return '';
  const sign = pick(r, ['', '', '-', '+']);
  let text: string;
  if (type === 'int64') text = String(Math.floor(r() * 10 ** Math.floor(r() * 19)));
  else {
    const whole = String(Math.floor(r() * 10 ** Math.floor(r() * 10)));
    const frac = Array.from({ length: Math.floor(r() * 12) }, () => Math.floor(r() * 10)).join('');
    text = pick(r, [`${whole}.${frac}`, whole, `.${frac || '5'}`, `${whole}e${pick(r, ['', '-', '+'])}${Math.floor(r() * 300)}`]);
  }
  return r() < 0.1 ? `"${sign}${text}"` : sign + text;
}

function generate(seed: number): { text: string; types: ('int64' | 'float64')[] } {
  const r = rng(seed * 40503 + 7);
  const types = Array.from({ length: 1 + Math.floor(r() * 6) }, () => pick(r, ['int64', 'float64'] as const));
  const eol = pick(r, ['\n', '\r\n']);
  const rows = 1 + Math.floor(r() * 300);
  let text = '';
  for (let i = 0; i < rows; i++) {
    // The CPU reader takes a row of only empty fields in a 1-column file as a blank line, as does the kernel.
    text += types.map((t) => number(r, t)).join(',') + (i < rows - 1 || r() < 0.8 ? eol : '');
    if (r() < 0.03) text += eol; // a blank line
  }
  return { text, types };
}

function cells(col: Column, n: number): string[] {
  return Array.from({ length: n }, (_, i) => String(valueAt(col, i)));
}

describe.skipIf(skipGpuTests)('csvScan kernel fuzzing against the CPU reader', () => {
  it(`${CASES} seeded numeric cases from seed ${FIRST_SEED}: same values and nulls, or both an error`, async () => {
    const ctx = await testGpu();
    const path = join(dir, 'case.csv');
    for (let seed = FIRST_SEED; seed < FIRST_SEED + CASES; seed++) {
      const { text, types } = generate(seed);
      writeFileSync(path, text);
      const dtypes = Object.fromEntries(types.map((t, j) => [`column${j}`, t]));
      let cpu: string[][] | string;
      try {
        const { batch } = await readCsvFile(path, { header: false, dtypes, nullValues: [''] }, { tmpDir: dir });
        cpu = batch.columns.map((c) => cells(c, batch.length));
      } catch (err) {
        if (!(err instanceof GpuframeError)) throw err;
        cpu = `error: ${err.message}`;
      }
      let gpu: string[][] | string;
      try {
        const res = await csvScan(ctx, { bytes: Buffer.from(text), columns: types.map((type, index) => ({ index, type })), final: true });
        gpu = res.columns.map((c) => cells(c, res.records));
      } catch (err) {
        if (!(err instanceof GpuframeError)) throw err;
        gpu = `error: ${err.message}`;
      }
      // A file of blank lines is an error for the reader (a file-level rule); the kernel sees a chunk with 0 records.
      const noRecords = typeof cpu === 'string' && /no records/.test(cpu) && typeof gpu !== 'string' && gpu.every((c) => c.length === 0);
      const same = noRecords || (typeof cpu === 'string' ? typeof gpu === 'string' : JSON.stringify(cpu) === JSON.stringify(gpu));
      if (!same) {
        expect.fail(`seed ${seed} types ${types.join(',')}\ninput: ${JSON.stringify(text.slice(0, 1500))}\n`
          + `cpu: ${JSON.stringify(cpu).slice(0, 800)}\ngpu: ${JSON.stringify(gpu).slice(0, 800)}`);
      }
    }
  }, Math.max(120_000, CASES * 20));
});
