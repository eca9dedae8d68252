// Chunked Parquet reading through parquet-wasm; loaded through parquet.ts. The footer lists row
// groups with their row counts and uncompressed sizes, so planning reads nothing else; a chunk
// reads only its row groups and only the needed columns, then crosses into JS as Arrow IPC
// (apache-arrow's tableFromIPC) and from there into a column batch.
// fs.openAsBlob gives parquet-wasm a lazily read file, so a chunk's read touches only its bytes.
// Known gap: a file whose footer is intact but whose page data is damaged makes parquet-wasm
// 0.8.0's async reader panic inside wasm (an uncaught RuntimeError, not a rejected promise);
// its sync readParquet reports such damage cleanly but needs the whole file in wasm memory.

import { openAsBlob } from 'node:fs';
import { stat } from 'node:fs/promises';
import * as pw from 'parquet-wasm';
import type * as Arrow from 'apache-arrow';
import { arrow } from './apache-arrow.js';
import type { Batch, Schema } from '../batch.js';
import { DataError, columnIndices } from '../errors.js';
import type { ParquetChunk } from './parquet.js';
import { arrowSchemaToSchema, arrowTableToBatch } from './arrow-batch.js';
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
function arrowSchemaOf(file: pw.ParquetFile): Arrow.Schema {
  const reader = arrow.RecordBatchReader.from(file.schema().intoIPCStream());
  reader.open();
  return reader.schema;
}

export async function planParquetChunks(name: InputName, blocksize: number): Promise<{ schema: Schema; chunks: ParquetChunk[] }> {
  const { path, displayName } = name;
  const file = await openParquet(name);
  try {
    const schema = arrowSchemaToSchema(arrowSchemaOf(file), displayName);
    const meta = file.metadata();
    const chunks: ParquetChunk[] = [];
    let cur: ParquetChunk | null = null;
    let bytes = 0;
    for (let i = 0; i < meta.numRowGroups(); i++) {
      const group = meta.rowGroup(i);
      const size = group.totalByteSize();
      if (cur === null || bytes + size > blocksize) {
        cur = { path, displayName, rowGroups: [], rows: 0 };
        chunks.push(cur);
        bytes = 0;
      }
      cur.rowGroups.push(i);
      cur.rows += group.numRows();
      bytes += size;
    }
    return { schema, chunks };
  } catch (err) {
    throw asDataError(err, name);
  } finally {
    file.free();
  }
}

/** The named columns (in that order) of the chunk's row groups, as one batch. */
export async function readParquetChunk(chunk: ParquetChunk, columns: readonly string[]): Promise<Batch> {
  const file = await openParquet(chunk);
  try {
    const fileSchema = arrowSchemaOf(file);
    const fields = fileSchema.fields;
    const schema = arrowSchemaToSchema(fileSchema, chunk.displayName);
    const at = columnIndices(schema.map((f) => f.name), columns);
    // parquet-wasm picks columns by the file's own names and gives every field of a picked name, in
    // the file's order: several fields can share the empty name, which gpuframe names column<i>.
    // No columns asked (e.g. count()): read the first one for the row count, then drop it.
    const fileName = (i: number) => (fields[i].name as string | null) ?? '';
    const picked = new Set((columns.length > 0 ? at : fields.length > 0 ? [0] : []).map(fileName));
    const got = fields.flatMap((_, i) => (picked.has(fileName(i)) ? [i] : []));
    const wasmTable = await file.read({ rowGroups: chunk.rowGroups, columns: [...picked] });
    const table = arrow.tableFromIPC(wasmTable.intoIPCStream());
    if (table.numCols !== got.length) throw new DataError(`the Parquet reader gave ${table.numCols} columns for the ${got.length} asked`, { file: chunk.displayName });
    return arrowTableToBatch(table, columns, got.map((i) => schema[i]));
  } catch (err) {
    throw asDataError(err, chunk);
  } finally {
    file.free();
  }
}
