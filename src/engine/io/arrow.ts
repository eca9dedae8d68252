// Arrow IPC inputs: files (.arrow/.feather) and streams (.arrows), read in chunks of record
// batches. The reader (arrow-ipc.ts) and apache-arrow (tens of ms to import) load on the first
// call, so processes that never touch Arrow data never pay for them.

import type { Batch, Schema } from '../batch.js';
import type { Float64Extents } from './arrow-ipc.js';
import type { InputName } from './input-error.js';

export interface ArrowChunk extends InputName { kind: 'file' | 'stream'; batchIndices: number[]; rows: number }

const arrowIpc = () => import('./arrow-ipc.js');

/** The file's schema and its record batches grouped into chunks of about `blocksize` bytes. */
export async function planArrowChunks(file: InputName, kind: 'file' | 'stream', blocksize: number): Promise<{ schema: Schema; chunks: ArrowChunk[] }> {
  return (await arrowIpc()).planArrowChunks(file, kind, blocksize);
}

/** Where the chunk's float64 columns lie in its file (arrow-ipc.ts), or null when they cannot be read in place. */
export async function float64Extents(chunk: ArrowChunk, columns: readonly string[]): Promise<Float64Extents | null> {
  return (await arrowIpc()).float64Extents(chunk, columns);
}

/** The named columns (in that order) of the chunk's record batches, a batch for each. */
export async function readArrowChunk(chunk: ArrowChunk, columns: readonly string[]): Promise<Batch[]> {
  return (await arrowIpc()).readArrowChunk(chunk, columns);
}
