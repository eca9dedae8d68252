// merge end to end through the CLI against DuckDB: every join type, duplicate and null keys,
// multi-column keys, both strategies (broadcast and hash-partitioned with spilling).

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { beforeAll, describe, expect, it } from 'vitest';
import { gpuframe, shell } from './helpers/cli.js';
import { rng, tempDir } from './helpers/data.js';
import { query } from './helpers/duckdb.js';

const dir = tempDir('merge');
const left = join(dir, 'left.csv');
const right = join(dir, 'right.csv');

beforeAll(() => {
  const r = rng(3);
  const l = ['id,k2,lv,name'];
  for (let i = 0; i < 20_000; i++) l.push(`${r() < 0.03 ? '' : Math.floor(r() * 3000)},${Math.floor(r() * 3)},${i},n${i % 17}`);
  writeFileSync(left, l.join('\n') + '\n');
  const rr = ['id,k2,rv,name'];
  for (let i = 0; i < 4000; i++) rr.push(`${r() < 0.03 ? '' : Math.floor(r() * 4000)},${Math.floor(r() * 3)},${(r() * 100).toFixed(3)},m${i % 5}`);
  writeFileSync(right, rr.join('\n') + '\n');
});

/** Rows as canonical strings, sorted: join output order is ours to define, content is DuckDB's. */
function canonical(rows: unknown[][]): string[] {
  return rows.map((r) => r.map((v) => (v === null || v === undefined || v === '' ? '∅' : String(Number.isNaN(Number(v)) ? v : Number(v)))).join('|')).sort();
}

function ours(path: string): { header: string[]; rows: string[][] } {
  const all = parse(readFileSync(path)) as string[][];
  return { header: all[0], rows: all.slice(1) };
}

const TYPES = `types={'id':'BIGINT','k2':'BIGINT'}`;

describe('merge against DuckDB', () => {
  for (const how of ['inner', 'left', 'right', 'outer'] as const) {
    for (const strategy of ['broadcast', 'partitioned'] as const) {
      it(`${how} join on one key (${strategy})`, async () => {
        const out = join(dir, `on-${how}-${strategy}.csv`);
        // A tiny memory limit forces the hash-partitioned strategy.
        const limit = strategy === 'broadcast' ? '1GB' : '256KB';
        const res = await gpuframe(['merge', left, right, '--on', 'id', '--how', how, '-o', out, '--memory-limit', limit, '--workers', '2', '--blocksize', '64KB']);
        expect(res.code, res.stderr).toBe(0);
        const { header, rows } = ours(out);
        expect(header).toEqual(['id', 'k2_x', 'lv', 'name_x', 'k2_y', 'rv', 'name_y']);
        const duckHow = { inner: 'inner', left: 'left', right: 'right', outer: 'full outer' }[how];
        const ref = await query(`select coalesce(l.id, r.id) as id, l.k2, l.lv, l.name, r.k2, r.rv, r.name
          from read_csv('${left}', ${TYPES}) l ${duckHow} join read_csv('${right}', ${TYPES}) r on l.id = r.id`);
        expect(canonical(rows)).toEqual(canonical(ref));
      });
    }
  }

  // Chained in one plan, the first join's unmatched right rows must go through the second join's
  // probe (they were dropped: the second join's epilogue replaced the first's).
  for (const [first, second] of [['right', 'outer'], ['outer', 'outer'], ['outer', 'right'], ['right', 'left']] as const) {
    it(`${first} join, then ${second} join, in one plan (broadcast)`, async () => {
      const third = join(dir, 'third.csv');
      const t = ['id,tv'];
      for (let i = 0; i < 5000; i += 3) t.push(`${i},t${i}`);
      writeFileSync(third, t.join('\n') + '\n');
      const out = join(dir, `chain-${first}-${second}.csv`);
      const res = await shell(`gpuframe merge '${left}' '${right}' --on id --how ${first} --memory-limit 1GB | gpuframe merge - '${third}' --on id --how ${second} --memory-limit 1GB -o '${out}'`);
      expect(res.code, res.stderr).toBe(0);
      const { header, rows } = ours(out);
      expect(header).toEqual(['id', 'k2_x', 'lv', 'name_x', 'k2_y', 'rv', 'name_y', 'tv']);
      const duck = (how: string) => ({ inner: 'inner', left: 'left', right: 'right', outer: 'full outer' }[how]);
      const ref = await query(`select coalesce(j.id, t.id) as id, j.lk2, j.lv, j.lname, j.rk2, j.rv, j.rname, t.tv from
        (select coalesce(l.id, r.id) as id, l.k2 as lk2, l.lv, l.name as lname, r.k2 as rk2, r.rv, r.name as rname
          from read_csv('${left}', ${TYPES}) l ${duck(first)} join read_csv('${right}', ${TYPES}) r on l.id = r.id) j
        ${duck(second)} join read_csv('${third}', types={'id':'BIGINT'}) t on j.id = t.id`);
      expect(canonical(rows)).toEqual(canonical(ref));
    });
  }

  it('multi-column keys with --left-on/--right-on keep both key columns', async () => {
    const out = join(dir, 'multi.csv');
    const res = await gpuframe(['merge', left, right, '--left-on', 'id,k2', '--right-on', 'id,k2', '--how', 'left', '-o', out]);
    expect(res.code, res.stderr).toBe(0);
    const { rows } = ours(out);
    const ref = await query(`select coalesce(l.id, r.id), l.k2, l.lv, l.name, r.rv, r.name from read_csv('${left}', ${TYPES}) l
      left join read_csv('${right}', ${TYPES}) r on l.id = r.id and l.k2 = r.k2`);
    expect(canonical(rows)).toEqual(canonical(ref));
  });

  // --memory-limit picks the strategy and the bucket count; neither may change the bytes.
  for (const how of ['inner', 'outer'] as const) {
    it(`${how} join: the same bytes broadcast and hash-partitioned into any number of buckets`, async () => {
      const outs: Buffer[] = [];
      for (const [limit, workers] of [['1GB', '2'], ['512KB', '2'], ['256KB', '1'], ['64KB', '2']]) {
        const out = join(dir, `strategy-${how}-${limit}.csv`);
        const explained = await gpuframe(['merge', left, right, '--on', 'id', '--how', how, '--memory-limit', limit, '--explain']);
        expect(explained.stdout).toMatch(limit === '1GB' ? /broadcast right/ : /hash-partitioned/);
        const res = await gpuframe(['merge', left, right, '--on', 'id', '--how', how, '-o', out, '--memory-limit', limit, '--workers', workers, '--blocksize', '64KB']);
        expect(res.code, res.stderr).toBe(0);
        outs.push(readFileSync(out));
      }
      for (const o of outs.slice(1)) expect(o.equals(outs[0])).toBe(true);
    });
  }

  it('chained right and outer joins: the same bytes broadcast and hash-partitioned', async () => {
    const third = join(dir, 'third-order.csv');
    const t = ['id,tv'];
    for (let i = 0; i < 5000; i += 7) t.push(`${i},t${i}`);
    writeFileSync(third, t.join('\n') + '\n');
    const outs: Buffer[] = [];
    for (const limit of ['1GB', '256KB', '96KB']) {
      const out = join(dir, `chain-order-${limit}.csv`);
      const res = await shell(`gpuframe merge '${left}' '${right}' --on id --how right | gpuframe merge - '${third}' --on id --how outer --memory-limit ${limit} --blocksize 32KB -o '${out}'`);
      expect(res.code, res.stderr).toBe(0);
      outs.push(readFileSync(out));
    }
    for (const o of outs.slice(1)) expect(o.equals(outs[0])).toBe(true);
  });

  it('output order does not depend on workers or block size', async () => {
    const outs: Buffer[] = [];
    for (const [workers, bs] of [['1', '1MB'], ['2', '32KB'], ['0', '7KB']]) {
      const out = join(dir, `order-${workers}-${bs}.csv`);
      const res = await gpuframe(['merge', left, right, '--on', 'id', '--how', 'outer', '-o', out, '--workers', workers, '--blocksize', bs]);
      expect(res.code, res.stderr).toBe(0);
      outs.push(readFileSync(out));
    }
    expect(outs[1].equals(outs[0])).toBe(true);
    expect(outs[2].equals(outs[0])).toBe(true);
  });
});
