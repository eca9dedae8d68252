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

/**
 * A file chunk's record batches. Their messages lie end to end in the file, so the bytes from the
 * first to the end of the last, after a schema message, form an IPC stream: one read, and every
 * batch a view of that one buffer (reading batch by batch allocated and zero-filled a buffer per
 * batch: a 117 MB chunk took 109-153 ms that way, 85-100 ms with one read, on the development
 * machine). Files with dictionaries (their batches need the
 * dictionary messages first) or with gaps between the batches are read batch by batch.
 */
async function readFileBatches(chunk: ArrowChunk): Promise<Arrow.RecordBatch[]> {
  const handle = await open(chunk.path, 'r');
  try {
    const reader = await arrow.RecordBatchReader.from(handle);
    await reader.open();
    const footer = (reader as Arrow.AsyncRecordBatchFileReader).footer!;
    const blocks = chunk.batchIndices.map((i) => {
      const block = footer.getRecordBatch(i);
      if (!block) throw new DataError(`record batch ${i} is missing or truncated`, { file: chunk.path });
      return block;
    });
    const end = (b: { offset: number | bigint; metaDataLength: number; bodyLength: number | bigint }) => Number(b.offset) + b.metaDataLength + Number(b.bodyLength);
    const contiguous = blocks.every((b, i) => i === 0 || Number(b.offset) === end(blocks[i - 1]));
    if (footer.numDictionaries > 0 || !contiguous) return await readBatchByBatch(reader as Arrow.AsyncRecordBatchFileReader, chunk);
    const schema = schemaMessage(reader.schema);
    const start = Number(blocks[0].offset), length = end(blocks[blocks.length - 1]) - start;
    const bytes = Buffer.allocUnsafe(schema.length + length);
    bytes.set(schema, 0);
    const { bytesRead } = await handle.read(bytes, schema.length, length, start);
    if (bytesRead < length) throw new DataError(`record batches ${chunk.batchIndices[0]}-${chunk.batchIndices[chunk.batchIndices.length - 1]} are truncated`, { file: chunk.path });
    const batches = arrow.RecordBatchReader.from(bytes);
    batches.open();
    const out = [...batches];
    if (out.length !== blocks.length) throw new DataError(`expected ${blocks.length} record batches at bytes ${start}-${start + length}, found ${out.length}`, { file: chunk.path });
    return out;
  } finally {
    await handle.close();
  }
}

async function readBatchByBatch(reader: Arrow.AsyncRecordBatchFileReader, chunk: ArrowChunk): Promise<Arrow.RecordBatch[]> {
  const out: Arrow.RecordBatch[] = [];
  for (const i of chunk.batchIndices) {
    const rb = await reader.readRecordBatch(i);
    if (!rb) throw new DataError(`record batch ${i} is missing or truncated`, { file: chunk.path });
    out.push(rb);
  }
  return out;
}

/** The IPC stream message of `schema` (what a stream starts with): an empty table's stream without its end marker. */
function schemaMessage(schema: Arrow.Schema): Uint8Array {
  const ipc = arrow.tableToIPC(new arrow.Table(schema), 'stream');
  return ipc.subarray(0, ipc.length - 8);
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
