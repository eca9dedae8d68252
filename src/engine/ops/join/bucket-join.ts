// A partitioned join's rows in the broadcast join's order. A broadcast join emits the left rows in
// order, each with its matches in right order, then the right rows no left row matched, in right
// order. A partitioned join must give the same bytes, whatever its bucket count (which
// --memory-limit decides), so every shuffled row carries its origin: the ordinal of the fragment
// it came from in its side's stream (`seq`) and its position among that fragment's rows (`pos`).
// A bucket's join keeps the origin of the row that places each output row (its left row; for an
// unmatched right row, that row) and cuts its output by fragment. The pieces of one fragment from
// all buckets, put in position order, are that fragment's rows as a broadcast join emits them:
// the rows of one left row all come from one bucket (its key's), already in right order.

import { concatBatches, sliceBatch, takeBatch, type Batch, type Schema } from '../../batch.js';
import { JoinBuildTable, joinedBatch, probeRows, unmatchedRightBatch, unmatchedRows } from './hash-join.js';
import { joinLayout, type JoinSpec } from './spec.js';

/** A bucket's rows of one side, in stream order, each with its fragment ordinal and position. */
export interface TaggedRows { batch: Batch; seq: Int32Array; pos: Int32Array }

/** Output rows of one bucket placed by one fragment of one side: `pos` is each row's placing row's position. */
export interface JoinedPiece { side: 'left' | 'right'; seq: number; batch: Batch; pos: Int32Array }

/** Joins one bucket pair; the output cut into pieces by the fragment of each row's placing row. */
export function joinBucket(left: TaggedRows, right: TaggedRows, spec: JoinSpec): JoinedPiece[] {
  const table = new JoinBuildTable(right.batch, spec);
  const layout = joinLayout(left.batch.schema, right.batch.schema, spec);
  const matched = new Uint8Array(right.batch.length);
  const { leftRows, rightRows } = probeRows(table, left.batch, layout, spec, matched);
  const pieces = cutBySeq('left', joinedBatch(table, left.batch, layout, leftRows, rightRows), leftRows, left);
  if (spec.how === 'right' || spec.how === 'outer') {
    const unmatched = unmatchedRows(matched);
    pieces.push(...cutBySeq('right', unmatchedRightBatch(table, unmatched, left.batch.schema, spec), unmatched, right));
  }
  return pieces;
}

/** `batch`'s row o was placed by row `placing[o]` of `from` (ascending, so seq never decreases). */
function cutBySeq(side: JoinedPiece['side'], batch: Batch, placing: Int32Array, from: TaggedRows): JoinedPiece[] {
  const pieces: JoinedPiece[] = [];
  let start = 0;
  while (start < batch.length) {
    const seq = from.seq[placing[start]];
    let end = start + 1;
    while (end < batch.length && from.seq[placing[end]] === seq) end++;
    const pos = new Int32Array(end - start);
    for (let o = start; o < end; o++) pos[o - start] = from.pos[placing[o]];
    pieces.push({ side, seq, batch: sliceBatch(batch, start, end), pos });
    start = end;
  }
  return pieces;
}

/**
 * One fragment's pieces from every bucket as one batch in position order. Rows of equal position
 * keep their order (a counting sort, stable): they are one left row's matches, from one piece.
 */
export function inPositionOrder(schema: Schema, pieces: readonly { batch: Batch; pos: Int32Array }[]): Batch {
  const all = concatBatches(schema, pieces.map((p) => p.batch));
  if (pieces.length <= 1) return all;
  let top = 0;
  for (const p of pieces) for (const v of p.pos) if (v > top) top = v;
  const starts = new Int32Array(top + 2);
  for (const p of pieces) for (const v of p.pos) starts[v + 1]++;
  for (let v = 0; v <= top; v++) starts[v + 1] += starts[v];
  const order = new Int32Array(all.length);
  let row = 0;
  for (const p of pieces) for (const v of p.pos) order[starts[v]++] = row++;
  return takeBatch(all, order);
}
