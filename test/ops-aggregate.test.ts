// groupby operators against DuckDB, plus determinism across partial splits and merge orders.
import { serialize, deserialize } from 'node:v8';
import { beforeAll, describe, expect, test } from 'vitest';
import { columnFromValues, sliceBatch, type Batch, type DType, type Schema } from '../src/engine/batch.js';
import { RuntimeFailure, UsageError } from '../src/engine/errors.js';
import {
  aggregateOutputSchema, finalizeAggregate, mergePartials, parseAggList, PartialAggregator, PartialMerger, partialBytes, splitPartial,
  type AggregateSpec, type PartialAggregate,
} from '../src/engine/ops/aggregate/index.js';
import { batchRows, duckdb, expectRowsClose, loadTable, queryRows, rng } from './ops-reference.js';
import type { DuckDBConnection } from '@duckdb/node-api';

function makeBatch(fields: [string, DType, unknown[]][]): Batch {
  return {
    schema: fields.map(([name, type]) => ({ name, type })),
    length: fields[0][2].length,
    columns: fields.map(([, type, values]) => columnFromValues(type, values)),
  };
}

/** Aggregates `batch` cut into blocks of `blockRows`, spread round-robin over `workers` partials merged in order. */
function aggregate(batch: Batch, spec: AggregateSpec, blockRows: number, workers = 1): Batch {
  const aggs = Array.from({ length: workers }, () => new PartialAggregator(batch.schema, spec));
  for (let start = 0, b = 0; start < batch.length; start += blockRows, b++) {
    aggs[b % workers].add(sliceBatch(batch, start, Math.min(batch.length, start + blockRows)));
  }
  const partials = aggs.map((a) => a.finish());
  return finalizeAggregate(partials.reduce((acc, p) => mergePartials(acc, p)));
}

function floatBits(batch: Batch): string {
  return batch.columns.map((c) => (c.type === 'string' ? Buffer.from(c.data).toString('hex') : Buffer.from(c.values.buffer).toString('hex'))).join('|');
}

const ALL_FLOAT = 'count(),count(f),sum(f),mean(f),min(f),max(f),var(f),std(f),nunique(f)';
const ALL_INT = 'count(i),sum(i),mean(i),min(i),max(i),var(i),std(i),nunique(i),sum(big)';
const OTHER = 'min(s),max(s),nunique(s),min(b),max(b),nunique(b)';
const SQL_FLOAT = 'count(*), count(f), sum(f), avg(f), min(f), max(f), var_samp(f), stddev_samp(f), count(DISTINCT f)';
const SQL_INT = 'count(i), sum(i), avg(i), min(i), max(i), var_samp(i), stddev_samp(i), count(DISTINCT i), sum(big)';
const SQL_OTHER = 'min(s), max(s), count(DISTINCT s), min(b), max(b), count(DISTINCT b)';

/** Skewed int keys with nulls, string keys, values with nulls, large ints whose group sums pass 2^53. */
function generate(rows: number, seed: number, groups: number): Batch {
  const r = rng(seed);
  const words = ['a', 'b', 'ab', 'é', 'z', 'Zeta', 'ünï', '', 'a b', 'x"y'];
  const k: unknown[] = [], ks: unknown[] = [], f: unknown[] = [], i: unknown[] = [], big: unknown[] = [], s: unknown[] = [], b: unknown[] = [];
  for (let n = 0; n < rows; n++) {
    const u = r();
    k.push(u < 0.02 ? null : Math.floor(Math.pow(r(), 3) * groups) - 5); // skewed towards small keys
    ks.push(r() < 0.03 ? null : words[Math.floor(r() * words.length)] + (r() < 0.5 ? Math.floor(r() * 20) : ''));
    f.push(r() < 0.1 ? null : 1 + r() * 999);
    i.push(r() < 0.1 ? null : BigInt(Math.floor((r() - 0.5) * 2 ** 40)) * 16n + BigInt(Math.floor(r() * 16)));
    big.push(BigInt(Math.floor(r() * 2 ** 44)) + 2n ** 44n);
    s.push(r() < 0.1 ? null : words[Math.floor(r() * words.length)]);
    b.push(r() < 0.1 ? null : r() < 0.3);
  }
  return makeBatch([['k', 'int64', k], ['ks', 'string', ks], ['f', 'float64', f], ['i', 'int64', i], ['big', 'int64', big], ['s', 'string', s], ['b', 'bool', b]]);
}

describe('parseAggList and aggregateOutputSchema', () => {
  test('names and errors', () => {
    expect(parseAggList('mean(delay), count(),sum(x)')).toEqual([
      { func: 'mean', column: 'delay', name: 'mean_delay' },
      { func: 'count', column: null, name: 'count' },
      { func: 'sum', column: 'x', name: 'sum_x' },
    ]);
    expect(() => parseAggList('median(x)')).toThrow(UsageError);
    expect(() => parseAggList('sum(x')).toThrow(UsageError);
    expect(() => parseAggList('sum()')).toThrow(UsageError);
    expect(() => parseAggList('')).toThrow(UsageError);
    const schema: Schema = [{ name: 'k', type: 'string' }, { name: 'delay', type: 'float64' }, { name: 'n', type: 'int64' }, { name: 'b', type: 'bool' }];
    expect(aggregateOutputSchema(schema, { keys: ['k'], aggs: parseAggList('count(),sum(n),sum(delay),mean(n),max(k),nunique(b)'), dropna: false }))
      .toEqual([{ name: 'k', type: 'string' }, { name: 'count', type: 'int64' }, { name: 'sum_n', type: 'int64' }, { name: 'sum_delay', type: 'float64' },
        { name: 'mean_n', type: 'float64' }, { name: 'max_k', type: 'string' }, { name: 'nunique_b', type: 'int64' }]);
    expect(() => aggregateOutputSchema(schema, { keys: ['k'], aggs: parseAggList('mean(dealy)'), dropna: false })).toThrow(/did you mean 'delay'/);
    expect(() => aggregateOutputSchema(schema, { keys: ['kk'], aggs: parseAggList('count()'), dropna: false })).toThrow(/did you mean 'k'/);
    expect(() => aggregateOutputSchema(schema, { keys: ['delay'], aggs: parseAggList('sum(k)'), dropna: false })).toThrow(UsageError);
    expect(() => aggregateOutputSchema(schema, { keys: ['k'], aggs: parseAggList('std(b)'), dropna: false })).toThrow(UsageError);
  });
});

describe('groupby against DuckDB', () => {
  let conn: DuckDBConnection;
  const data = generate(60_000, 1, 3000);
  beforeAll(async () => {
    conn = await duckdb();
    await loadTable(conn, 't', data);
  });

  for (const [label, aggs, sql] of [['float aggregates', ALL_FLOAT, SQL_FLOAT], ['int aggregates', ALL_INT, SQL_INT], ['string and bool', OTHER, SQL_OTHER]]) {
    test(`${label}, int key with nulls`, async () => {
      const spec: AggregateSpec = { keys: ['k'], aggs: parseAggList(aggs), dropna: false };
      const ours = aggregate(data, spec, 4096, 3);
      const ref = await queryRows(conn, `SELECT k, ${sql} FROM t GROUP BY k ORDER BY k NULLS LAST`);
      expectRowsClose(batchRows(ours), ref);
    });
  }

  test('string key, dropna', async () => {
    const spec: AggregateSpec = { keys: ['ks'], aggs: parseAggList(`${ALL_FLOAT},${ALL_INT}`), dropna: true };
    const ours = aggregate(data, spec, 10_000, 2);
    const ref = await queryRows(conn, `SELECT ks, ${SQL_FLOAT}, ${SQL_INT} FROM t WHERE ks IS NOT NULL GROUP BY ks ORDER BY ks`);
    expectRowsClose(batchRows(ours), ref);
  });

  test('multi-column keys (string, bool, int) with nulls', async () => {
    const spec: AggregateSpec = { keys: ['s', 'b', 'k'], aggs: parseAggList('count(),sum(i),mean(f),nunique(ks)'), dropna: false };
    const ours = aggregate(data, spec, 7777, 4);
    const ref = await queryRows(conn, `SELECT s, b, k, count(*), sum(i), avg(f), count(DISTINCT ks) FROM t GROUP BY s, b, k ORDER BY s NULLS LAST, b NULLS LAST, k NULLS LAST`);
    expectRowsClose(batchRows(ours), ref);
  });

  test('one group', async () => {
    const one = makeBatch([['g', 'int64', Array(5000).fill(7n)], ['f', 'float64', Array.from({ length: 5000 }, (_, n) => n * 0.37 - 100)]]);
    await loadTable(conn, 'one', one);
    const ours = aggregate(one, { keys: ['g'], aggs: parseAggList('count(),sum(f),mean(f),var(f),std(f),min(f),max(f)'), dropna: false }, 999, 3);
    expectRowsClose(batchRows(ours), await queryRows(conn, 'SELECT g, count(*), sum(f), avg(f), var_samp(f), stddev_samp(f), min(f), max(f) FROM one GROUP BY g'));
  });

  test('10^6 distinct groups', async () => {
    const n = 1_000_000;
    const r = rng(9);
    const keys = new BigInt64Array(n), vals = new Float64Array(n);
    for (let i = 0; i < n; i++) { keys[i] = BigInt(Math.floor(r() * 4e6)) * 997n; vals[i] = r() * 100; }
    const many: Batch = { schema: [{ name: 'k', type: 'int64' }, { name: 'v', type: 'float64' }], length: n,
      columns: [{ type: 'int64', values: keys, valid: null }, { type: 'float64', values: vals, valid: null }] };
    await loadTable(conn, 'many', many);
    const ours = aggregate(many, { keys: ['k'], aggs: parseAggList('count(),sum(v),max(v)'), dropna: false }, 1 << 17, 2);
    expect(ours.length).toBeGreaterThan(800_000);
    expectRowsClose(batchRows(ours), await queryRows(conn, 'SELECT k, count(*), sum(v), max(v) FROM many GROUP BY k ORDER BY k'));
  });
});

describe('many groups per batch: groups found by sorting the keys', () => {
  // Batches of 2^16 rows or more whose sample predicts many groups are grouped by ranking their keys
  // (groupRowsByKeys), not hashed; blocks of 1000 rows stay on the hash table.
  let conn: DuckDBConnection;
  const data = generate(150_000, 4, 400_000);
  beforeAll(async () => {
    conn = await duckdb();
    await loadTable(conn, 'wide_keys', data);
  });

  test('multi-column keys with nulls, every aggregate, against DuckDB', async () => {
    const spec: AggregateSpec = { keys: ['k', 'ks', 'b'], aggs: parseAggList(`${ALL_FLOAT},${ALL_INT},${OTHER}`), dropna: false };
    const ours = aggregate(data, spec, 80_000, 2);
    expect(ours.length).toBeGreaterThan(60_000);
    const ref = await queryRows(conn, `SELECT k, ks, b, ${SQL_FLOAT}, ${SQL_INT}, ${SQL_OTHER} FROM wide_keys GROUP BY k, ks, b ORDER BY k NULLS LAST, ks NULLS LAST, b NULLS LAST`);
    expectRowsClose(batchRows(ours), ref);
  });

  test('dropna, a float key and a string key, against DuckDB', async () => {
    const spec: AggregateSpec = { keys: ['f', 'ks'], aggs: parseAggList('count(),sum(i),mean(f),max(s)'), dropna: true };
    const ours = aggregate(data, spec, data.length, 1);
    const ref = await queryRows(conn, 'SELECT f, ks, count(*), sum(i), avg(f), max(s) FROM wide_keys WHERE f IS NOT NULL AND ks IS NOT NULL GROUP BY f, ks ORDER BY f, ks');
    expectRowsClose(batchRows(ours), ref);
  });

  test('the same bits as the hash table', () => {
    const spec: AggregateSpec = { keys: ['k', 's'], aggs: parseAggList(`${ALL_FLOAT},${ALL_INT},${OTHER}`), dropna: false };
    const hashed = floatBits(aggregate(data, spec, 1000, 3));
    for (const [block, workers] of [[data.length, 1], [70_000, 2], [100_000, 3]]) expect(floatBits(aggregate(data, spec, block, workers))).toBe(hashed);
  });
});

describe('determinism and partial state', () => {
  const data = generate(30_000, 2, 500);
  const wide = (() => {
    // Values over 20 orders of magnitude with both signs: plain float sums would depend on order.
    const r = rng(3);
    const n = 20_000;
    const k = Array.from({ length: n }, () => BigInt(Math.floor(r() * 40)));
    const x = Array.from({ length: n }, () => (r() - 0.4) * 10 ** Math.floor(r() * 20 - 10));
    return makeBatch([['k', 'int64', k], ['x', 'float64', x]]);
  })();
  const spec: AggregateSpec = { keys: ['k'], aggs: parseAggList(`${ALL_FLOAT},${ALL_INT},${OTHER}`), dropna: false };
  const wideSpec: AggregateSpec = { keys: ['k'], aggs: parseAggList('sum(x),mean(x),var(x),std(x)'), dropna: false };

  test('bit-identical across block sizes and worker counts', () => {
    const base = floatBits(aggregate(data, spec, data.length, 1));
    for (const [block, workers] of [[1000, 1], [333, 4], [4096, 3], [17, 2]]) {
      expect(floatBits(aggregate(data, spec, block, workers))).toBe(base);
    }
    const wideBase = floatBits(aggregate(wide, wideSpec, wide.length, 1));
    for (const [block, workers] of [[100, 7], [1234, 2], [3, 5]]) expect(floatBits(aggregate(wide, wideSpec, block, workers))).toBe(wideBase);
  });

  test('wide-range float sums equal the correctly rounded exact sum', () => {
    // Exact reference: each double is m * 2^e; sum exactly as a BigInt scaled by 2^1100, then round once.
    const out = aggregate(wide, wideSpec, 500, 3);
    const kCol = wide.columns[0].values as BigInt64Array, xCol = wide.columns[1].values as Float64Array;
    const sums = new Map<bigint, bigint>();
    for (let i = 0; i < wide.length; i++) sums.set(kCol[i], (sums.get(kCol[i]) ?? 0n) + exactScaled(xCol[i]));
    const outKeys = out.columns[0].values as BigInt64Array, outSums = out.columns[1].values as Float64Array;
    for (let g = 0; g < out.length; g++) expect(outSums[g]).toBe(roundScaled(sums.get(outKeys[g])!));
  });

  test('structured clone, v8.serialize, split and re-merge keep the result', () => {
    const agg = new PartialAggregator(data.schema, spec);
    agg.add(data);
    const p = agg.finish();
    const expected = floatBits(finalizeAggregate(p));
    expect(floatBits(finalizeAggregate(structuredClone(p)))).toBe(expected);
    expect(floatBits(finalizeAggregate(deserialize(serialize(p)) as PartialAggregate))).toBe(expected);
    const parts = splitPartial(p, 4);
    expect(parts.reduce((s, q) => s + q.groups, 0)).toBe(p.groups);
    expect(parts.every((q) => q.groups > 0 && q.groups < p.groups)).toBe(true);
    // Each part finalises to a disjoint subset of groups; all parts merged give the whole again.
    expect(floatBits(finalizeAggregate(parts.reduce((a, b) => mergePartials(a, b))))).toBe(expected);
    expect(partialBytes(p)).toBeGreaterThan(partialBytes(parts[0]));
  });

  test('merging never changes its inputs: a partial can be merged twice', () => {
    const thirds = [0, 1, 2].map((i) => {
      const agg = new PartialAggregator(data.schema, spec);
      agg.add(sliceBatch(data, i * 10_000, (i + 1) * 10_000));
      return agg.finish();
    });
    const ab = mergePartials(thirds[0], thirds[1]);
    const abc = mergePartials(ab, thirds[2]);
    const abAgain = mergePartials(ab, thirds[1]); // ab's cached table was taken by abc: rebuilt from its data
    const whole = new PartialAggregator(data.schema, spec);
    whole.add(sliceBatch(data, 0, 30_000));
    expect(floatBits(finalizeAggregate(abc))).toBe(floatBits(finalizeAggregate(whole.finish())));
    const twice = new PartialAggregator(data.schema, spec);
    twice.add(sliceBatch(data, 0, 20_000));
    twice.add(sliceBatch(data, 10_000, 20_000));
    expect(floatBits(finalizeAggregate(abAgain))).toBe(floatBits(finalizeAggregate(twice.finish())));
  });

  test('PartialMerger gives what a chain of mergePartials gives, also when its result is taken midway; its size estimate follows the groups', () => {
    const tenths = Array.from({ length: 10 }, (_, i) => {
      const agg = new PartialAggregator(data.schema, spec);
      agg.add(sliceBatch(data, i * 3_000, (i + 1) * 3_000));
      return agg.finish();
    });
    const chain = tenths.slice(1).reduce((merged, p) => mergePartials(merged, p), tenths[0]);
    const merger = new PartialMerger();
    expect(merger.result()).toBeNull();
    tenths.slice(0, 4).forEach((p) => merger.add(p));
    const midway = merger.result()!;
    expect(floatBits(finalizeAggregate(midway))).toBe(floatBits(finalizeAggregate(tenths.slice(1, 4).reduce((m, p) => mergePartials(m, p), tenths[0]))));
    tenths.slice(4).forEach((p) => merger.add(p));
    const merged = merger.result()!;
    expect(floatBits(finalizeAggregate(merged))).toBe(floatBits(finalizeAggregate(chain)));
    expect(merged.groups).toBe(chain.groups);
    expect(merger.bytes()).toBeGreaterThanOrEqual(partialBytes(chain) * 0.5);
    expect(merger.bytes()).toBeLessThanOrEqual(partialBytes(chain) * 2);
  });
});

describe('int64 sums', () => {
  test('exact past 2^53 and overflow is a RuntimeFailure', () => {
    const near = 2n ** 62n;
    const vals = [near, near - 1n, -5n, 3n, near];
    const ok = makeBatch([['k', 'int64', [1n, 1n, 1n, 2n, 2n]], ['v', 'int64', vals]]);
    const out = aggregate(ok, { keys: ['k'], aggs: parseAggList('sum(v),mean(v)'), dropna: false }, 1);
    expect(out.columns[1].values).toEqual(BigInt64Array.from([near + near - 1n - 5n, near + 3n]));
    expect(out.columns[2].values[1]).toBe(Number(near + 3n) / 2);
    // The overflowing group is named by its keys (the second of two, so not simply the first group).
    const over = makeBatch([['k', 'int64', [1n, 7n, 7n]], ['s', 'string', ['x', 'y', 'y']], ['v', 'int64', [1n, near, near]]]);
    const run = () => aggregate(over, { keys: ['k', 's'], aggs: parseAggList('sum(v)'), dropna: false }, 1);
    expect(run).toThrow(RuntimeFailure);
    expect(run).toThrow(`sum_v overflows int64 (exact sum ${2n * near}) in the group k=7, s=y`);
  });

  test('sums at the edges of int64 and of the 32-bit word split, against BigInt', () => {
    // Each group's values go far past 2^64 and come back (carries into the top word and out), or
    // end at the int64 limits, or at a high word just inside or outside 32 bits.
    const max = 2n ** 63n - 1n, min = -(2n ** 63n);
    const groups: bigint[][] = [
      [max], [min], [max, -1n, 1n], [min, 1n, -1n], [-1n], [0n], [2n ** 31n * 2n ** 32n - 1n], [-(2n ** 31n) * 2n ** 32n],
      [2n ** 52n + 1n, 2n ** 52n + 1n], [-(2n ** 52n) - 3n, 7n], [2n ** 32n - 1n, 1n], [-(2n ** 32n), -1n],
      [...Array(9).fill(max), ...Array(9).fill(-max), 5n], [...Array(9).fill(min), ...Array(9).fill(max), 9n],
    ];
    const keys = groups.flatMap((vals, g) => vals.map(() => BigInt(g)));
    const vals = groups.flat();
    for (const rows of [1, 2, 3]) {
      const out = aggregate(makeBatch([['k', 'int64', keys], ['v', 'int64', vals]]), { keys: ['k'], aggs: parseAggList('sum(v),mean(v)'), dropna: false }, rows, 2);
      groups.forEach((g, i) => {
        const sum = g.reduce((a, b) => a + b, 0n);
        expect(out.columns[1].values[i]).toBe(sum);
        const mean = out.columns[2].values[i] as number;
        // The mean of the exact sum, correctly rounded: within half an ulp of sum / n.
        const n = BigInt(g.length);
        const exact = Number(sum * 2n ** 20n / n) / 2 ** 20;
        expect(Math.abs(mean - exact)).toBeLessThanOrEqual(Math.abs(exact) * 2 ** -52 + 2 ** -20);
      });
    }
  });

  test('timestamp keys and min/max of timestamps, NaN ordering in min/max', () => {
    const t = (s: string) => BigInt(Date.parse(s)) * 1000n;
    const b = makeBatch([
      ['day', 'timestamp', [t('2024-01-02T00:00:00Z'), t('2024-01-01T00:00:00Z'), t('2024-01-02T00:00:00Z'), null]],
      ['at', 'timestamp', [t('2024-01-02T05:00:00Z'), null, t('2024-01-02T01:00:00Z'), t('1969-12-31T23:00:00Z')]],
      ['x', 'float64', [NaN, 2, 1, -Infinity]],
    ]);
    const out = aggregate(b, { keys: ['day'], aggs: parseAggList('min(at),max(at),min(x),max(x)'), dropna: false }, 3);
    expect(out.schema.map((f) => f.type)).toEqual(['timestamp', 'timestamp', 'timestamp', 'float64', 'float64']);
    expect(batchRows(out)).toEqual([
      [t('2024-01-01T00:00:00Z'), null, null, 2, 2],
      [t('2024-01-02T00:00:00Z'), t('2024-01-02T01:00:00Z'), t('2024-01-02T05:00:00Z'), 1, NaN],
      [null, t('1969-12-31T23:00:00Z'), t('1969-12-31T23:00:00Z'), -Infinity, -Infinity],
    ]);
  });

  test('all-null and single-value groups', () => {
    const b = makeBatch([['k', 'string', ['a', 'a', 'b', null]], ['v', 'float64', [null, null, 2.5, 1]]]);
    const out = aggregate(b, { keys: ['k'], aggs: parseAggList('count(),count(v),sum(v),mean(v),min(v),var(v),nunique(v)'), dropna: false }, 2);
    expect(batchRows(out)).toEqual([
      ['a', 2n, 0n, null, null, null, null, 0n],
      ['b', 1n, 1n, 2.5, 2.5, 2.5, null, 1n],
      [null, 1n, 1n, 1, 1, 1, null, 1n],
    ]);
  });
});

const SCALE = 1100n;
function exactScaled(x: number): bigint {
  if (x === 0) return 0n;
  // x = mant * 2^exp with integer mant (53 bits)
  let exp = Math.floor(Math.log2(Math.abs(x))) - 52;
  let mant = x / 2 ** exp;
  while (!Number.isInteger(mant)) { exp--; mant = x / 2 ** exp; }
  return BigInt(mant) << (SCALE + BigInt(exp));
}
function roundScaled(v: bigint): number {
  // Convert v / 2^SCALE to the nearest double via a decimal string with ample digits.
  const neg = v < 0n;
  const a = neg ? -v : v;
  const intPart = a >> SCALE;
  const frac = a - (intPart << SCALE);
  const digits = ((frac * 10n ** 400n) >> SCALE).toString().padStart(400, '0');
  const s = `${intPart}.${digits}`;
  return (neg ? -1 : 1) * Number(s);
}
