// What every output writer offers, whatever its format and destination.

import type { Batch } from '../../batch.js';

export type OutputFormat = 'csv' | 'jsonl' | 'arrow' | 'parquet' | 'table';

export interface BatchWriter {
  write(batch: Batch): Promise<void>;
  /** Completes the output; for files, the destination appears only now. */
  close(): Promise<void>;
  /** Gives up; for files, nothing is left at the destination or in its directory. */
  abort(): Promise<void>;
}
