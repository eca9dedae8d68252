// Chunked Parquet reading through parquet-wasm; loaded through parquet.ts. The footer lists row
// groups with their row counts and uncompressed sizes, so planning reads nothing else; a chunk
// reads only its row groups and only the needed columns, then crosses into JS through the Arrow C
// Data Interface (arrow-ffi.ts), or, for a file with a type that reader does not convert, as Arrow
// IPC through apache-arrow.
// fs.openAsBlob gives parquet-wasm a lazily read file, so a chunk's read touches only its bytes.
// Known gap: a file whose footer is intact but whose page data is damaged makes parquet-wasm
// 0.8.0's async reader panic inside wasm (an uncaught RuntimeError, not a rejected promise);
// its sync readParquet reports such damage cleanly but needs the whole file in wasm memory.

import { openAsBlob } from 'node:fs';
import { stat } from 'node:fs/promises';
import * as pw from 'parquet-wasm';
import type * as Arrow from 'apache-arrow';
import type { Batch, Schema } from '../batch.js';
import { DataError, columnIndices } from '../errors.js';
import type { ParquetChunk } from './parquet.js';
import { FfiMemory, ffiFieldType, type FfiField } from './arrow-ffi.js';
import { columnNames } from './column-names.js';
import { inputError, type InputName } from './input-error.js';

function asDataError(err: unknown, name: InputName): Error {
  return inputError(err, name, 'Parquet');
}

async function openParquet(name: InputName): Promise<pw.ParquetFile> {
  try {
    await stat(name.path); // openAsBlob's own error does not say the file is missing
    return await pw.ParquetFile.fromFile(await openAsBlob(name.path));
  } catch (err) {
    throw asDataError(err, name);
  }
}

/**
 * The file's Arrow schema as parquet-wasm gives it, decoded by apache-arrow's reader (not through a
 * Table, whose RecordBatch merges fields of one name; see arrowColumnNames).
 */
async function arrowSchemaOf(file: pw.ParquetFile): Promise<Arrow.Schema> {
  const { arrow } = await import('./apache-arrow.js');
  const reader = arrow.RecordBatchReader.from(file.schema().intoIPCStream());
  reader.open();
  return reader.schema;
}

/** The file's fields, from its schema as C Data Interface structs. */
function fileFields(file: pw.ParquetFile): FfiField[] {
  const ffi = file.schema().intoFFI();
  try {
    return new FfiMemory(pw.wasmMemory().buffer).schemaFields(ffi.addr());
  } finally {
    ffi.free();
  }
}

/**
 * Our schema of the file and its fields; `direct`: every field has a type arrow-ffi.ts converts,
 * so chunks skip apache-arrow. Otherwise apache-arrow decodes the schema (and names a type that
 * gpuframe cannot read).
 */
async function fileSchema(file: pw.ParquetFile, displayName: string): Promise<{ schema: Schema; fields: FfiField[]; direct: boolean }> {
  const fields = fileFields(file);
  const types = fields.map(ffiFieldType);
  if (types.every((t) => t !== null)) {
    const names = columnNames(fields.map((f) => f.name), displayName);
    return { schema: fields.map((f, i) => ({ name: names[i], type: types[i]! })), fields, direct: true };
  }
  const { arrowSchemaToSchema } = await import('./arrow-batch.js');
  return { schema: arrowSchemaToSchema(await arrowSchemaOf(file), displayName), fields, direct: false };
}

export async function planParquetChunks(name: InputName, blocksize: number): Promise<{ schema: Schema; chunks: ParquetChunk[] }> {
  const { path, displayName } = name;
  const file = await openParquet(name);
  try {
    const { schema } = await fileSchema(file, displayName);
    const meta = file.metadata();
    const chunks: ParquetChunk[] = [];
    let cur: ParquetChunk | null = null;
    let bytes = 0;
    for (let i = 0; i < meta.numRowGroups(); i++) {
      const group = meta.rowGroup(i);
      const size = group.totalByteSize();
      if (cur === null || bytes + size > blocksize) {
        cur = { path, displayName, rowGroups: [], rows: 0, bytes: 0 };
        chunks.push(cur);
        bytes = 0;
      }
      cur.rowGroups.push(i);
      cur.rows += group.numRows();
      cur.bytes += size;
      bytes += size;
    }
    return { schema, chunks };
  } catch (err) {
    throw asDataError(err, name);
  } finally {
    file.free();
  }
}

/**
 * Uncompressed bytes of one record batch parquet-wasm decodes at most. Its decoder allocates per
 * batch far beyond the data: a 470 MB chunk (28.8 M rows, 4 columns) in batches of 256 MB or more
 * aborted inside wasm (its 4 GiB memory), in 64 MB ones it read. A batch never spans row groups.
 */
const PARQUET_BATCH_BYTES = 64 << 20;

/**
 * Rows per record batch for reading a chunk: as many as PARQUET_BATCH_BYTES allows (at least 1024).
 * parquet-wasm's default (1024) cut a 64 MB chunk into ~1300 batches, and their decoding and joining
 * took as long as reading the data.
 */
export function parquetBatchRows(chunk: Pick<ParquetChunk, 'rows' | 'bytes'>): number {
  const rows = Math.max(1, chunk.rows);
  return chunk.bytes <= PARQUET_BATCH_BYTES ? rows : Math.max(1024, Math.floor(rows * (PARQUET_BATCH_BYTES / chunk.bytes)));
}

/** The named columns (in that order) of the chunk's row groups, as one batch; `limit`: only its first rows. */
export async function readParquetChunk(chunk: ParquetChunk, columns: readonly string[], limit?: number): Promise<Batch> {
  const file = await openParquet(chunk);
  try {
    const { schema, fields, direct } = await fileSchema(file, chunk.displayName);
    const at = columnIndices(schema.map((f) => f.name), columns);
    // parquet-wasm picks columns by the file's own names and gives every field of a picked name, in
    // the file's order: several fields can share the empty name, which gpuframe names column<i>.
    // No columns asked (e.g. count()): read the first one for the row count, then drop it.
    const picked = new Set((columns.length > 0 ? at : fields.length > 0 ? [0] : []).map((i) => fields[i].name));
    const got = fields.flatMap((f, i) => (picked.has(f.name) ? [i] : []));
    const wasmTable = await file.read({ rowGroups: chunk.rowGroups, columns: [...picked], batchSize: parquetBatchRows(chunk), ...(limit === undefined ? {} : { limit }) });
    const gave = (n: number) => { if (n !== got.length) throw new DataError(`the Parquet reader gave ${n} columns for the ${got.length} asked`, { file: chunk.displayName }); };
    if (direct) {
      const stream = wasmTable.intoFFI();
      try {
        const arrays = stream.arrayAddrs(), schemaAddr = stream.schemaAddr();
        const memory = new FfiMemory(pw.wasmMemory().buffer); // after the last call into wasm, which may grow its memory
        const streamFields = memory.schemaFields(schemaAddr);
        gave(streamFields.length);
        return memory.batchOf(arrays, streamFields, at.map((i) => got.indexOf(i)), at.map((i) => schema[i]));
      } finally {
        stream.free();
      }
    }
    const { arrow } = await import('./apache-arrow.js');
    const { arrowTableToBatch } = await import('./arrow-batch.js');
    const table = arrow.tableFromIPC(wasmTable.intoIPCStream());
    gave(table.numCols);
    return arrowTableToBatch(table, columns, got.map((i) => schema[i]));
  } catch (err) {
    throw asDataError(err, chunk);
  } finally {
    file.free();
  }
}
