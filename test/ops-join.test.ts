// merge operators against DuckDB: every join type, duplicate and null keys, multi-column and
// mixed int64/float64 keys, broadcast (probe in batches) and partitioned execution.
import type { DuckDBConnection } from '@duckdb/node-api';
import { beforeAll, describe, expect, test } from 'vitest';
import { columnFromValues, concatBatches, sliceBatch, type Batch, type DType, type Schema } from '../src/engine/batch.js';
import { UsageError } from '../src/engine/errors.js';
import { hashPartition, inPositionOrder, joinBucket, joinOutputSchema, JoinBuildTable, probeJoin, unmatchedRightRows, type JoinHow, type HashPart, type JoinSpec, type TaggedRows } from '../src/engine/ops/join/index.js';
import { batchRows, duckdb, expectRowsClose, loadTable, queryRows, rng } from './ops-reference.js';

function makeBatch(fields: [string, DType, unknown[]][]): Batch {
  return {
    schema: fields.map(([name, type]) => ({ name, type })),
    length: fields[0][2].length,
    columns: fields.map(([, type, values]) => columnFromValues(type, values)),
  };
}

/** Broadcast join: right side built once, left probed in blocks, unmatched right rows last. */
function broadcastJoin(left: Batch, right: Batch, spec: JoinSpec, blockRows: number): Batch {
  const table = new JoinBuildTable(right, spec);
  const matched = new Uint8Array(right.length);
  const out: Batch[] = [];
  for (let s = 0; s < left.length; s += blockRows) out.push(probeJoin(table, sliceBatch(left, s, Math.min(left.length, s + blockRows)), spec, matched));
  if (spec.how === 'right' || spec.how === 'outer') out.push(unmatchedRightRows(table, matched, left.schema, spec));
  return concatBatches(joinOutputSchema(left.schema, right.schema, spec), out);
}

/**
 * Partitioned join as the executor runs it: each side cut into fragments of `fragmentRows`, each
 * fragment hash-partitioned, bucket pairs joined, then every fragment's pieces put back in order.
 */
function partitionedJoin(left: Batch, right: Batch, spec: JoinSpec, parts: number, fragmentRows = 97): Batch {
  const ints = (arrays: Int32Array[]) => {
    const out = new Int32Array(arrays.reduce((s, a) => s + a.length, 0));
    arrays.reduce((at, a) => (out.set(a, at), at + a.length), 0);
    return out;
  };
  const shuffle = (side: Batch, keys: string[]): TaggedRows[] => {
    const perBucket: TaggedRows[][] = Array.from({ length: parts }, () => []);
    for (let start = 0, seq = 0; start < side.length; start += fragmentRows, seq++) {
      const fragment = sliceBatch(side, start, Math.min(side.length, start + fragmentRows));
      hashPartition(fragment, keys, parts).forEach((p, b) => perBucket[b].push({ batch: p.batch, seq: new Int32Array(p.rows.length).fill(seq), pos: p.rows }));
    }
    return perBucket.map((list) => ({ batch: concatBatches(side.schema, list.map((t) => t.batch)), seq: ints(list.map((t) => t.seq)), pos: ints(list.map((t) => t.pos)) }));
  };
  const l = shuffle(left, spec.leftOn), r = shuffle(right, spec.rightOn);
  const pieces = l.flatMap((bucket, b) => joinBucket(bucket, r[b], spec));
  const schema = joinOutputSchema(left.schema, right.schema, spec);
  const out: Batch[] = [];
  for (const side of ['left', 'right'] as const) {
    const seqs = [...new Set(pieces.filter((p) => p.side === side).map((p) => p.seq))].sort((a, b) => a - b);
    for (const seq of seqs) out.push(inPositionOrder(schema, pieces.filter((p) => p.side === side && p.seq === seq)));
  }
  return concatBatches(schema, out);
}

function sides(seed: number, leftRows: number, rightRows: number, rightKeyType: DType = 'int64') {
  const r = rng(seed);
  const key = () => (r() < 0.05 ? null : Math.floor(r() * 300)); // many duplicates, some nulls
  const tag = () => (r() < 0.05 ? null : ['x', 'y', 'zé'][Math.floor(r() * 3)]);
  const left = makeBatch([
    ['lid', 'int64', Array.from({ length: leftRows }, (_, i) => i)],
    ['k', 'int64', Array.from({ length: leftRows }, key)],
    ['t', 'string', Array.from({ length: leftRows }, tag)],
    ['v', 'float64', Array.from({ length: leftRows }, () => (r() < 0.1 ? null : r()))],
  ]);
  const right = makeBatch([
    ['rid', 'int64', Array.from({ length: rightRows }, (_, i) => i)],
    ['k', rightKeyType, Array.from({ length: rightRows }, key)],
    ['t', 'string', Array.from({ length: rightRows }, tag)],
    ['v', 'string', Array.from({ length: rightRows }, () => (r() < 0.1 ? null : `r${Math.floor(r() * 1e6)}`))],
  ]);
  return { left, right };
}

const SQL_JOIN: Record<JoinHow, string> = { inner: 'INNER JOIN', left: 'LEFT JOIN', right: 'RIGHT JOIN', outer: 'FULL OUTER JOIN' };
const HOWS: JoinHow[] = ['inner', 'left', 'right', 'outer'];

describe('joinOutputSchema', () => {
  const l: Schema = [{ name: 'id', type: 'int64' }, { name: 'a', type: 'string' }, { name: 'x', type: 'float64' }];
  const r: Schema = [{ name: 'id', type: 'float64' }, { name: 'x', type: 'int64' }, { name: 'b', type: 'bool' }];
  test('--on keys once, suffixes on other overlapping names, mixed numeric keys as float64', () => {
    expect(joinOutputSchema(l, r, { leftOn: ['id'], rightOn: ['id'], how: 'inner', suffixes: ['_x', '_y'] })).toEqual([
      { name: 'id', type: 'float64' }, { name: 'a', type: 'string' }, { name: 'x_x', type: 'float64' }, { name: 'x_y', type: 'int64' }, { name: 'b', type: 'bool' }]);
    expect(joinOutputSchema(l, r, { leftOn: ['x'], rightOn: ['x'], how: 'left', suffixes: ['_l', '_r'] }).map((f) => f.name))
      .toEqual(['id_l', 'a', 'x', 'id_r', 'b']);
    expect(joinOutputSchema(l, r, { leftOn: ['id'], rightOn: ['x'], how: 'outer', suffixes: ['_l', '_r'] }).map((f) => f.name))
      .toEqual(['id_l', 'a', 'x_l', 'id_r', 'x_r', 'b']);
  });
  test('errors', () => {
    expect(() => joinOutputSchema(l, r, { leftOn: ['ix'], rightOn: ['id'], how: 'inner', suffixes: ['_x', '_y'] })).toThrow(/did you mean 'id'/);
    expect(() => joinOutputSchema(l, r, { leftOn: ['a'], rightOn: ['x'], how: 'inner', suffixes: ['_x', '_y'] })).toThrow(UsageError);
    expect(() => joinOutputSchema(l, r, { leftOn: ['id', 'a'], rightOn: ['id'], how: 'inner', suffixes: ['_x', '_y'] })).toThrow(UsageError);
    expect(() => joinOutputSchema(l, r, { leftOn: ['id'], rightOn: ['id'], how: 'inner', suffixes: ['', ''] })).toThrow(UsageError);
  });
});

describe('joins against DuckDB', () => {
  let conn: DuckDBConnection;
  const { left, right } = sides(5, 3000, 2000);
  const mixed = sides(6, 1500, 1000, 'float64');
  beforeAll(async () => {
    conn = await duckdb();
    await loadTable(conn, 'l', left);
    await loadTable(conn, 'r', right);
    await loadTable(conn, 'ml', mixed.left);
    await loadTable(conn, 'mr', mixed.right);
  });

  for (const how of HOWS) {
    test(`${how} join on k (duplicates, null keys), broadcast and partitioned`, async () => {
      const spec: JoinSpec = { leftOn: ['k'], rightOn: ['k'], how, suffixes: ['_x', '_y'] };
      const ref = await queryRows(conn, `SELECT l.lid, COALESCE(l.k, r.k) AS k, l.t AS t_x, l.v AS v_x, r.rid, r.t AS t_y, r.v AS v_y
        FROM l ${SQL_JOIN[how]} r ON l.k = r.k ORDER BY l.lid NULLS LAST, r.rid NULLS LAST`);
      const ours = broadcastJoin(left, right, spec, 777);
      expect(ours.schema.map((f) => f.name)).toEqual(['lid', 'k', 't_x', 'v_x', 'rid', 't_y', 'v_y']);
      expectRowsClose(batchRows(ours), ref);
      // The broadcast join's order exactly, whatever the bucket count.
      for (const parts of [1, 2, 5, 16]) expect(batchRows(partitionedJoin(left, right, spec, parts))).toEqual(batchRows(ours));
    });

    test(`${how} join on multi-column keys (k, t) with left-on/right-on names`, async () => {
      const spec: JoinSpec = { leftOn: ['k', 't'], rightOn: ['k', 't'], how, suffixes: ['_l', '_r'] };
      const ref = await queryRows(conn, `SELECT l.lid, COALESCE(l.k, r.k), COALESCE(l.t, r.t), l.v, r.rid, r.v
        FROM l ${SQL_JOIN[how]} r ON l.k = r.k AND l.t = r.t ORDER BY l.lid NULLS LAST, r.rid NULLS LAST`);
      expectRowsClose(batchRows(broadcastJoin(left, right, spec, 1000)), ref);
      const diff: JoinSpec = { leftOn: ['t', 'lid'], rightOn: ['t', 'rid'], how, suffixes: ['_l', '_r'] };
      const ref2 = await queryRows(conn, `SELECT l.*, r.* FROM l ${SQL_JOIN[how]} r ON l.t = r.t AND l.lid = r.rid ORDER BY l.lid NULLS LAST, r.rid NULLS LAST`);
      const ours2 = broadcastJoin(left, right, diff, 500);
      expect(ours2.schema.map((f) => f.name)).toEqual(['lid', 'k_l', 't_l', 'v_l', 'rid', 'k_r', 't_r', 'v_r']);
      expectRowsClose(batchRows(ours2), ref2);
    });
  }

  test('int64 left key against float64 right key compares as float64 (broadcast and partitioned)', async () => {
    for (const how of HOWS) {
      const spec: JoinSpec = { leftOn: ['k'], rightOn: ['k'], how, suffixes: ['_x', '_y'] };
      const ref = await queryRows(conn, `SELECT ml.lid, COALESCE(ml.k::DOUBLE, mr.k), ml.t, ml.v, mr.rid, mr.t, mr.v
        FROM ml ${SQL_JOIN[how]} mr ON ml.k = mr.k ORDER BY ml.lid NULLS LAST, mr.rid NULLS LAST`);
      expectRowsClose(batchRows(broadcastJoin(mixed.left, mixed.right, spec, 400)), ref);
      expectRowsClose(batchRows(partitionedJoin(mixed.left, mixed.right, spec, 3, 50)), ref);
    }
  });
});

describe('hashPartition', () => {
  test('keeps every row once, in order within a bucket, and equal numbers land together', () => {
    const ints = makeBatch([['k', 'int64', [0, 1, -2, 3, null, 2 ** 40, 5, 1]], ['row', 'int64', [0, 1, 2, 3, 4, 5, 6, 7]]]);
    const floats = makeBatch([['k', 'float64', [-0, 1, -2, 3, null, 2 ** 40, 5.5, 1]]]);
    const ip = hashPartition(ints, ['k'], 4), fp = hashPartition(floats, ['k'], 4);
    expect(ip.reduce((s, p) => s + p.batch.length, 0)).toBe(8);
    const bucketOf = (parts: HashPart[], v: unknown) => parts.findIndex((p) => batchRows(p.batch).some((row) => row[0] === v || (typeof row[0] === 'bigint' && Number(row[0]) === v)));
    for (const v of [0, 1, -2, 3, 2 ** 40]) expect(bucketOf(ip, v)).toBe(bucketOf(fp, v));
    for (const p of ip) {
      const rows = batchRows(p.batch).map((r) => Number(r[1]));
      expect(rows).toEqual([...rows].sort((a, c) => a - c));
      expect([...p.rows]).toEqual(rows); // each row's position in the batch
    }
  });
});
