// Parquet writer: rows cut into row groups of rowGroupRows (about ROW_GROUP_BYTES uncompressed by
// an estimate from the schema, so the cuts depend on the rows alone), each encoded by parquet-wasm
// as a whole file of its own (a part; on the run's workers when the run gives a PartEncoding,
// several at once), the parts joined into one file (parquet-parts.ts).

import { arrow } from '../apache-arrow.js';
import * as pw from 'parquet-wasm';
import { type Batch, type DType, type Schema, concatBatches, emptyBatch, sliceBatch } from '../../batch.js';
import { ParquetJoiner } from './parquet-parts.js';
import { batchToArrowTable } from '../arrow-batch.js';
import type { ByteSink } from './byte-sink.js';
import type { BatchWriter, PartEncoding } from './types.js';

const ROW_GROUP_BYTES = 64 << 20;

/** Rows per record batch given to the encoder (its pages break within them): row groups are whole numbers of them. */
export const PARQUET_BATCH_ROWS = 1 << 16;

/** Bytes a value of each type takes uncompressed, for sizing row groups (strings: a guess). */
const VALUE_BYTES: Record<DType, number> = { int64: 8, float64: 8, timestamp: 8, bool: 1, string: 24 };

/**
 * Rows per row group: about ROW_GROUP_BYTES by the schema's estimate, in whole output batches
 * (PARQUET_BATCH_ROWS, 1 to 16 of them). From the schema alone: the first batch's size, which
 * set it before, follows the partitioning, and so did the file's bytes.
 */
export function rowGroupRows(schema: Schema): number {
  const rowBytes = Math.max(1, schema.reduce((s, f) => s + VALUE_BYTES[f.type], 0));
  return Math.min(16, Math.max(1, Math.floor(ROW_GROUP_BYTES / rowBytes / PARQUET_BATCH_ROWS))) * PARQUET_BATCH_ROWS;
}

/** The batch as a parquet-wasm table of record batches of PARQUET_BATCH_ROWS rows (the cuts its pages follow). */
function toWasmTable(batch: Batch): pw.Table {
  return pw.Table.fromIPCStream(arrow.tableToIPC(batchToArrowTable(batch, PARQUET_BATCH_ROWS), 'stream'));
}

function writerProperties(rowsPerGroup: number): pw.WriterProperties {
  return new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.SNAPPY)
    .setMaxRowGroupSize(rowsPerGroup)
    .setCreatedBy('gpuframe')
    .build();
}

/**
 * One row group's rows (at most rowGroupRows of their schema) as a whole Parquet file: a part
 * that ParquetJoiner joins with the others. The same rows give the same bytes wherever this runs.
 */
export function encodeParquetPart(batches: Batch[]): Uint8Array {
  const batch = batches.length === 1 ? batches[0] : concatBatches(batches[0].schema, batches);
  return pw.writeParquet(toWasmTable(batch), writerProperties(rowGroupRows(batch.schema)));
}

/** Encodes parts in this process, one at a time. */
const HERE: PartEncoding = { encode: async (rows) => encodeParquetPart([rows]), concurrency: 1 };

/**
 * Cuts the rows into row groups of rowGroupRows, has each encoded as a part (several at once
 * where the encoding runs on workers) and writes the parts, in order, joined. Memory: the row
 * groups being encoded, and the one filling.
 */
class ParquetBatchWriter implements BatchWriter {
  private readonly groupRows: number;
  private filling: Batch[] = [];
  private fillingRows = 0;
  private readonly encoding: Promise<Uint8Array>[] = [];
  private readonly joiner = new ParquetJoiner();

  constructor(private readonly sink: ByteSink, private readonly schema: Schema, private readonly parts: PartEncoding, groupRows: number) {
    this.groupRows = groupRows;
  }

  async write(batch: Batch): Promise<void> {
    let at = 0;
    while (at < batch.length) {
      const take = Math.min(batch.length - at, this.groupRows - this.fillingRows);
      this.filling.push(take === batch.length ? batch : sliceBatch(batch, at, at + take));
      this.fillingRows += take;
      at += take;
      if (this.fillingRows === this.groupRows) await this.encodeFilling();
    }
  }

  /** Sends the filling row group to be encoded; with the parts' concurrency in flight, writes the oldest first. */
  private async encodeFilling(): Promise<void> {
    const rows = this.filling.length === 1 ? this.filling[0] : concatBatches(this.schema, this.filling);
    this.filling = [];
    this.fillingRows = 0;
    const encoded = this.parts.encode(rows);
    encoded.catch(() => {}); // awaited in order below; a failure meanwhile must not go unhandled
    this.encoding.push(encoded);
    while (this.encoding.length >= this.parts.concurrency) await this.writeOldest();
  }

  private async writeOldest(): Promise<void> {
    const part = await this.encoding.shift()!;
    for (const piece of this.joiner.add(part)) await this.sink.write(piece);
  }

  async close(): Promise<void> {
    if (this.fillingRows > 0) await this.encodeFilling();
    while (this.encoding.length > 0) await this.writeOldest();
    // No rows: a valid file with the schema and no row groups.
    await this.sink.write(this.joiner.started ? this.joiner.footer() : encodeParquetPart([emptyBatch(this.schema)]));
    await this.sink.close();
  }

  async abort(): Promise<void> {
    await this.sink.abort();
  }
}

/** `groupRows`: rows per row group (tests choose fewer, for several parts from few rows). */
export function parquetWriter(sink: ByteSink, schema: Schema, parts: PartEncoding = HERE, groupRows = rowGroupRows(schema)): BatchWriter {
  return new ParquetBatchWriter(sink, schema, parts, groupRows);
}
