// Aggregation below a broadcast join (ops/join/join-aggregate.ts) against DuckDB's groupby over
// the join, and against the same partial aggregate over the joined rows: inner and left joins,
// null and duplicate keys on both sides, keys from either side, aggregates over left and right
// columns, dropna both ways, left rows aggregated in several chunks.
import type { DuckDBConnection } from '@duckdb/node-api';
import { beforeAll, describe, expect, test } from 'vitest';
import { columnFromValues, selectColumns, sliceBatch, type Batch, type DType } from '../src/engine/batch.js';
import { finalizeAggregate, mergePartials, PartialAggregator, parseAggList, type AggregateSpec, type PartialAggregate } from '../src/engine/ops/aggregate/index.js';
import { joinOutputSchema, JoinBuildTable, planJoinAggregate, probeJoin, type JoinHow, type JoinSpec } from '../src/engine/ops/join/index.js';
import { batchRows, duckdb, expectRowsClose, loadTable, queryRows, rng } from './ops-reference.js';

function makeBatch(fields: [string, DType, unknown[]][]): Batch {
  return {
    schema: fields.map(([name, type]) => ({ name, type })),
    length: fields[0][2].length,
    columns: fields.map(([, type, values]) => columnFromValues(type, values)),
  };
}

function sides(seed: number, leftRows: number, rightRows: number) {
  const r = rng(seed);
  const maybe = <T>(f: () => T, nulls = 0.05) => () => (r() < nulls ? null : f());
  const key = maybe(() => Math.floor(r() * 40));
  const left = makeBatch([
    ['k', 'int64', Array.from({ length: leftRows }, key)],
    ['t', 'string', Array.from({ length: leftRows }, maybe(() => ['x', 'y', 'zé'][Math.floor(r() * 3)]))],
    ['n', 'int64', Array.from({ length: leftRows }, maybe(() => Math.floor(r() * 2e6) - 1e6, 0.1))],
    ['v', 'float64', Array.from({ length: leftRows }, maybe(() => Math.floor(r() * 1e4) / 8, 0.1))],
  ]);
  const right = makeBatch([
    ['k', 'int64', Array.from({ length: rightRows }, key)],
    ['region', 'string', Array.from({ length: rightRows }, maybe(() => `r${Math.floor(r() * 6)}`))],
    ['e', 'float64', Array.from({ length: rightRows }, maybe(() => Math.floor(r() * 1e5) / 4))],
    ['m', 'int64', Array.from({ length: rightRows }, maybe(() => Math.floor(r() * 2e9) - 1e9))],
  ]);
  return { left, right };
}

/** The query's partial over the joined rows, the way the executor ran it before. */
function overJoinedRows(left: Batch, table: JoinBuildTable, join: JoinSpec, spec: AggregateSpec): PartialAggregate {
  const joined = probeJoin(table, left, join, new Uint8Array(table.right.length));
  const agg = new PartialAggregator(joined.schema, spec);
  agg.add(joined);
  return agg.finish();
}

/** Aggregation below the join, the left rows in `chunks` pieces (as partitions), partials merged in order. */
function belowJoin(left: Batch, table: JoinBuildTable, join: JoinSpec, spec: AggregateSpec, chunks: number): PartialAggregate {
  const input = joinOutputSchema(left.schema, table.right.schema, join);
  const plan = planJoinAggregate(join, left.schema, table.right.schema, spec, input)!;
  expect(plan).not.toBeNull();
  let merged: PartialAggregate | null = null;
  const step = Math.ceil(left.length / chunks);
  for (let s = 0; s < left.length; s += step) {
    const part = selectColumns(sliceBatch(left, s, Math.min(left.length, s + step)), plan.leftInput.map((f) => f.name));
    const agg = new PartialAggregator(plan.leftInput, plan.leftSpec);
    agg.add(part);
    const p = plan.finish(agg.finish(), table);
    merged = merged === null ? p : mergePartials(merged, p);
  }
  return merged!;
}

const AGGS = 'count(),count(e),sum(n),mean(n),sum(v),mean(v),min(v),max(n),var(v),sum(e),mean(e),min(region),max(e),sum(m),mean(m),min(m),count(region)';

const CASES: { name: string; keys: string[]; join: Omit<JoinSpec, 'how'> }[] = [
  { name: 'key from the right side', keys: ['region'], join: { leftOn: ['k'], rightOn: ['k'], suffixes: ['_x', '_y'] } },
  { name: 'keys from both sides', keys: ['t', 'region'], join: { leftOn: ['k'], rightOn: ['k'], suffixes: ['_x', '_y'] } },
  { name: 'the shared join key', keys: ['k'], join: { leftOn: ['k'], rightOn: ['k'], suffixes: ['_x', '_y'] } },
  { name: 'left_on / right_on keys, the right one grouped', keys: ['k_y', 't'], join: { leftOn: ['k'], rightOn: ['k'], suffixes: ['_x', '_y'] } },
];

describe('aggregation below a broadcast join', () => {
  let conn: DuckDBConnection;
  beforeAll(async () => { conn = await duckdb(); });

  for (const how of ['inner', 'left'] as JoinHow[]) {
    for (const c of CASES) {
      for (const dropna of [true, false]) {
        test(`${how} join, ${c.name}, dropna ${dropna}`, async () => {
          const { left, right } = sides(c.keys.length * 7 + (how === 'left' ? 1 : 0), 3000, 90);
          // left_on/right_on with the same names would coalesce; rename the right key to get both columns.
          const distinct = c.keys.includes('k_y');
          const rightSide = distinct ? { ...right, schema: right.schema.map((f) => (f.name === 'k' ? { ...f, name: 'k_y' } : f)) } : right;
          const join: JoinSpec = { ...c.join, rightOn: distinct ? ['k_y'] : c.join.rightOn, how };
          const spec: AggregateSpec = { keys: c.keys, aggs: parseAggList(AGGS), dropna };
          const table = new JoinBuildTable(rightSide, join);

          const ours = finalizeAggregate(belowJoin(left, table, join, spec, 3));
          const viaRows = finalizeAggregate(overJoinedRows(left, table, join, spec));
          expectRowsClose(batchRows(ours), batchRows(viaRows), 1e-12);

          await loadTable(conn, 'l', left);
          await loadTable(conn, 'r', rightSide);
          const on = join.leftOn.map((k, i) => `l.${k} = r.${join.rightOn[i]}`).join(' AND ');
          const col = (name: string) => (name === 'k' || name === 'k_y' ? (name === 'k' ? 'l.k' : 'r.k_y') : name);
          const keys = c.keys.map(col).join(', ');
          const where = dropna ? `WHERE ${c.keys.map((k) => `${col(k)} IS NOT NULL`).join(' AND ')}` : '';
          const sql = `SELECT ${keys}, count(*), count(e), sum(n), avg(n), sum(v), avg(v), min(v), max(n), var_samp(v), sum(e), avg(e), min(region), max(e), sum(m), avg(m), min(m), count(region)
            FROM l ${how === 'inner' ? 'JOIN' : 'LEFT JOIN'} r ON ${on} ${where} GROUP BY ${keys} ORDER BY ${c.keys.map((k) => `${col(k)} NULLS LAST`).join(', ')}`;
          expectRowsClose(batchRows(ours), await queryRows(conn, sql), 1e-9);
        });
      }
    }
  }

  test('joins and aggregates it does not cover are left to the joined rows', () => {
    const { left, right } = sides(3, 10, 10);
    const input = (join: JoinSpec) => joinOutputSchema(left.schema, right.schema, join);
    const inner: JoinSpec = { leftOn: ['k'], rightOn: ['k'], how: 'inner', suffixes: ['_x', '_y'] };
    const spec = (aggs: string): AggregateSpec => ({ keys: ['region'], aggs: parseAggList(aggs), dropna: true });
    expect(planJoinAggregate(inner, left.schema, right.schema, spec('sum(n)'), input(inner))).not.toBeNull();
    for (const how of ['right', 'outer'] as JoinHow[]) {
      expect(planJoinAggregate({ ...inner, how }, left.schema, right.schema, spec('sum(n)'), input({ ...inner, how }))).toBeNull();
    }
    expect(planJoinAggregate(inner, left.schema, right.schema, spec('nunique(t)'), input(inner))).toBeNull();
    expect(planJoinAggregate(inner, left.schema, right.schema, spec('var(e)'), input(inner))).toBeNull();
    const floatKey = { ...right, schema: right.schema.map((f) => (f.name === 'k' ? { ...f, type: 'float64' as DType } : f)) };
    expect(planJoinAggregate(inner, left.schema, floatKey.schema, spec('sum(n)'), joinOutputSchema(left.schema, floatKey.schema, inner))).toBeNull();
  });
});
