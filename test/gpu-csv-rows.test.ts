// The csv-rows kernel on lavapipe: float64 fields become the correctly rounded doubles (the same
// bits as JS Number(), which the CPU reader matches), including halfway and 19-digit cases; ints
// are exact; out-of-range exponents are flagged for the CPU reader rather than misparsed.

import { describe, expect, it } from 'vitest';
import { firstDifference, skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { freeBuffer, uploadNew } from '../src/engine/gpu/buffers.js';
import { columnOf, splitCsvRows, type CsvFieldKind } from '../src/kernels/csv-rows.js';
import { CSV_ROW_PROBLEMS } from '../src/kernels/csv-rows.wgsl.js';
import { rng } from './helpers/data.js';

async function parseColumn(texts: string[], kind: CsvFieldKind) {
  const ctx = await testGpu();
  const bytes = new TextEncoder().encode(texts.map((t, i) => `${i},${t}\n`).join(''));
  const data = await uploadNew(ctx, bytes, 'test csv');
  const rows = await splitCsvRows(ctx, data, bytes.length, { width: 2, delimiter: 0x2c, columns: [{ index: 1, kind }], keyColumns: [], dropna: false, nullValues: [''] });
  try {
    return { problems: rows.problems, records: rows.records, column: rows.problems === 0 ? await columnOf(ctx, rows, 0, kind) : null };
  } finally {
    rows.free();
    freeBuffer(ctx, data);
  }
}

const r = rng(77);
const digits = (n: number) => Array.from({ length: n }, () => Math.floor(r() * 10)).join('');

function randomDecimal(): string {
  const sign = r() < 0.3 ? '-' : r() < 0.1 ? '+' : '';
  const total = 1 + Math.floor(r() * 19); // up to 19 significant digits
  const point = Math.floor(r() * (total + 1));
  const m = digits(total).replace(/^0+(?=\d)/, '');
  const body = r() < 0.2 ? `${m}` : `${m.slice(0, point)}.${m.slice(point)}`;
  const exp = r() < 0.3 ? `e${Math.floor(r() * 9) - 4}` : '';
  return `${sign}${body === '.' ? '0' : body}${exp}`;
}

describe.skipIf(skipGpuTests)('csv-rows number parsing', () => {
  it('gives every in-range decimal the bits of Number(text)', async () => {
    const edge = ['0', '-0', '0.1', '0.3', '1e22', '1e-22', '9007199254740993', '9007199254740995', '18014398509481983',
      '9999999999999999999', '1.7976931348623157', '4.9406564584124654', '2.2250738585072014e-8', '0.000000000000000000001',
      '123456789012345678e-22', '5e-1', '.5', '5.', '-.25e+2', '1234567890123456789e3',
      // Exact values with a fraction (the reciprocal product's all-ones case), halfway cases (ties
      // to even) and values just off them.
      '1234.5', '-298.5', '0.25', '12.375', '42.0', '0.0625', '9007199254740993.0', '9007199254740995.00',
      '4503599627370496.5', '4503599627370497.5', '9007199254740993.01', '9007199254740992.99', '4503599627370497.49',
      '4503599627370497.51', '0.1000000000000000055511151231257827', '1.000000000000000111', '1.000000000000000112'];
    const texts = [...edge, ...Array.from({ length: 30_000 }, randomDecimal)]
      .filter((t) => Math.abs(Number(t.split('e')[1] ?? 0) - (t.split('e')[0].split('.')[1]?.length ?? 0)) <= 22);
    const got = await parseColumn(texts, 'float64');
    expect(got.problems).toBe(0);
    const want = Float64Array.from(texts, Number);
    const at = firstDifference(got.column!.values as Float64Array, want);
    expect(at, at >= 0 ? `${texts[at]}: ${(got.column!.values as Float64Array)[at]} vs ${want[at]}` : '').toBe(-1);
  });

  it('rounds decimals within a unit of their 17th-19th digit of a halfway point between doubles as Number(text)', async () => {
    // The exact midpoint (2m + 1) · 2^(e - 1) of double m · 2^e and the next, cut to 17-19
    // significant digits and nudged a unit either way: the rounding decision right at its edge.
    const f64 = new Float64Array(1), u64 = new BigUint64Array(f64.buffer);
    const texts: string[] = [];
    while (texts.length < 20_000) {
      f64[0] = r() * 10 ** (Math.floor(r() * 24) - 6);
      if (!(f64[0] > 0)) continue;
      const e = Number((u64[0] >> 52n) & 0x7ffn) - 1075, m = (u64[0] & ((1n << 52n) - 1n)) | (1n << 52n);
      const digits = e - 1 >= 0 ? (2n * m + 1n) << BigInt(e - 1) : (2n * m + 1n) * 5n ** BigInt(1 - e);
      const text = digits.toString(), keep = 17 + Math.floor(r() * 3);
      const cut = BigInt(text.slice(0, keep)) + BigInt(Math.floor(r() * 3) - 1);
      const e10 = Math.min(0, e - 1) + text.length - keep;
      if (Math.abs(e10) <= 22) texts.push(`${cut}e${e10}`);
    }
    const got = await parseColumn(texts, 'float64');
    expect(got.problems).toBe(0);
    const want = Float64Array.from(texts, Number);
    const at = firstDifference(got.column!.values as Float64Array, want);
    expect(at, at >= 0 ? `${texts[at]}: ${(got.column!.values as Float64Array)[at]} vs ${want[at]}` : '').toBe(-1);
  });

  it('parses int64 exactly, up to 18 digits', async () => {
    const texts = Array.from({ length: 5000 }, () => `${r() < 0.5 ? '-' : ''}${digits(1 + Math.floor(r() * 18))}`);
    const got = await parseColumn([...texts, '', '-0'], 'int64');
    expect(got.problems).toBe(0);
    expect(firstDifference(got.column!.values as BigInt64Array, BigInt64Array.from([...texts, '0', '0'], BigInt))).toBe(-1);
    expect(Array.from(got.column!.valid!).filter((v) => v === 0).length).toBe(1);
  });

  it('flags exponents past 10^±22 and inf/nan for the CPU reader', async () => {
    for (const t of ['1e23', '1e-23', '0.00000000000000000000001', 'inf', 'nan', '1.5e400']) {
      expect((await parseColumn(['1.5', t], 'float64')).problems, t).toBe(CSV_ROW_PROBLEMS.value);
    }
  });
});

describe.skipIf(skipGpuTests)('csv-rows field splitting', () => {
  // A '"' inside an unquoted field is a quote misuse (the CPU reader's syntax error) wherever it
  // falls: at each position of a 4-byte word, before the delimiter or at the record's end; clean
  // and quoted fields are not. Each case is one chunk of records `<row>,<field>,<int>`.
  async function problemsOf(fields: string[]): Promise<number> {
    const ctx = await testGpu();
    const bytes = new TextEncoder().encode(fields.map((f, i) => `${i},${f},${i}\n`).join(''));
    const data = await uploadNew(ctx, bytes, 'test csv');
    const rows = await splitCsvRows(ctx, data, bytes.length, { width: 3, delimiter: 0x2c, columns: [{ index: 1, kind: 'text' }, { index: 2, kind: 'int64' }], keyColumns: [], dropna: false, nullValues: [''] });
    try {
      return rows.problems;
    } finally {
      rows.free();
      freeBuffer(ctx, data);
    }
  }

  it('flags a quote inside an unquoted field wherever it falls in a word, and nothing in clean or quoted fields', async () => {
    for (let pad = 1; pad <= 8; pad++) {
      const before = 'x'.repeat(pad);
      // (Quotes in pairs, so that the record ends stay outside quotes.)
      for (const bad of [`${before}""`, `${before}"y"`, `${before}"yyyyyy"z`, `a${before}""`]) {
        expect(await problemsOf(['ok', bad, 'fine']), bad).toBe(CSV_ROW_PROBLEMS.quotes);
      }
      for (const good of [before, `"${before},"`, `"${before}""q"`, `"a\n${before}"`, `${before}'`]) {
        expect(await problemsOf(['ok', good, 'fine']), good).toBe(0);
      }
    }
    // A quoted field with text after its closing quote.
    expect(await problemsOf(['"ab"c']) & CSV_ROW_PROBLEMS.quotes).toBe(CSV_ROW_PROBLEMS.quotes);
  });
});
