// Parquet inputs, read in chunks of row groups. The reader (parquet-chunks.ts) with parquet-wasm
// and apache-arrow (~100 ms to import together) loads on the first call, so processes that never
// touch Parquet never pay for them.

import type { Batch, Schema } from '../batch.js';
import type { InputName } from './input-error.js';

/** Row groups read together; `bytes`: their uncompressed size, as the footer gives it. */
export interface ParquetChunk extends InputName { rowGroups: number[]; rows: number; bytes: number }

const parquetChunks = () => import('./parquet-chunks.js');

/** The file's schema and its row groups grouped into chunks of about `blocksize` bytes. */
export async function planParquetChunks(file: InputName, blocksize: number): Promise<{ schema: Schema; chunks: ParquetChunk[] }> {
  return (await parquetChunks()).planParquetChunks(file, blocksize);
}

/** The named columns (in that order) of the chunk's row groups, as one batch; `limit`: only its first rows. */
export async function readParquetChunk(chunk: ParquetChunk, columns: readonly string[], limit?: number): Promise<Batch> {
  return (await parquetChunks()).readParquetChunk(chunk, columns, limit);
}
