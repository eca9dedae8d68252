// Key machinery: hashing, the key table's exact equality, and the sort order (DuckDB's).
import type { DuckDBConnection } from '@duckdb/node-api';
import { beforeAll, describe, expect, test } from 'vitest';
import { columnFromValues, takeColumn, valueAt, type Batch, type Column, type DType } from '../src/engine/batch.js';
import { hashKeys, KeyTable } from '../src/engine/ops/keys.js';
import { rangeOfKeys } from '../src/engine/ops/aggregate/index.js';
import { groupRowsByKeys, rowComparer, sortIndicesByKeys } from '../src/engine/ops/sort.js';
import { duckdb, loadTable, queryRows, rng } from './ops-reference.js';

const col = (type: DType, values: unknown[]) => columnFromValues(type, values);

describe('hashKeys', () => {
  test('equal numbers hash alike across int64 and float64; -0 == 0; NaNs alike', () => {
    const ints = col('int64', [0n, 1n, -7n, 2n ** 50n, null]);
    const floats = col('float64', [-0, 1, -7, 2 ** 50, null]);
    expect(hashKeys([ints], 5)).toEqual(hashKeys([floats], 5));
    const nans = col('float64', [NaN, -NaN, 0 / 0]);
    const h = hashKeys([nans], 3);
    expect(h[1]).toBe(h[0]);
    expect(h[2]).toBe(h[0]);
  });
  test('spreads keys and separates multi-column splits of the same bytes', () => {
    const h = hashKeys([col('int64', Array.from({ length: 10000 }, (_, i) => BigInt(i)))], 10000);
    expect(new Set(h).size).toBe(10000);
    const low = new Set(Array.from(h, (x) => x & 1023));
    expect(low.size).toBeGreaterThan(1000); // the table's slot bits are well used
    const a = hashKeys([col('string', ['ab', 'a']), col('string', ['', 'b'])], 2);
    expect(a[0]).not.toBe(a[1]);
  });
});

describe('KeyTable', () => {
  test('dense ids in first-seen order; colliding hashes never merge distinct keys', () => {
    const keys = [col('string', ['a', 'b', 'a', null, 'é', null, 'b']), col('int64', [1n, 1n, 1n, 2n, 3n, 2n, 2n])];
    const table = new KeyTable(['string', 'int64']);
    const real = table.insert(keys, hashKeys(keys, 7), 7);
    expect(Array.from(real)).toEqual([0, 1, 0, 2, 3, 2, 4]);
    const collide = new KeyTable(['string', 'int64']);
    expect(Array.from(collide.insert(keys, new Uint32Array(7), 7))).toEqual([0, 1, 0, 2, 3, 2, 4]); // every hash 0
    const kc = collide.keyColumns();
    expect(Array.from({ length: 5 }, (_, i) => [valueAt(kc[0], i), valueAt(kc[1], i)])).toEqual([['a', 1n], ['b', 1n], [null, 2n], ['é', 3n], ['b', 2n]]);
    const probe = [col('string', ['b', 'c', null]), col('int64', [2n, 1n, 2n])];
    expect(Array.from(table.lookup(probe, hashKeys(probe, 3), 3))).toEqual([4, -1, 2]);
  });

  test('a single string key (its own probe loop): nulls, prefixes and colliding hashes stay apart', () => {
    const r = rng(5);
    const pool = ['', 'a', 'ab', 'abc', 'b', 'é', 'ba', 'x'.repeat(70), 'x'.repeat(71), null];
    const vals = Array.from({ length: 5000 }, () => pool[Math.floor(r() * pool.length)]);
    const c = col('string', vals);
    const ref = new Map<unknown, number>();
    const expected = vals.map((v) => { if (!ref.has(v)) ref.set(v, ref.size); return ref.get(v)!; });
    for (const hashes of [hashKeys([c], vals.length), new Uint32Array(vals.length)]) {
      const table = new KeyTable(['string']);
      expect(Array.from(table.insert([c], hashes, vals.length))).toEqual(expected);
      expect(Array.from({ length: table.size }, (_, i) => valueAt(table.keyColumns()[0], i))).toEqual([...ref.keys()]);
      const probe = col('string', ['abc', 'abcd', null, '']);
      const probeHashes = hashes[0] === 0 ? new Uint32Array(4) : hashKeys([probe], 4);
      expect(Array.from(table.lookup([probe], probeHashes, 4))).toEqual(['abc', 'abcd', null, ''].map((v) => ref.get(v) ?? -1));
    }
  });

  test('matches a Map reference on 200k random keys, through rehashing', () => {
    const r = rng(11);
    const n = 200_000;
    const vals = Array.from({ length: n }, () => (r() < 0.01 ? null : Math.floor(r() * 50_000) * 0.5));
    const c = col('float64', vals);
    const ids = new KeyTable(['float64']).insert([c], hashKeys([c], n), n);
    const ref = new Map<unknown, number>();
    vals.forEach((v, i) => {
      if (!ref.has(v)) ref.set(v, ref.size);
      if (ids[i] !== ref.get(v)) expect.fail(`row ${i}: id ${ids[i]} vs ${ref.get(v)}`);
    });
  });
});

describe('groupRowsByKeys', () => {
  // Reference: groups are the distinct key tuples (KeyTable's equality), numbered in rowComparer order.
  function check(cols: Column[], n: number): void {
    const got = groupRowsByKeys(cols, n);
    const ids = new KeyTable(cols.map((c) => c.type)).insert(cols, hashKeys(cols, n), n);
    const firstOfId: number[] = [];
    ids.forEach((id, row) => { if (firstOfId[id] === undefined) firstOfId[id] = row; });
    const cmp = rowComparer(cols);
    const idsInOrder = firstOfId.map((_, id) => id).sort((a, b) => cmp(firstOfId[a], firstOfId[b]));
    expect(got.groups).toBe(firstOfId.length);
    expect(Array.from(got.firstRows)).toEqual(idsInOrder.map((id) => firstOfId[id]));
    const groupOfId = new Map(idsInOrder.map((id, g) => [id, g] as const));
    for (let row = 0; row < n; row++) if (got.groupOfRow[row] !== groupOfId.get(ids[row])) expect.fail(`row ${row}`);
  }

  test('-0 and 0, NaNs and nulls each one group; strings by bytes; several columns combined by counting and by sorting', () => {
    check([col('float64', [0, -0, NaN, null, -NaN, 1.5, null, -Infinity, 0])], 9);
    check([col('string', ['b', 'a', null, 'ab', '', 'a', null, 'é'])], 8);
    const r = rng(3);
    const n = 5000;
    const few = col('int64', Array.from({ length: n }, () => (r() < 0.05 ? null : BigInt(Math.floor(r() * 30)))));
    const wide = col('int64', Array.from({ length: n }, () => BigInt(Math.floor(r() * 3000)) * 1000003n));
    const wider = col('float64', Array.from({ length: n }, () => (r() < 0.01 ? null : Math.floor(r() * 1e6) / 7))); // times wide's ranks: past 2^20, so sorted
    const strs = col('string', Array.from({ length: n }, () => (r() < 0.05 ? null : String.fromCharCode(97 + Math.floor(r() * 20)))));
    const bools = col('bool', Array.from({ length: n }, () => (r() < 0.1 ? null : r() < 0.5)));
    check([few, strs, bools], n);
    check([wide, few], n);
    check([wide, wider, few], n);
    check([strs, wide, bools], n);
  });
});

describe('rangeOfKeys', () => {
  test('each key\'s range is the number of splitters at or below it (repeated splitters, nulls, -0 and NaN)', () => {
    const r = rng(8);
    const n = 3000;
    const pool = [0, -0, NaN, 1.5, -2, 7, null];
    const a = col('float64', Array.from({ length: n + 6 }, () => pool[Math.floor(r() * pool.length)]));
    const b = col('string', Array.from({ length: n + 6 }, () => (r() < 0.1 ? null : String.fromCharCode(97 + Math.floor(r() * 5)))));
    // The first 6 rows are the splitters (in key order, one repeated), the rest the keys.
    const order = sortIndicesByKeys([a, b], 6);
    const splitterRows = Int32Array.from([order[0], order[1], order[1], order[3], order[4], order[5]]);
    const splitters = [takeColumn(a, splitterRows), takeColumn(b, splitterRows)];
    const keyRows = Int32Array.from({ length: n }, (_, i) => 6 + i);
    const keys = [takeColumn(a, keyRows), takeColumn(b, keyRows)];
    const got = rangeOfKeys(keys, n, splitters);
    const both = [0, 1].map((c) => takeColumn([a, b][c], Int32Array.from([...splitterRows, ...keyRows])));
    const cmp = rowComparer(both);
    for (let i = 0; i < n; i++) {
      let want = 0;
      for (let s = 0; s < 6; s++) if (cmp(s, 6 + i) <= 0) want++;
      if (got[i] !== want) expect.fail(`key ${i}: range ${got[i]}, want ${want}`);
    }
  });
});

describe('sort order against DuckDB ORDER BY ... NULLS LAST', () => {
  let conn: DuckDBConnection;
  const r = rng(12);
  const n = 3000;
  const floats = Array.from({ length: n }, () => { const u = r(); return u < 0.05 ? null : u < 0.1 ? -0 : u < 0.12 ? Infinity : u < 0.14 ? -Infinity : u < 0.16 ? NaN : Math.round((r() - 0.5) * 2000) / 8; });
  const strs = Array.from({ length: n }, () => (r() < 0.05 ? null : ['', 'a', 'B', 'b', 'é', 'e', 'ü', 'z', '中', 'Ab'][Math.floor(r() * 10)] + (r() < 0.5 ? 'x' : '')));
  const ints = Array.from({ length: n }, () => (r() < 0.05 ? null : BigInt(Math.floor((r() - 0.5) * 2 ** 52)) * 4096n));
  const bools = Array.from({ length: n }, () => (r() < 0.1 ? null : r() < 0.5));
  const batch: Batch = {
    schema: [{ name: 'id', type: 'int64' }, { name: 'f', type: 'float64' }, { name: 's', type: 'string' }, { name: 'i', type: 'int64' }, { name: 'b', type: 'bool' }],
    length: n,
    columns: [col('int64', Array.from({ length: n }, (_, i) => i)), col('float64', floats), col('string', strs), col('int64', ints), col('bool', bools)],
  };
  beforeAll(async () => {
    conn = await duckdb();
    await loadTable(conn, 's', batch);
  });

  const cases: [string, number[]][] = [['f', [1]], ['s', [2]], ['i', [3]], ['b', [4]], ['b, s, f', [4, 2, 1]], ['s, i', [2, 3]], ['i, f', [3, 1]], ['f, b', [1, 4]], ['b, i, s', [4, 3, 2]]];
  for (const [sql, cols] of cases) {
    test(`ORDER BY ${sql}`, async () => {
      const order = sortIndicesByKeys(cols.map((c) => batch.columns[c]), n);
      const keysOf = (c: Column) => Array.from({ length: n }, (_, i) => normal(valueAt(c, i)));
      const ours = cols.map((c) => keysOf(takeColumn(batch.columns[c], order)));
      const ref = await queryRows(conn, `SELECT ${sql} FROM s ORDER BY ${sql.split(', ').map((c) => `${c} NULLS LAST`).join(', ')}, id`);
      expect(ours).toEqual(cols.map((_, k) => ref.map((row) => normal(row[k]))));
      // Stable: ties keep row order (DuckDB's tie-break was id).
      const refIds = await queryRows(conn, `SELECT id FROM s ORDER BY ${sql.split(', ').map((c) => `${c} NULLS LAST`).join(', ')}, id`);
      expect(Array.from(order)).toEqual(refIds.map((row) => Number(row[0])));
    });
  }
});

describe('sort by several columns', () => {
  test('matches the comparison order with more than 2^16 distinct values in a column, and with no rows', () => {
    const r = rng(5);
    const n = 150_000;
    const cols = [
      col('int64', Array.from({ length: n }, () => (r() < 0.01 ? null : BigInt(Math.floor((r() - 0.5) * 1e6))))),
      col('string', Array.from({ length: n }, () => (r() < 0.01 ? null : `k${Math.floor(r() * 100_000)}`))),
      col('float64', Array.from({ length: n }, () => (r() < 0.5 ? -0 : 0))),
      // A small range (ranked by counting), nulls among them, and one of nulls only.
      col('int64', Array.from({ length: n }, () => (r() < 0.02 ? null : BigInt(Math.floor(r() * 5000) - 50)))),
      col('timestamp', Array.from({ length: n }, () => null)),
    ];
    for (const keys of [cols.slice(0, 3), [cols[1], cols[0]], [cols[2], cols[1]], [cols[3], cols[1]], [cols[4], cols[3], cols[0]], [cols[0], cols[3]]]) {
      const cmp = rowComparer(keys);
      const ref = Int32Array.from({ length: n }, (_, i) => i).sort((a, b) => cmp(a, b) || a - b);
      const ours = sortIndicesByKeys(keys, n);
      expect(ours.length).toBe(n);
      expect(ours.findIndex((row, j) => row !== ref[j])).toBe(-1); // the first row out of place (a diff of 150k rows would take minutes to print)
    }
    expect(sortIndicesByKeys([col('string', []), col('int64', [])], 0)).toEqual(new Int32Array(0));
  });
});

/** -0 and 0 sort as equals: compare them as one value. */
function normal(v: unknown): unknown {
  return v === 0 ? 0 : v;
}
