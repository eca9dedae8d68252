// CSV and JSONL writers: each batch is encoded a slice of rows at a time into one string, so
// memory stays bounded by the batch and the sink receives large writes, not one per row.

import type { Batch, Schema } from '../../batch.js';
import { cellFormatter, csvQuote } from '../format-value.js';
import type { ByteSink } from './byte-sink.js';
import type { BatchWriter, TextFormat } from './types.js';

const ROWS_PER_SLICE = 16_384;

/** Text of rows [start, end) of a batch, each line ending in '\n'. */
type RowEncoder = (batch: Batch, start: number, end: number) => string;

function csvRows(batch: Batch, start: number, end: number): string {
  const cells = batch.columns.map((c) => cellFormatter(c, 'csv'));
  const lines: string[] = [];
  for (let i = start; i < end; i++) {
    let line = cells.length > 0 ? cells[0](i) : '';
    for (let c = 1; c < cells.length; c++) line += ',' + cells[c](i);
    lines.push(line);
  }
  return lines.join('\n') + '\n';
}

function jsonlRows(batch: Batch, start: number, end: number): string {
  const cells = batch.columns.map((c) => cellFormatter(c, 'json'));
  const keys = batch.schema.map((f, c) => (c === 0 ? '{' : ',') + JSON.stringify(f.name) + ':');
  const lines: string[] = [];
  for (let i = start; i < end; i++) {
    let line = cells.length === 0 ? '{' : '';
    for (let c = 0; c < cells.length; c++) line += keys[c] + cells[c](i);
    lines.push(line + '}');
  }
  return lines.join('\n') + '\n';
}

class TextBatchWriter implements BatchWriter {
  constructor(private readonly sink: ByteSink, private readonly encodeRows: RowEncoder, private preamble: string) {}

  private async writePreamble(): Promise<void> {
    if (this.preamble) await this.sink.write(Buffer.from(this.preamble, 'utf8'));
    this.preamble = '';
  }

  async write(batch: Batch): Promise<void> {
    await this.writePreamble();
    for (let start = 0; start < batch.length; start += ROWS_PER_SLICE) {
      const end = Math.min(batch.length, start + ROWS_PER_SLICE);
      await this.sink.write(Buffer.from(this.encodeRows(batch, start, end), 'utf8'));
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
  const encode = format === 'csv' ? csvRows : jsonlRows;
  const parts: Buffer[] = [];
  for (let start = 0; start < batch.length; start += ROWS_PER_SLICE) {
    parts.push(Buffer.from(encode(batch, start, Math.min(batch.length, start + ROWS_PER_SLICE)), 'utf8'));
  }
  return Buffer.concat(parts);
}

export function csvWriter(sink: ByteSink, schema: Schema): BatchWriter {
  return new TextBatchWriter(sink, csvRows, schema.map((f) => csvQuote(f.name)).join(',') + '\n');
}

export function jsonlWriter(sink: ByteSink): BatchWriter {
  return new TextBatchWriter(sink, jsonlRows, '');
}
