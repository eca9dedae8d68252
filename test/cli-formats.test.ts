// Inputs and outputs through the CLI: Parquet, Arrow file and stream, JSONL, gzip, globs, stdin.
// Every route must give the same groupby result as the plain CSV.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { gpuframe, shell } from './helpers/cli.js';
import { factCsv, tempDir } from './helpers/data.js';
import { query } from './helpers/duckdb.js';

const dir = tempDir('formats');
const facts = join(dir, 'facts.csv');
const AGG = ['--by', 'ks', '--agg', 'count(),sum(i),mean(f),max(ts),nunique(b)'];
let expected = '';

beforeAll(async () => {
  factCsv(facts, { rows: 20_000, groups: 100, seed: 9 });
  const res = await gpuframe(['groupby', facts, ...AGG, '--format', 'csv']);
  expect(res.code, res.stderr).toBe(0);
  expected = res.stdout;
});

describe('formats', () => {
  for (const ext of ['parquet', 'arrow', 'arrows']) {
    it(`CSV -> .${ext} -> groupby gives the CSV's result`, async () => {
      const converted = join(dir, `facts.${ext}`);
      const out = ext === 'arrows' ? await shell(`gpuframe read-csv '${facts}' --format arrow > '${converted}'`) : await gpuframe(['read-csv', facts, '-o', converted]);
      expect(out.code, out.stderr).toBe(0);
      const res = await gpuframe(['groupby', converted, ...AGG, '--format', 'csv']);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toBe(expected);
    });
  }

  it('Parquet output is read by DuckDB with the same rows and types', async () => {
    const pq = join(dir, 'agg.parquet');
    expect((await gpuframe(['groupby', facts, ...AGG, '-o', pq])).code).toBe(0);
    const ours = await query(`select ks, count, sum_i::VARCHAR from read_parquet('${pq}') order by ks nulls last`);
    const ref = await query(`select ks, count(*), sum(i)::VARCHAR from read_csv('${facts}', types={'i':'BIGINT'}) group by ks order by ks nulls last`);
    expect(ours).toEqual(ref);
  });

  it('JSONL output has one object per row', async () => {
    const jl = join(dir, 'agg.jsonl');
    expect((await gpuframe(['groupby', facts, ...AGG, '-o', jl])).code).toBe(0);
    const rows = readFileSync(jl, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(rows.length).toBe(expected.trim().split('\n').length - 1);
    expect(Object.keys(rows[0])).toEqual(['ks', 'count', 'sum_i', 'mean_f', 'max_ts', 'nunique_b']);
  });

  it('gzip input, stdin data and a glob of split files give the same result', async () => {
    const text = readFileSync(facts, 'utf8');
    writeFileSync(join(dir, 'facts.csv.gz'), gzipSync(text));
    const gz = await gpuframe(['groupby', join(dir, 'facts.csv.gz'), ...AGG, '--format', 'csv']);
    expect(gz.code, gz.stderr).toBe(0);
    expect(gz.stdout).toBe(expected);

    const stdin = await gpuframe(['groupby', ...AGG, '--format', 'csv'], { stdin: text });
    expect(stdin.code, stdin.stderr).toBe(0);
    expect(stdin.stdout).toBe(expected);

    const lines = text.trimEnd().split('\n');
    const half = Math.floor(lines.length / 2);
    writeFileSync(join(dir, 'part-1.csv'), lines.slice(0, half).join('\n') + '\n');
    writeFileSync(join(dir, 'part-2.csv'), [lines[0], ...lines.slice(half)].join('\n') + '\n');
    const globbed = await gpuframe(['groupby', join(dir, 'part-*.csv'), ...AGG, '--format', 'csv', '--dtypes', 'b=bool']);
    expect(globbed.code, globbed.stderr).toBe(0);
    expect(globbed.stdout).toBe(expected);
  });
});
