// Batches of a fixed number of rows for Arrow output, whatever the partitions were.
//
// Why: Arrow IPC writes each batch as a record batch (and Parquet's pages and row groups follow
// the batches its encoder is given; parquet-writer.ts cuts those itself); partitions follow
// --blocksize and, by default, the number of workers. So `read-csv --workers 1` and `--workers 2`
// wrote different .arrow and .parquet bytes, against the contract (the same output bytes whatever
// --workers and --blocksize). Cut by rows, the boundaries depend on the rows alone.

import { concatBatches, type Batch, type Column } from '../../batch.js';
import type { BatchWriter } from './types.js';

/** Rows per record batch of an Arrow output (about 10-30 MB of a typical table's columns). */
export const ARROW_BATCH_ROWS = 1 << 18;

/**
 * Rows [start, end) of a column as views of its arrays, not copies: the encoders read a batch
 * before the next write, and nothing writes into a result's arrays (copying every row of a 1 GB
 * .arrow output in the parent made it a third slower on the H200 machine).
 */
function columnView(col: Column, start: number, end: number): Column {
  const valid = col.valid === null ? null : col.valid.subarray(start, end);
  if (col.type !== 'string') return { type: col.type, values: col.values.subarray(start, end), valid } as Column;
  return { type: 'string', offsets: col.offsets.subarray(start, end + 1), data: col.data, valid };
}

function batchView(batch: Batch, start: number, end: number): Batch {
  return { schema: batch.schema, length: end - start, columns: batch.columns.map((c) => columnView(c, start, end)) };
}

/** `writer` given batches of exactly `rows` rows (the last one fewer), in order. */
export function rebatched(writer: BatchWriter, rows: number): BatchWriter {
  let pending: Batch[] = [];
  let pendingRows = 0;
  /** Writes the first `n` pending rows as one batch. */
  const writeRows = async (n: number) => {
    const parts: Batch[] = [];
    let taken = 0;
    while (taken < n) {
      const head = pending[0];
      const take = Math.min(head.length, n - taken);
      if (take === head.length) {
        parts.push(head);
        pending.shift();
      } else {
        parts.push(batchView(head, 0, take));
        pending[0] = batchView(head, take, head.length);
      }
      taken += take;
    }
    pendingRows -= n;
    await writer.write(parts.length === 1 ? parts[0] : concatBatches(parts[0].schema, parts));
  };
  return {
    write: async (batch) => {
      if (batch.length === 0) return;
      pending.push(batch);
      pendingRows += batch.length;
      while (pendingRows >= rows) await writeRows(rows);
    },
    close: async () => {
      if (pendingRows > 0) await writeRows(pendingRows);
      await writer.close();
    },
    abort: async () => {
      pending = [];
      await writer.abort();
    },
  };
}
