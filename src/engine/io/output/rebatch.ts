// Batches of a fixed number of rows for the binary output formats, whatever the partitions were.
//
// Why: Arrow IPC writes each batch as a record batch, and Parquet's pages and row groups follow
// the batches it is given; partitions follow --blocksize and, by default, the number of workers.
// So `read-csv --workers 1` and `--workers 2` wrote different .arrow and .parquet bytes, against
// the contract (the same output bytes whatever --workers and --blocksize). Cut here, the
// boundaries depend on the rows alone.

import { concatBatches, sliceBatch, type Batch } from '../../batch.js';
import type { BatchWriter } from './types.js';

/** Rows per batch handed to the Arrow and Parquet encoders. */
export const OUTPUT_BATCH_ROWS = 1 << 16;

/** `writer` given batches of exactly `rows` rows (the last one fewer), in order. */
export function rebatched(writer: BatchWriter, rows = OUTPUT_BATCH_ROWS): BatchWriter {
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
        parts.push(sliceBatch(head, 0, take));
        pending[0] = sliceBatch(head, take, head.length);
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
