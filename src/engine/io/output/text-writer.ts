// CSV and JSONL writers: rows are encoded straight to bytes (csv-encode.ts, jsonl-encode.ts), a
// slice of rows at a time, so memory stays bounded by the batch and the sink receives large
// writes, not one per row.

import type { Batch, Schema } from '../../batch.js';
import { csvQuote } from '../format-value.js';
import type { ByteSink } from './byte-sink.js';
import { appendCsvRows, encodeCsvRows } from './csv-encode.js';
import { appendJsonlRows, encodeJsonlRows } from './jsonl-encode.js';
import type { ByteBuffer } from './text-encode-buffer.js';
import type { BatchWriter, TextFormat } from './types.js';

const ROWS_PER_SLICE = 16_384;

/** Bytes of rows [start, end) of a batch, each line ending in '\n'. */
type RowEncoder = (batch: Batch, start: number, end: number) => Uint8Array;

const ROW_ENCODER: Record<TextFormat, RowEncoder> = { csv: encodeCsvRows, jsonl: encodeJsonlRows };

class TextBatchWriter implements BatchWriter {
  constructor(private readonly sink: ByteSink, private readonly encode: RowEncoder, private preamble: string) {}

  private async writePreamble(): Promise<void> {
    if (this.preamble) await this.sink.write(Buffer.from(this.preamble, 'utf8'));
    this.preamble = '';
  }

  async write(batch: Batch): Promise<void> {
    await this.writePreamble();
    for (let start = 0; start < batch.length; start += ROWS_PER_SLICE) {
      await this.sink.write(this.encode(batch, start, Math.min(batch.length, start + ROWS_PER_SLICE)));
    }
  }

  async writeEncoded(rows: Uint8Array): Promise<void> {
    await this.writePreamble();
    if (rows.length > 0) await this.sink.write(rows);
  }

  async close(): Promise<void> {
    await this.writePreamble(); // an empty result still gets its CSV header
    await this.sink.close();
  }

  abort(): Promise<void> {
    return this.sink.abort();
  }
}

/** All rows of a batch as CSV or JSONL bytes (no header): what a writer's writeEncoded appends. */
export function encodeRows(format: TextFormat, batch: Batch): Uint8Array {
  return ROW_ENCODER[format](batch, 0, batch.length);
}

/** encodeRows' bytes appended to `out`. */
export function appendRows(format: TextFormat, out: ByteBuffer, batch: Batch): void {
  if (format === 'csv') appendCsvRows(out, batch);
  else appendJsonlRows(out, batch);
}

export function csvWriter(sink: ByteSink, schema: Schema): BatchWriter {
  return new TextBatchWriter(sink, encodeCsvRows, schema.map((f) => csvQuote(f.name)).join(',') + '\n');
}

export function jsonlWriter(sink: ByteSink): BatchWriter {
  return new TextBatchWriter(sink, encodeJsonlRows, '');
}
