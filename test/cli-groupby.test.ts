// groupby end to end through the CLI, checked against DuckDB on the same generated file.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { beforeAll, describe, expect, it } from 'vitest';
import { gpuframe } from './helpers/cli.js';
import { expectTablesClose, normaliseCell, type Cell } from './helpers/compare.js';
import { factCsv, tempDir } from './helpers/data.js';
import { query } from './helpers/duckdb.js';

const dir = tempDir('groupby');
const facts = join(dir, 'facts.csv');
const skewed = join(dir, 'skewed.csv');

beforeAll(() => {
  factCsv(facts, { rows: 60_000, groups: 500, seed: 7 });
  factCsv(skewed, { rows: 40_000, groups: 50, seed: 11, skew: true, nullShare: 0.2 });
});

const AGGS = 'count(),count(i),sum(i),mean(i),min(i),max(i),var(i),std(i),nunique(i),sum(f),mean(f),min(f),max(f),var(f),std(f),nunique(ks),min(ks),max(ks),min(ts),max(ts),max(b)';
const DUCK_AGGS = `count(*), count(i), sum(i), avg(i), min(i), max(i), var_samp(i), stddev_samp(i), count(distinct i),
  sum(f), avg(f), min(f), max(f), var_samp(f), stddev_samp(f), count(distinct ks), min(ks), max(ks),
  strftime(min(ts), '%Y-%m-%d %H:%M:%S.%f'), strftime(max(ts), '%Y-%m-%d %H:%M:%S.%f'), max(b)`;

function readOurCsv(path: string): Cell[][] {
  const rows = parse(readFileSync(path), { from_line: 2, relax_column_count: false }) as string[][];
  return rows.map((r) => r.map(normaliseCell));
}

async function duck(file: string, keys: string, where = ''): Promise<Cell[][]> {
  const rows = await query(`select ${keys}, ${DUCK_AGGS} from read_csv('${file}', header=true,
      types={'ks':'VARCHAR','ki':'BIGINT','i':'BIGINT','f':'DOUBLE','b':'BOOLEAN','ts':'TIMESTAMP'})
      ${where} group by ${keys} order by ${keys.split(',').map((k) => `${k} nulls last`).join(', ')}`);
  return rows.map((r) => r.map((v) => {
    if (typeof v === 'boolean') return String(v);
    if (typeof v === 'string' && /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.000000$/.test(v)) return v.slice(0, -7);
    return normaliseCell(v);
  }));
}

describe('groupby against DuckDB', () => {
  for (const [name, file, by] of [['string key', facts, 'ks'], ['int key', facts, 'ki'], ['two keys, skewed, many nulls', skewed, 'ks,b']] as const) {
    it(`${name}: every aggregate`, async () => {
      const out = join(dir, `out-${by.replace(',', '_')}-${name.length}.csv`);
      const res = await gpuframe(['groupby', file, '--by', by, '--agg', AGGS, '-o', out, '--workers', '2', '--blocksize', '256KB']);
      expect(res.stderr).not.toMatch(/error/i);
      expect(res.code).toBe(0);
      const header = readFileSync(out, 'utf8').split('\n')[0];
      expect(header.split(',').slice(by.split(',').length, by.split(',').length + 3)).toEqual(['count', 'count_i', 'sum_i']);
      expectTablesClose(readOurCsv(out), await duck(file, by), 1e-12);
    });
  }

  it('--dropna drops null keys', async () => {
    const out = join(dir, 'dropna.csv');
    const res = await gpuframe(['groupby', facts, '--by', 'ks', '--agg', AGGS, '--dropna', '-o', out]);
    expect(res.code).toBe(0);
    expectTablesClose(readOurCsv(out), await duck(facts, 'ks', 'where ks is not null'), 1e-12);
  });

  it('1e6 distinct groups: counts and exact int sums', async () => {
    const big = join(dir, 'distinct.csv');
    const lines = ['k,v'];
    for (let i = 0; i < 1_000_000; i++) lines.push(`${(i * 7919) % 1_000_000},${(i % 1000) * 9_007_199_254_740 - 4e15}`);
    (await import('node:fs')).writeFileSync(big, lines.join('\n') + '\n');
    const out = join(dir, 'distinct-out.csv');
    const res = await gpuframe(['groupby', big, '--by', 'k', '--agg', 'count(),sum(v)', '-o', out, '--workers', '2', '--blocksize', '4MB']);
    expect(res.code, res.stderr).toBe(0);
    const ours = readOurCsv(out);
    const ref = (await query(`select k, count(*), sum(v) from read_csv('${big}') group by k order by k`)).map((r) => r.map(normaliseCell));
    expectTablesClose(ours, ref);
  });

  it('sums past 2^53 stay exact', async () => {
    const file = join(dir, 'bigsum.csv');
    const lines = ['k,v'];
    for (let i = 0; i < 3000; i++) lines.push(`${i % 3},${9_007_199_254_740_993n + BigInt(i)}`);
    (await import('node:fs')).writeFileSync(file, lines.join('\n') + '\n');
    const out = join(dir, 'bigsum-out.csv');
    const res = await gpuframe(['groupby', file, '--by', 'k', '--agg', 'sum(v)', '-o', out, '--blocksize', '16KB', '--workers', '2']);
    expect(res.code, res.stderr).toBe(0);
    const ref = await query(`select k, sum(v)::VARCHAR from read_csv('${file}', types={'v':'BIGINT'}) group by k order by k`);
    expect(readOurCsv(out).map((r) => r.map(String))).toEqual(ref.map((r) => r.map(String)));
  });
});
