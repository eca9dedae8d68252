// A whole CSV file into one batch, through the same chunked path the executor uses.
// For small inputs, tests and tools; large inputs go through the executor chunk by chunk.
import { tmpdir } from 'node:os';
import { concatBatches, emptyBatch, type Batch } from '../../batch.js';
import { DEFAULT_CSV_OPTIONS, type CsvOptions } from './options.js';
import { materializeCsvInput } from './gzip.js';
import { inferCsvLayout, type CsvLayout } from './layout.js';
import { planCsvChunks } from './chunks.js';
import { readCsvChunk } from './read-chunk.js';

export interface ReadCsvFileOptions {
  blocksize?: number;
  /** Columns to keep, in this order; default all. */
  columns?: readonly string[];
  tmpDir?: string;
  onWarning?: (msg: string) => void;
}

export async function readCsvFile(path: string, opts: Partial<CsvOptions> = {}, how: ReadCsvFileOptions = {}):
    Promise<{ layout: CsvLayout; batch: Batch }> {
  const options: CsvOptions = { ...DEFAULT_CSV_OPTIONS, ...opts };
  const plain = await materializeCsvInput(path, path, how.tmpDir ?? tmpdir());
  const layout = await inferCsvLayout(plain, path, options);
  const columns = how.columns ?? layout.schema.map((f) => f.name);
  const chunks = await planCsvChunks(layout, options, how.blocksize ?? 64 << 20);
  const batches = chunks.map((chunk) => readCsvChunk(chunk, layout, options, columns, how.onWarning));
  const byName = new Map(layout.schema.map((f) => [f.name, f] as const));
  const schema = columns.map((name) => byName.get(name)!);
  return { layout, batch: batches.length === 0 ? emptyBatch(schema) : concatBatches(schema, batches) };
}
