// Extreme input shapes work (or would fail cleanly): 10,000 small files through a glob, 10,000
// columns, and a single 100 MB field. Results are checked against values computed here.

import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gpuframe, shell } from './helpers/cli.js';
import { tempDir } from './helpers/data.js';

const dir = tempDir('rel-shapes');

async function ok(args: string[]) {
  const res = await gpuframe([...args, '--workers', '2']);
  expect(res.code, res.stderr).toBe(0);
  return res;
}

describe('input shapes at the limits', () => {
  it('10,000 small files through one glob: every row counted once', async () => {
    const files = join(dir, 'many');
    mkdirSync(files);
    const expected = new Map<string, { count: number; sum: number }>();
    for (let i = 0; i < 10_000; i++) {
      const rows = [[`k${i % 7}`, i], [`k${i % 3}`, 2 * i]] as const;
      writeFileSync(join(files, `part-${String(i).padStart(5, '0')}.csv`), `k,v\n${rows.map((r) => r.join(',')).join('\n')}\n`);
      for (const [k, v] of rows) {
        const e = expected.get(k) ?? { count: 0, sum: 0 };
        expected.set(k, { count: e.count + 1, sum: e.sum + v });
      }
    }
    const out = join(dir, 'many.csv');
    await ok(['groupby', join(files, '*.csv'), '--by', 'k', '--agg', 'count(),sum(v)', '-o', out]);
    const want = [...expected].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, e]) => `${k},${e.count},${e.sum}`);
    expect(readFileSync(out, 'utf8')).toBe(['k,count,sum_v', ...want].join('\n') + '\n');
  });

  it('10,000 columns: a byte-identical round trip and an aggregate of the last column', async () => {
    const width = 10_000;
    const rows = [Array.from({ length: width }, (_, j) => `c${j}`).join(',')];
    for (let i = 0; i < 40; i++) rows.push(Array.from({ length: width }, (_, j) => String((i * j) % 1000)).join(','));
    const input = join(dir, 'wide.csv');
    writeFileSync(input, rows.join('\n') + '\n');
    await ok(['read-csv', input, '-o', join(dir, 'wide-out.csv')]);
    expect(readFileSync(join(dir, 'wide-out.csv')).equals(readFileSync(input))).toBe(true);
    await ok(['groupby', input, '--by', 'c2', '--agg', `sum(c${width - 1})`, '-o', join(dir, 'wide-agg.csv')]);
    const sums = new Map<number, number>();
    for (let i = 0; i < 40; i++) sums.set((i * 2) % 1000, (sums.get((i * 2) % 1000) ?? 0) + ((i * (width - 1)) % 1000));
    const want = [...sums].sort(([a], [b]) => a - b).map(([k, s]) => `${k},${s}`);
    expect(readFileSync(join(dir, 'wide-agg.csv'), 'utf8')).toBe([`c2,sum_c${width - 1}`, ...want].join('\n') + '\n');
  });

  // Column names are looked up once per schema (maps, not a scan of the names per column), and
  // apache-arrow's Schema.assign is replaced by one that is too (apache-arrow.ts): quadratic work
  // per column made 10,000 columns take seconds per stage. Each path a wide file takes once: the
  // plan (inference, --columns, projection pushdown, the frozen --dtypes), a plan through a
  // pipe, workers, Arrow written and read back. Not timed: a path that turned quadratic again
  // would show here as a run of tens of seconds.
  it('5,000 columns: --columns in reverse order, a piped groupby, an Arrow round trip', async () => {
    const width = 5_000, height = 60;
    const names = Array.from({ length: width }, (_, j) => `c${j}`);
    // c0 string keys, then int64 and float64 (always a fraction: printed as written) columns.
    const cell = (i: number, j: number) => (j === 0 ? `k${i % 7}` : j % 2 === 1 ? String((i * j) % 1000) : `${(i * j) % 1000}.5`);
    const table = Array.from({ length: height }, (_, i) => Array.from({ length: width }, (_, j) => cell(i, j)));
    const csv = (header: string[], rows: string[][]) => [header, ...rows].map((r) => r.join(',')).join('\n') + '\n';
    const input = join(dir, 'wide5k.csv');
    writeFileSync(input, csv(names, table));

    const reversed = [...names].reverse();
    const picked = await gpuframe(['read-csv', input, '--columns', reversed.join(','), '--format', 'csv', '--workers', '2']);
    expect(picked.code, picked.stderr).toBe(0);
    expect(picked.stdout).toBe(csv(reversed, table.map((r) => [...r].reverse())));

    const last = names[width - 1];
    const piped = await shell(`gpuframe read-csv '${input}' --workers 0 | gpuframe groupby --by c0 --agg 'count(),sum(${last})' --format csv --workers 0`);
    expect(piped.code, piped.stderr).toBe(0);
    const groups = new Map<string, [number, number]>();
    for (const r of table) {
      const g = groups.get(r[0]) ?? [0, 0];
      groups.set(r[0], [g[0] + 1, g[1] + Number(r[width - 1])]);
    }
    const want = [...groups].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, [n, sum]]) => `${k},${n},${sum}`);
    expect(piped.stdout).toBe([`c0,count,sum_${last}`, ...want].join('\n') + '\n');

    const arrowFile = join(dir, 'wide5k.arrow');
    const written = await gpuframe(['read-csv', input, '-o', arrowFile, '--workers', '0']);
    expect(written.code, written.stderr).toBe(0);
    const back = await gpuframe(['read-csv', arrowFile, '--format', 'csv', '--workers', '0']);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdoutBytes.equals(readFileSync(input))).toBe(true);
  }, 60_000);

  it('a 100 MB quoted field (with delimiters, quotes and newlines inside) round-trips byte for byte', async () => {
    const input = join(dir, 'huge-field.csv');
    const piece = 'x'.repeat(999) + ',';
    const inner = piece.repeat(50_000) + '\n""' + 'y'.repeat(50_001_000);
    writeFileSync(input, `id,text\n1,"${inner}"\n2,short\n`);
    expect(statSync(input).size).toBeGreaterThan(100e6);
    const out = join(dir, 'huge-field-out.csv');
    await ok(['read-csv', input, '-o', out]);
    expect(readFileSync(out).equals(readFileSync(input))).toBe(true);
  });
});
