// Inputs and outputs through the CLI: Parquet, Arrow file and stream, JSONL, gzip, globs, stdin.
// Every route must give the same groupby result as the plain CSV.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { gpuframe, shell } from './helpers/cli.js';
import { factCsv, tempDir } from './helpers/data.js';
import { query } from './helpers/duckdb.js';
import { type NamedColumn, fieldsTable, parquetOf } from './io-formats-fixture.js';
// The same copy of apache-arrow as the code under test (its CommonJS build; see apache-arrow.ts).
import { arrow } from '../src/engine/io/apache-arrow.js';

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

describe('field names of Arrow and Parquet inputs: an empty one is column<i>, as in CSV headers', () => {
  /** `columns` written as `name.ext`: Arrow IPC file or stream by apache-arrow, Parquet by arrow-rs (parquet-wasm). */
  function write(name: string, ext: string, columns: NamedColumn[]): string {
    const path = join(dir, `${name}.${ext}`);
    const table = fieldsTable(columns);
    writeFileSync(path, ext === 'parquet' ? parquetOf(table) : arrow.tableToIPC(table, ext === 'arrow' ? 'file' : 'stream'));
    return path;
  }
  async function ok(...args: string[]): Promise<string> {
    const res = await gpuframe(args);
    expect(res.code, res.stderr).toBe(0);
    return res.stdout;
  }

  for (const ext of ['arrow', 'arrows', 'parquet']) {
    it(`.${ext}: read-csv names it column<i> with its values; --columns and groupby --by take that name`, async () => {
      const file = write('empty-name', ext, [
        { name: 'k', type: 'string', values: ['a', 'b', 'a'] }, { name: '', type: 'int64', values: [1n, 3n, 5n] }, { name: 'v', type: 'int64', values: [2n, 4n, 6n] },
      ]);
      expect(await ok('read-csv', file, '--format', 'csv')).toBe('k,column1,v\na,1,2\nb,3,4\na,5,6\n');
      expect(await ok('read-csv', file, '--columns', 'column1,k', '--format', 'csv')).toBe('column1,k\n1,a\n3,b\n5,a\n');
      expect(await ok('groupby', file, '--by', 'column1', '--agg', 'sum(v)', '--format', 'csv')).toBe('column1,sum_v\n1,2\n3,4\n5,6\n');
      expect(await ok('groupby', file, '--by', 'k', '--agg', 'sum(column1)', '--format', 'csv')).toBe('k,sum_column1\na,6\nb,3\n');
    });

    it(`.${ext}: column<i>_<n> where the file gives column<i>; a name given twice is exit 3 naming the file and positions`, async () => {
      // Two empty names of different types, one of them where the file also says column0.
      const taken = write('taken', ext, [
        { name: '', type: 'string', values: ['x', 'y'] }, { name: 'column0', type: 'int64', values: [1n, 2n] }, { name: '', type: 'int64', values: [3n, 4n] },
      ]);
      expect(await ok('read-csv', taken, '--format', 'csv')).toBe('column0_1,column0,column2\nx,1,3\ny,2,4\n');
      const twice = write('twice', ext, [
        { name: 'k', type: 'string', values: ['a', 'b'] }, { name: 'v', type: 'int64', values: [1n, 2n] }, { name: 'v', type: 'int64', values: [3n, 4n] },
      ]);
      const res = await gpuframe(['read-csv', twice, '--format', 'csv']);
      expect(res.code).toBe(3);
      expect(res.stderr).toBe(`gpuframe: ${twice}: duplicate column name 'v' at columns 2 and 3\n`);
    });
  }
});
