// Hash join: the right input is the build side; left batches probe it one at a time.
// Output rows follow left order, each left row's matches in right order; right rows that never
// matched (right/outer joins) are emitted once after all probes by unmatchedRightRows.
import { emptyColumn, takeColumn, type Batch, type Column, type Schema } from '../../batch.js';
import { hashKeys, KeyTable, nullKeyMask } from '../keys.js';
import { castKeyColumn, joinLayout, type JoinLayout, type JoinSpec } from './spec.js';

export class JoinBuildTable {
  readonly right: Batch;
  readonly keys: KeyTable;
  /** Right rows of key id k are rows[starts[k] .. starts[k+1]), ascending. */
  readonly starts: Int32Array;
  readonly rows: Int32Array;

  constructor(right: Batch, readonly spec: JoinSpec) {
    this.right = right;
    const n = right.length;
    const keyCols = spec.rightOn.map((k) => right.columns[right.schema.findIndex((f) => f.name === k)]);
    this.keys = new KeyTable(keyCols.map((c) => c.type));
    // Null keys never match: those rows get no id and wait for unmatchedRightRows.
    const ids = this.keys.insert(keyCols, hashKeys(keyCols, n), n, nullKeyMask(keyCols, n));
    const starts = new Int32Array(this.keys.size + 1);
    for (let i = 0; i < n; i++) if (ids[i] >= 0) starts[ids[i] + 1]++;
    for (let k = 0; k < this.keys.size; k++) starts[k + 1] += starts[k];
    const fill = starts.slice(0, this.keys.size);
    const rows = new Int32Array(starts[this.keys.size]);
    for (let i = 0; i < n; i++) if (ids[i] >= 0) rows[fill[ids[i]]++] = i;
    this.starts = starts;
    this.rows = rows;
  }
}

/** Joins one left batch against the build table; marks the right rows it matched in matchedRight. */
export function probeJoin(table: JoinBuildTable, left: Batch, spec: JoinSpec, matchedRight: Uint8Array): Batch {
  const layout = joinLayout(left.schema, table.right.schema, spec);
  const { leftRows, rightRows } = probeRows(table, left, layout, spec, matchedRight);
  return joinedBatch(table, left, layout, leftRows, rightRows);
}

/** The output rows of probeRows' pairs. When every left row is output once, in order (a lookup
 *  into a dimension table), the left columns are the batch's own, not copies. */
export function joinedBatch(table: JoinBuildTable, left: Batch, layout: JoinLayout, leftRows: Int32Array, rightRows: Int32Array): Batch {
  const leftColumns = isAllRowsInOrder(leftRows, left.length) ? left.columns : left.columns.map((c) => takeColumn(c, leftRows));
  return assemble(layout, leftColumns, table.right, rightRows);
}

function isAllRowsInOrder(rows: Int32Array, length: number): boolean {
  if (rows.length !== length) return false;
  for (let i = 0; i < length; i++) if (rows[i] !== i) return false;
  return true;
}

/**
 * The probe as row pairs: output row o joins left row leftRows[o] with right row rightRows[o]
 * (-1: none, a left/outer join's unmatched left row). Ascending in the left row.
 */
export function probeRows(table: JoinBuildTable, left: Batch, layout: JoinLayout, spec: JoinSpec, matchedRight: Uint8Array): { leftRows: Int32Array; rightRows: Int32Array } {
  const n = left.length;
  const keyCols = layout.leftKeys.map((i) => left.columns[i]);
  const ids = table.keys.lookup(keyCols, hashKeys(keyCols, n), n, nullKeyMask(keyCols, n));
  const keepUnmatched = spec.how === 'left' || spec.how === 'outer';
  const { starts, rows } = table;
  let total = 0;
  for (let i = 0; i < n; i++) {
    const id = ids[i];
    total += id >= 0 ? starts[id + 1] - starts[id] : keepUnmatched ? 1 : 0;
  }
  const leftRows = new Int32Array(total);
  const rightRows = new Int32Array(total);
  let at = 0;
  for (let i = 0; i < n; i++) {
    const id = ids[i];
    if (id < 0) {
      if (keepUnmatched) { leftRows[at] = i; rightRows[at++] = -1; }
      continue;
    }
    for (let j = starts[id]; j < starts[id + 1]; j++) {
      const r = rows[j];
      leftRows[at] = i;
      rightRows[at++] = r;
      matchedRight[r] = 1;
    }
  }
  return { leftRows, rightRows };
}

/** Right rows no probe matched (null keys included), with nulls for the left columns; for right/outer joins. */
export function unmatchedRightRows(table: JoinBuildTable, matchedRight: Uint8Array, leftSchema: Schema, spec: JoinSpec): Batch {
  return unmatchedRightBatch(table, unmatchedRows(matchedRight), leftSchema, spec);
}

/** The right rows no probe matched, ascending. */
export function unmatchedRows(matchedRight: Uint8Array): Int32Array {
  const picked: number[] = [];
  for (let r = 0; r < matchedRight.length; r++) if (matchedRight[r] === 0) picked.push(r);
  return Int32Array.from(picked);
}

/** These right rows with nulls for the left columns (a shared --on key taken from the right). */
export function unmatchedRightBatch(table: JoinBuildTable, rightRows: Int32Array, leftSchema: Schema, spec: JoinSpec): Batch {
  const layout = joinLayout(leftSchema, table.right.schema, spec);
  const noLeft = new Int32Array(rightRows.length).fill(-1);
  const leftCols = leftSchema.map((f, i) => {
    const from = layout.coalesceFrom[i];
    // A shared --on key column takes the right side's key where the left side is missing.
    return from >= 0 ? takeColumn(table.right.columns[from], rightRows) : takeColumn(emptyColumn(f.type), noLeft);
  });
  return assemble(layout, leftCols, table.right, rightRows);
}

function assemble(layout: JoinLayout, leftCols: Column[], right: Batch, rightRows: Int32Array): Batch {
  const columns = [
    ...leftCols.map((c, i) => (layout.coalesceFrom[i] >= 0 ? castKeyColumn(c, layout.schema[i].type) : c)),
    ...layout.rightOut.map((i) => takeColumn(right.columns[i], rightRows)),
  ];
  return { schema: layout.schema, length: rightRows.length, columns };
}
