// Arrow IPC writer (file format for .arrow/.feather, stream format for stdout). apache-arrow's
// writers queue their bytes internally until read; this one hands each piece to our sink as
// soon as a record batch is encoded, so memory stays bounded by one batch.

import type * as Arrow from 'apache-arrow';
import { arrow } from '../apache-arrow.js';
import type { Batch, Schema } from '../../batch.js';
import { batchToArrowSchema, batchToRecordBatch } from '../arrow-batch.js';
import type { ByteSink } from './byte-sink.js';
import type { BatchWriter } from './types.js';

type IpcWriter = Arrow.RecordBatchWriter & { takePending(): Uint8Array[] };

/** An apache-arrow IPC writer whose encoded bytes are collected for us to take. */
function collectingWriter(ipcFormat: 'file' | 'stream'): IpcWriter {
  const Base: typeof arrow.RecordBatchWriter = ipcFormat === 'file' ? arrow.RecordBatchFileWriter : arrow.RecordBatchStreamWriter;
  class Collecting extends Base {
    private pending: Uint8Array[] = [];
    takePending(): Uint8Array[] {
      const out = this.pending;
      this.pending = [];
      return out;
    }
    // Overrides the write into apache-arrow's internal queue; `_position` feeds the file footer.
    protected override _write(chunk: ArrayBufferView): this {
      if (this._started && chunk.byteLength > 0) {
        // Copy: body buffers are views of the batch's arrays, which the caller may reuse.
        this.pending.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength).slice());
        this._position += chunk.byteLength;
      }
      return this;
    }
  }
  return new Collecting();
}

class ArrowBatchWriter implements BatchWriter {
  private wroteBatch = false;
  constructor(private readonly sink: ByteSink, private readonly ipc: IpcWriter, private readonly schema: Schema) {}

  private async drain(): Promise<void> {
    for (const piece of this.ipc.takePending()) await this.sink.write(piece);
  }

  async write(batch: Batch): Promise<void> {
    this.ipc.write(batchToRecordBatch(batch));
    this.wroteBatch = true;
    await this.drain();
  }

  async close(): Promise<void> {
    // A result with no batches still needs its schema; finish() writes the file footer.
    if (!this.wroteBatch) this.ipc.reset(undefined, batchToArrowSchema(this.schema));
    this.ipc.finish();
    await this.drain();
    await this.sink.close();
  }

  abort(): Promise<void> {
    return this.sink.abort();
  }
}

export function arrowWriter(sink: ByteSink, schema: Schema, ipcFormat: 'file' | 'stream'): BatchWriter {
  return new ArrowBatchWriter(sink, collectingWriter(ipcFormat), schema);
}
