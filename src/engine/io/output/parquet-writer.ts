// Parquet writer over parquet-wasm's streaming encoder (transformParquetStream): batches go in
// as Arrow record batches, Parquet bytes come out as each row group completes. Row groups hold
// about ROW_GROUP_BYTES of uncompressed data (estimated from the first batch), so memory is
// bounded by one row group plus one batch.

import { arrow } from '../apache-arrow.js';
import * as pw from 'parquet-wasm';
import { type Batch, type Schema, batchBytes, emptyBatch } from '../../batch.js';
import { batchToArrowTable } from '../arrow-batch.js';
import type { ByteSink } from './byte-sink.js';
import type { BatchWriter } from './types.js';

const ROW_GROUP_BYTES = 64 << 20;

function toWasmBatches(batch: Batch): pw.RecordBatch[] {
  return pw.Table.fromIPCStream(arrow.tableToIPC(batchToArrowTable(batch), 'stream')).recordBatches();
}

function writerProperties(rowsPerGroup: number): pw.WriterProperties {
  return new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.SNAPPY)
    .setMaxRowGroupSize(rowsPerGroup)
    .setCreatedBy('gpuframe')
    .build();
}

class ParquetBatchWriter implements BatchWriter {
  private input: ReadableStreamDefaultController<pw.RecordBatch> | null = null;
  private pump: Promise<void> | null = null;
  private wakeWriter: (() => void) | null = null;

  constructor(private readonly sink: ByteSink, private readonly schema: Schema) {}

  /** Starts the encoder on the first batch, when its size tells how many rows fill a row group. */
  private start(first: Batch): void {
    const rowBytes = Math.max(1, batchBytes(first) / Math.max(1, first.length));
    const props = writerProperties(Math.max(1024, Math.floor(ROW_GROUP_BYTES / rowBytes)));
    const source = new ReadableStream<pw.RecordBatch>({
      start: (c) => { this.input = c; },
      pull: () => { this.wakeWriter?.(); },
    }, { highWaterMark: 1 });
    this.pump = (async () => {
      const bytes = await pw.transformParquetStream(source, props);
      for await (const piece of bytes as ReadableStream<Uint8Array>) await this.sink.write(piece);
    })();
    this.pump.catch(() => {}); // handled where awaited (write/close); keeps Node from flagging it as unhandled
  }

  async write(batch: Batch): Promise<void> {
    if (batch.length === 0) return;
    if (this.pump === null) this.start(batch);
    for (const rb of toWasmBatches(batch)) {
      this.input!.enqueue(rb);
      // Backpressure: wait until the encoder has taken the batch before accepting another.
      while (this.input!.desiredSize! <= 0) {
        await Promise.race([new Promise<void>((r) => { this.wakeWriter = r; }), this.pump]);
      }
    }
  }

  async close(): Promise<void> {
    if (this.pump === null) {
      // No rows: a valid file with the schema and no row groups.
      const table = pw.Table.fromIPCStream(arrow.tableToIPC(batchToArrowTable(emptyBatch(this.schema)), 'stream'));
      await this.sink.write(pw.writeParquet(table, writerProperties(1024)));
    } else {
      this.input!.close();
      await this.pump;
    }
    await this.sink.close();
  }

  async abort(): Promise<void> {
    try {
      this.input?.error(new Error('aborted'));
      await this.pump?.catch(() => {});
    } finally {
      await this.sink.abort();
    }
  }
}

export function parquetWriter(sink: ByteSink, schema: Schema): BatchWriter {
  return new ParquetBatchWriter(sink, schema);
}
