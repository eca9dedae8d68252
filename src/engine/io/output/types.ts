// What every output writer offers, whatever its format and destination.

import type { Batch } from '../../batch.js';

export type OutputFormat = 'csv' | 'jsonl' | 'arrow' | 'parquet' | 'table';

/** Formats whose rows can be encoded anywhere (in the workers, in parallel) and written as bytes. */
export type TextFormat = 'csv' | 'jsonl';

export interface BatchWriter {
  write(batch: Batch): Promise<void>;
  /** Text formats: rows already encoded by `encodeRows` (in a worker), appended as they are. */
  writeEncoded?(rows: Uint8Array): Promise<void>;
  /** Completes the output; for files, the destination appears only now. */
  close(): Promise<void>;
  /** Gives up; for files, nothing is left at the destination or in its directory. */
  abort(): Promise<void>;
}

/**
 * Where a Parquet writer has its row groups encoded: `encode` turns one row group's rows into a
 * whole Parquet file (on the run's workers), `concurrency` of them at once.
 */
export interface PartEncoding { encode(rows: Batch): Promise<Uint8Array>; concurrency: number }
