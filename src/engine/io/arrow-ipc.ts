// Chunked reading of Arrow IPC files (.arrow/.feather) and streams (.arrows): planning reads the
// footer and batch headers only; a chunk reads its own record batches. Loaded through arrow.ts.

import type * as Arrow from 'apache-arrow';
import { arrow } from './apache-arrow.js';
import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { Batch, Schema } from '../batch.js';
import { DataError } from '../errors.js';
import type { ArrowChunk } from './arrow.js';
import { arrowColumnNames, arrowSchemaToSchema, arrowTableToBatches } from './arrow-batch.js';
import { inputError, type InputName } from './input-error.js';

interface BatchInfo { rows: number; bytes: number }

function asDataError(err: unknown, name: InputName): Error {
  return inputError(err, name, 'Arrow IPC');
}

/**
 * Groups consecutive batches into chunks of about `blocksize` bytes: chunk n holds the batches
 * that start in bytes [n × blocksize, (n + 1) × blocksize) of the batches laid end to end (a
 * chunk holds at least one batch), so a blocksize of total / n gives n chunks where batches are
 * small, not n and a remainder.
 */
function groupIntoChunks({ path, displayName }: InputName, kind: 'file' | 'stream', infos: BatchInfo[], blocksize: number): ArrowChunk[] {
  const chunks: ArrowChunk[] = [];
  let cur: ArrowChunk | null = null, slot = -1, start = 0;
  infos.forEach((info, i) => {
    const at = Math.floor(start / blocksize);
    if (cur === null || at !== slot) {
      cur = { path, displayName, kind, batchIndices: [], rows: 0 };
      chunks.push(cur);
      slot = at;
    }
    cur.batchIndices.push(i);
    cur.rows += info.rows;
    start += info.bytes;
  });
  return chunks;
}

/** What a record batch's header says: its rows, each field's null count, and where its buffers lie in the body. */
interface BatchHeader {
  length: number;
  nodes: { nullCount: number }[];
  buffers: { offset: number; length: number }[];
  compression: unknown;
}

/** A record batch's entry in the file footer: where its message lies. */
type FooterBlock = { offset: number | bigint; metaDataLength: number; bodyLength: number | bigint };

/** The header of the record batch in `block` (its metadata message only, not its body). */
async function readBatchHeader(handle: FileHandle, block: FooterBlock): Promise<BatchHeader> {
  const meta = new Uint8Array(block.metaDataLength);
  await handle.read(meta, 0, meta.length, Number(block.offset));
  // The metadata block is: continuation marker (0xFFFFFFFF), int32 length, flatbuffer message.
  const start = new DataView(meta.buffer).getInt32(0, true) === -1 ? 8 : 4;
  return arrow.Message.decode(meta.subarray(start)).header() as unknown as BatchHeader;
}

/**
 * Our schema of the data an opened reader holds: of the schema it decoded (its null names are the
 * empty ones; see arrowColumnNames), checked before any record batch is built, since apache-arrow's
 * RecordBatch merges fields of one name.
 */
function schemaOfReader(reader: { schema: Arrow.Schema | null | undefined }, displayName: string): Schema {
  if (!reader.schema) throw new DataError('empty or truncated Arrow IPC data (no schema)', { file: displayName });
  return arrowSchemaToSchema(reader.schema, displayName);
}

/** Row count and body size of each record batch, read from the file footer and batch headers only. */
async function fileBatchInfos({ path, displayName }: InputName): Promise<{ schema: Schema; infos: BatchInfo[] }> {
  const handle = await open(path, 'r');
  try {
    const reader = await arrow.RecordBatchReader.from(handle);
    await reader.open();
    if (!reader.isFile()) throw new DataError('not an Arrow IPC file (no footer); use the .arrows extension for IPC streams', { file: displayName });
    const schema = schemaOfReader(reader, displayName);
    const infos: BatchInfo[] = [];
    for (const block of reader.footer!.recordBatches()) {
      const header = await readBatchHeader(handle, block);
      infos.push({ rows: Number(header.length), bytes: Number(block.bodyLength) });
    }
    await reader.cancel();
    return { schema, infos };
  } finally {
    await handle.close();
  }
}

async function streamBatchInfos({ path, displayName }: InputName): Promise<{ schema: Schema; infos: BatchInfo[] }> {
  const reader = await arrow.RecordBatchReader.from(createReadStream(path));
  await reader.open();
  const schema = schemaOfReader(reader, displayName); // read before iterating: the reader resets itself at the end
  const infos: BatchInfo[] = [];
  for await (const rb of reader) infos.push({ rows: rb.numRows, bytes: rb.data.byteLength });
  return { schema, infos };
}

export async function planArrowChunks(name: InputName, kind: 'file' | 'stream', blocksize: number): Promise<{ schema: Schema; chunks: ArrowChunk[] }> {
  let got: { schema: Schema; infos: BatchInfo[] };
  try {
    got = kind === 'file' ? await fileBatchInfos(name) : await streamBatchInfos(name);
  } catch (err) {
    throw asDataError(err, name);
  }
  return { schema: got.schema, chunks: groupIntoChunks(name, kind, got.infos, blocksize) };
}

/** A chunk's record batches, with our schema of the file's fields (of the schema the reader decoded; see schemaOfReader). */
interface ReadBatches { schema: Schema; batches: Arrow.RecordBatch[] }

/**
 * A file chunk's record batches. Their messages lie end to end in the file, so the bytes from the
 * first to the end of the last, after a schema message, form an IPC stream: one read, and every
 * batch a view of that one buffer (reading batch by batch allocated and zero-filled a buffer per
 * batch: a 117 MB chunk took 109-153 ms that way, 85-100 ms with one read, on the development
 * machine). Files with dictionaries (their batches need the
 * dictionary messages first) or with gaps between the batches are read batch by batch.
 */
async function readFileBatches(chunk: ArrowChunk): Promise<ReadBatches> {
  const handle = await open(chunk.path, 'r');
  try {
    const reader = await arrow.RecordBatchReader.from(handle);
    await reader.open();
    const schema = schemaOfReader(reader, chunk.displayName);
    const footer = (reader as Arrow.AsyncRecordBatchFileReader).footer!;
    const blocks = chunk.batchIndices.map((i) => {
      const block = footer.getRecordBatch(i);
      if (!block) throw new DataError(`record batch ${i} is missing or truncated`, { file: chunk.displayName });
      return block;
    });
    const end = (b: { offset: number | bigint; metaDataLength: number; bodyLength: number | bigint }) => Number(b.offset) + b.metaDataLength + Number(b.bodyLength);
    const contiguous = blocks.every((b, i) => i === 0 || Number(b.offset) === end(blocks[i - 1]));
    if (footer.numDictionaries > 0 || !contiguous) return { schema, batches: await readBatchByBatch(reader as Arrow.AsyncRecordBatchFileReader, chunk) };
    const head = schemaMessage(reader.schema);
    const start = Number(blocks[0].offset), length = end(blocks[blocks.length - 1]) - start;
    const bytes = Buffer.allocUnsafe(head.length + length);
    bytes.set(head, 0);
    const { bytesRead } = await handle.read(bytes, head.length, length, start);
    if (bytesRead < length) throw new DataError(`record batches ${chunk.batchIndices[0]}-${chunk.batchIndices[chunk.batchIndices.length - 1]} are truncated`, { file: chunk.displayName });
    const batches = arrow.RecordBatchReader.from(bytes);
    batches.open();
    const out = [...batches];
    if (out.length !== blocks.length) throw new DataError(`expected ${blocks.length} record batches at bytes ${start}-${start + length}, found ${out.length}`, { file: chunk.displayName });
    return { schema, batches: out };
  } finally {
    await handle.close();
  }
}

async function readBatchByBatch(reader: Arrow.AsyncRecordBatchFileReader, chunk: ArrowChunk): Promise<Arrow.RecordBatch[]> {
  const out: Arrow.RecordBatch[] = [];
  for (const i of chunk.batchIndices) {
    const rb = await reader.readRecordBatch(i);
    if (!rb) throw new DataError(`record batch ${i} is missing or truncated`, { file: chunk.displayName });
    out.push(rb);
  }
  return out;
}

/** The IPC stream message of `schema` (what a stream starts with): an empty table's stream without its end marker. */
function schemaMessage(schema: Arrow.Schema): Uint8Array {
  const ipc = arrow.tableToIPC(new arrow.Table(schema), 'stream');
  return ipc.subarray(0, ipc.length - 8);
}

/** Where named float64 columns' values lie in an Arrow IPC file: column j of batch b is batchRows[b] little-endian float64s from byte offsets[b][j]. */
export interface Float64Extents { batchRows: number[]; offsets: number[][] }

/** Buffers a field of this type has in a record batch body, for flat schemas; null for nested and dictionary types. */
function bufferCount(type: Arrow.DataType): number | null {
  switch (type.typeId) {
    case arrow.Type.Null: return 0;
    case arrow.Type.Bool: case arrow.Type.Int: case arrow.Type.Float: case arrow.Type.Decimal: case arrow.Type.Date:
    case arrow.Type.Time: case arrow.Type.Timestamp: case arrow.Type.Interval: case arrow.Type.Duration: case arrow.Type.FixedSizeBinary:
      return 2;
    case arrow.Type.Utf8: case arrow.Type.Binary: case arrow.Type.LargeUtf8: case arrow.Type.LargeBinary:
      return 3;
    default: return null;
  }
}

/**
 * Where the chunk's `columns` lie in its file, for reading them straight into their destination
 * (a GPU's staging memory) instead of through record batches: null unless it is an IPC file whose
 * columns are all float64 without nulls, its batches uncompressed, its fields flat and without
 * dictionaries (then the caller reads the batches as usual; any error there is reported there).
 */
export async function float64Extents(chunk: ArrowChunk, columns: readonly string[]): Promise<Float64Extents | null> {
  if (chunk.kind !== 'file') return null;
  let handle: FileHandle | null = null;
  try {
    handle = await open(chunk.path, 'r');
    const reader = await arrow.RecordBatchReader.from(handle);
    await reader.open();
    const footer = reader.isFile() ? (reader as Arrow.AsyncRecordBatchFileReader).footer : null;
    if (!footer || footer.numDictionaries > 0) return null;
    const fields = reader.schema.fields;
    const firstBuffer: number[] = [];
    let buffers = 0;
    for (const f of fields) {
      const n = bufferCount(f.type);
      if (n === null) return null;
      firstBuffer.push(buffers);
      buffers += n;
    }
    const byName = new Map<string, number>();
    arrowColumnNames(reader.schema).forEach((name, i) => byName.set(name, i));
    const at = columns.map((name) => byName.get(name) ?? -1);
    if (at.some((i) => i < 0 || fields[i].type.typeId !== arrow.Type.Float || (fields[i].type as Arrow.Float).precision !== arrow.Precision.DOUBLE)) return null;
    const extents: Float64Extents = { batchRows: [], offsets: [] };
    for (const i of chunk.batchIndices) {
      const block = footer.getRecordBatch(i);
      if (!block) return null;
      const header = await readBatchHeader(handle, block);
      if (header.compression || header.nodes.length !== fields.length || header.buffers.length !== buffers) return null;
      const rows = Number(header.length), body = Number(block.offset) + block.metaDataLength;
      const offsets: number[] = [];
      for (const j of at) {
        const data = header.buffers[firstBuffer[j] + 1];
        if (Number(header.nodes[j].nullCount) !== 0 || Number(data.length) < rows * 8 || Number(data.offset) + rows * 8 > Number(block.bodyLength)) return null;
        offsets.push(body + Number(data.offset));
      }
      extents.batchRows.push(rows);
      extents.offsets.push(offsets);
    }
    return extents;
  } catch {
    return null;
  } finally {
    await handle?.close();
  }
}

/** IPC streams have no index: read through, keeping the wanted batches, and stop after the last. */
async function readStreamBatches(chunk: ArrowChunk): Promise<ReadBatches> {
  const wanted = new Set(chunk.batchIndices);
  const last = Math.max(...chunk.batchIndices);
  const stream = createReadStream(chunk.path);
  try {
    const reader = await arrow.RecordBatchReader.from(stream);
    await reader.open();
    const schema = schemaOfReader(reader, chunk.displayName); // before iterating: the reader resets itself at the end
    const out: Arrow.RecordBatch[] = [];
    let i = 0;
    for await (const rb of reader) {
      if (wanted.has(i)) out.push(rb);
      if (++i > last) break;
    }
    return { schema, batches: out };
  } finally {
    stream.destroy();
  }
}

/** The named columns (in that order) of the chunk's record batches, a batch for each (joining them would copy every value). */
export async function readArrowChunk(chunk: ArrowChunk, columns: readonly string[]): Promise<Batch[]> {
  let read: ReadBatches;
  try {
    read = chunk.kind === 'file' ? await readFileBatches(chunk) : await readStreamBatches(chunk);
  } catch (err) {
    throw asDataError(err, chunk);
  }
  if (read.batches.length === 0) throw new DataError('record batches are missing (file changed or truncated)', { file: chunk.displayName });
  return arrowTableToBatches(new arrow.Table(read.batches), columns, read.schema);
}
