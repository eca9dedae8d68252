// Aggregation below a broadcast join ("eager aggregation"): a groupby over left ⋈ right, where
// right is a small build table, first groups the left rows by their join keys and by the groupby
// keys that are left columns, then maps each of those groups to its build rows and merges the
// groups' states under the query's keys. The joined rows are never built: a chunk of millions of
// rows becomes a few hundred groups before anything is looked up, and on a GPU worker the first
// grouping runs over the CSV chunk on the device.
//
// Applies to inner and left joins (right and outer joins need each build row's match flags) whose
// join keys have one type on both sides, with no nunique (its state lists values, not groups),
// and whose aggregates over right columns are count, sum, mean, min or max: each follows from the
// build row's value and the left group's row count. The result is the partial aggregate the
// joined rows would give (float sums to double-double rounding, like any change of row order).
import { takeColumn, type Column, type DType, type Schema } from '../../batch.js';
import { type AggregateSpec, type AggSpec, aggregateOutputSchema, partialOfKeyedStates, type PartialAggregate } from '../aggregate/index.js';
import { twoProduct, dd } from '../aggregate/double-double.js';
import { float64Column, floatValues, type AggState } from '../aggregate/state.js';
import { hashKeys, nullKeyMask } from '../keys.js';
import type { JoinBuildTable } from './hash-join.js';
import { joinLayout, type JoinSpec } from './spec.js';

export interface JoinAggregate {
  /** The aggregate to run over the left rows: the grouping keys, the query's left-column aggregates, a row count. */
  leftSpec: AggregateSpec;
  /** The left columns leftSpec reads, in left order. */
  leftInput: Schema;
  /** The query's partial from the left rows' partial (leftSpec over leftInput) and the build table. */
  finish(left: PartialAggregate, table: JoinBuildTable): PartialAggregate;
}

/** Where a column of the aggregate's input comes from: a left key of leftSpec, or a right column. */
type Origin = { side: 'left'; column: number } | { side: 'right'; column: number };

const RIGHT_AGGS: readonly AggSpec['func'][] = ['count', 'sum', 'mean', 'min', 'max'];

/** The plan, or null when the join or an aggregate rules it out (see the header). */
export function planJoinAggregate(join: JoinSpec, leftSchema: Schema, rightSchema: Schema, spec: AggregateSpec, input: Schema): JoinAggregate | null {
  if (join.how !== 'inner' && join.how !== 'left') return null;
  const layout = joinLayout(leftSchema, rightSchema, join);
  if (layout.leftKeys.some((l, i) => leftSchema[l].type !== rightSchema[layout.rightKeys[i]].type)) return null;
  const originOf = (name: string): Origin | null => {
    const i = layout.schema.findIndex((f) => f.name === name);
    if (i < 0) return null;
    return i < leftSchema.length ? { side: 'left', column: i } : { side: 'right', column: layout.rightOut[i - leftSchema.length] };
  };
  const typeOf = (name: string): DType => input.find((f) => f.name === name)!.type;

  // Left grouping keys: the join keys, then the query's keys that are left columns.
  const groupBy: number[] = [...layout.leftKeys];
  const keySources: Origin[] = [];
  for (const name of spec.keys) {
    const o = originOf(name);
    if (o === null) return null;
    if (o.side === 'left' && !groupBy.includes(o.column)) groupBy.push(o.column);
    keySources.push(o.side === 'left' ? { side: 'left', column: groupBy.indexOf(o.column) } : o);
  }
  // Left aggregates keep their states; right ones are built from the row count (the last left aggregate).
  const leftAggs: AggSpec[] = [];
  const aggSources: Origin[] = [];
  for (const a of spec.aggs) {
    if (a.func === 'nunique') return null;
    const o = a.column === null ? null : originOf(a.column);
    if (a.column !== null && o === null) return null;
    if (o !== null && o.side === 'right') {
      const type = typeOf(a.column!);
      const numeric = type === 'int64' || type === 'float64';
      if (!RIGHT_AGGS.includes(a.func) || ((a.func === 'sum' || a.func === 'mean') && !numeric)) return null;
      aggSources.push(o);
      continue;
    }
    aggSources.push({ side: 'left', column: leftAggs.length });
    leftAggs.push({ func: a.func, column: o === null ? null : leftSchema[o.column].name, name: `\u0000${leftAggs.length}` });
  }
  const rowCount = leftAggs.length;
  leftAggs.push({ func: 'count', column: null, name: '\u0000rows' });

  const leftSpec: AggregateSpec = { keys: groupBy.map((c) => leftSchema[c].name), aggs: leftAggs, dropna: false };
  const used = new Set([...leftSpec.keys, ...leftAggs.flatMap((a) => (a.column === null ? [] : [a.column]))]);
  const leftInput = leftSchema.filter((f) => used.has(f.name));
  const header = {
    schema: aggregateOutputSchema(input, spec),
    spec,
    aggInputTypes: spec.aggs.map((a) => (a.column === null ? null : typeOf(a.column))),
  };
  const joinKeyCount = layout.leftKeys.length;

  return {
    leftSpec,
    leftInput,
    finish(left, table) {
      // Each left group with each of its build rows (or none: -1, in a left join).
      const joinKeys = left.keys.slice(0, joinKeyCount);
      const ids = table.keys.lookup(joinKeys, hashKeys(joinKeys, left.groups), left.groups, nullKeyMask(joinKeys, left.groups));
      const groups: number[] = [], rights: number[] = [];
      for (let g = 0; g < left.groups; g++) {
        const id = ids[g];
        if (id < 0) {
          if (join.how === 'left') { groups.push(g); rights.push(-1); }
          continue;
        }
        for (let j = table.starts[id]; j < table.starts[id + 1]; j++) { groups.push(g); rights.push(table.rows[j]); }
      }
      let group = Int32Array.from(groups), right = Int32Array.from(rights);
      let keys = keySources.map((k) => (k.side === 'left' ? takeColumn(left.keys[k.column], group) : takeColumn(table.right.columns[k.column], right)));
      const nullKey = spec.dropna ? nullKeyMask(keys, group.length) : null;
      if (nullKey !== null) {
        const kept = Int32Array.from(group.keys()).filter((i) => nullKey[i] === 0);
        group = kept.map((i) => group[i]);
        right = kept.map((i) => right[i]);
        keys = keys.map((c) => takeColumn(c, kept));
      }
      const rowsOfGroup = floatValues(left.states[rowCount].perGroup[0]);
      const counts = Float64Array.from(group, (g) => rowsOfGroup[g]);
      const states = aggSources.map((s, a) => s.side === 'left'
        ? { perGroup: left.states[s.column].perGroup.map((c) => takeColumn(c, group)), pairs: null }
        : rightState(spec.aggs[a].func, table.right.columns[s.column], right, counts));
      return partialOfKeyedStates(header, keys, hashKeys(keys, group.length), group.length, states);
    },
  };
}

/**
 * The state of an aggregate over a right column for rows that repeat build row rows[i] counts[i]
 * times (-1: no build row, a null value), in the layout of that aggregate's accumulator.
 */
function rightState(func: AggSpec['func'], col: Column, rows: Int32Array, counts: Float64Array): AggState {
  const values = takeColumn(col, rows);
  const valid = (i: number) => values.valid === null || values.valid[i] === 1;
  const n = counts.map((c, i) => (valid(i) ? c : 0));
  if (func === 'min' || func === 'max') return { perGroup: [values], pairs: null };
  if (func === 'count') return { perGroup: [float64Column(n)], pairs: null };
  const k = rows.length;
  if (values.type === 'int64') {
    // IntSumAccumulator's [lo, hi, top, n]: sum = top·2^64 + hi·2^32 + lo, lo and hi in [0, 2^32).
    const lo = new Float64Array(k), hi = new Float64Array(k), top = new Float64Array(k);
    for (let i = 0; i < k; i++) {
      if (n[i] === 0) continue;
      const sum = values.values[i] * BigInt(n[i]);
      const t = sum >> 64n, rest = sum - (t << 64n);
      top[i] = Number(t);
      hi[i] = Number(rest >> 32n);
      lo[i] = Number(rest & 0xffffffffn);
    }
    return { perGroup: [lo, hi, top, n].map(float64Column), pairs: null };
  }
  // FloatSumAccumulator's [hi, lo, special, n]: value × count is exact as a double-double.
  const x = floatValues(values);
  const shi = new Float64Array(k), slo = new Float64Array(k), special = new Float64Array(k);
  for (let i = 0; i < k; i++) {
    if (n[i] === 0) continue;
    if (x[i] - x[i] !== 0) { special[i] = x[i]; continue; } // ±Infinity or NaN: a sum of copies is itself
    shi[i] = twoProduct(x[i], n[i]);
    slo[i] = dd.lo;
  }
  return { perGroup: [shi, slo, special, n].map(float64Column), pairs: null };
}
