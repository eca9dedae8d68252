// Chunked reading of Arrow IPC files (.arrow/.feather) and streams (.arrows): planning reads the
// footer and batch headers only; a chunk reads its own record batches. Loaded through arrow.ts.

import type * as Arrow from 'apache-arrow';
import { arrow } from './apache-arrow.js';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Batch, Schema } from '../batch.js';
import { DataError } from '../errors.js';
import type { ArrowChunk } from './arrow.js';
import { arrowSchemaToSchema, arrowTableToBatches } from './arrow-batch.js';
import { inputError } from './input-error.js';

interface BatchInfo { rows: number; bytes: number }

function asDataError(err: unknown, path: string): Error {
  return inputError(err, path, 'Arrow IPC');
}

/** Groups consecutive batches into chunks of about `blocksize` bytes (a chunk holds at least one batch). */
function groupIntoChunks(path: string, kind: 'file' | 'stream', infos: BatchInfo[], blocksize: number): ArrowChunk[] {
  const chunks: ArrowChunk[] = [];
  let cur: ArrowChunk | null = null;
  let bytes = 0;
  infos.forEach((info, i) => {
    if (cur === null || (bytes + info.bytes > blocksize && cur.batchIndices.length > 0)) {
      cur = { path, kind, batchIndices: [], rows: 0 };
      chunks.push(cur);
      bytes = 0;
    }
    cur.batchIndices.push(i);
    cur.rows += info.rows;
    bytes += info.bytes;
  });
  return chunks;
}

/** Row count and body size of each record batch, read from the file footer and batch headers only. */
async function fileBatchInfos(path: string): Promise<{ schema: Arrow.Schema; infos: BatchInfo[] }> {
  const handle = await open(path, 'r');
  try {
    const reader = await arrow.RecordBatchReader.from(handle);
    await reader.open();
    if (!reader.isFile()) throw new DataError('not an Arrow IPC file (no footer); use the .arrows extension for IPC streams', { file: path });
    const infos: BatchInfo[] = [];
    for (const block of reader.footer!.recordBatches()) {
      const meta = new Uint8Array(block.metaDataLength);
      await handle.read(meta, 0, meta.length, block.offset);
      // The metadata block is: continuation marker (0xFFFFFFFF), int32 length, flatbuffer message.
      const start = new DataView(meta.buffer).getInt32(0, true) === -1 ? 8 : 4;
      const msg = arrow.Message.decode(meta.subarray(start));
      const header = msg.header() as { length: number };
      infos.push({ rows: Number(header.length), bytes: Number(block.bodyLength) });
    }
    const schema = reader.schema;
    await reader.cancel();
    return { schema, infos };
  } finally {
    await handle.close();
  }
}

async function streamBatchInfos(path: string): Promise<{ schema: Arrow.Schema; infos: BatchInfo[] }> {
  const reader = await arrow.RecordBatchReader.from(createReadStream(path));
  await reader.open();
  const schema = reader.schema; // read before iterating: the reader resets itself at the end
  const infos: BatchInfo[] = [];
  for await (const rb of reader) infos.push({ rows: rb.numRows, bytes: rb.data.byteLength });
  return { schema, infos };
}

export async function planArrowChunks(path: string, kind: 'file' | 'stream', blocksize: number): Promise<{ schema: Schema; chunks: ArrowChunk[] }> {
  let got: { schema: Arrow.Schema; infos: BatchInfo[] };
  try {
    got = kind === 'file' ? await fileBatchInfos(path) : await streamBatchInfos(path);
  } catch (err) {
    throw asDataError(err, path);
  }
  if (!got.schema) throw new DataError('empty or truncated Arrow IPC data (no schema)', { file: path });
  return { schema: arrowSchemaToSchema(got.schema, path), chunks: groupIntoChunks(path, kind, got.infos, blocksize) };
}

async function readFileBatches(chunk: ArrowChunk): Promise<Arrow.RecordBatch[]> {
  const handle = await open(chunk.path, 'r');
  try {
    const reader = await arrow.RecordBatchReader.from(handle);
    await reader.open();
    const out: Arrow.RecordBatch[] = [];
    for (const i of chunk.batchIndices) {
      const rb = await (reader as Arrow.AsyncRecordBatchFileReader).readRecordBatch(i);
      if (!rb) throw new DataError(`record batch ${i} is missing or truncated`, { file: chunk.path });
      out.push(rb);
    }
    return out;
  } finally {
    await handle.close();
  }
}

/** IPC streams have no index: read through, keeping the wanted batches, and stop after the last. */
async function readStreamBatches(chunk: ArrowChunk): Promise<Arrow.RecordBatch[]> {
  const wanted = new Set(chunk.batchIndices);
  const last = Math.max(...chunk.batchIndices);
  const stream = createReadStream(chunk.path);
  try {
    const reader = await arrow.RecordBatchReader.from(stream);
    const out: Arrow.RecordBatch[] = [];
    let i = 0;
    for await (const rb of reader) {
      if (wanted.has(i)) out.push(rb);
      if (++i > last) break;
    }
    return out;
  } finally {
    stream.destroy();
  }
}

/** The named columns (in that order) of the chunk's record batches, a batch for each (joining them would copy every value). */
export async function readArrowChunk(chunk: ArrowChunk, columns: readonly string[]): Promise<Batch[]> {
  let rbs: Arrow.RecordBatch[];
  try {
    rbs = chunk.kind === 'file' ? await readFileBatches(chunk) : await readStreamBatches(chunk);
  } catch (err) {
    throw asDataError(err, chunk.path);
  }
  if (rbs.length === 0) throw new DataError('record batches are missing (file changed or truncated)', { file: chunk.path });
  return arrowTableToBatches(new arrow.Table(rbs), columns);
}
