// The readable table shown on a terminal: the first rows, aligned, then the total row count.
// Only the shown rows are formatted; later batches are just counted.

import type { Batch, Schema } from '../../batch.js';
import { cellFormatter } from '../format-value.js';
import type { ByteSink } from './byte-sink.js';
import type { BatchWriter } from './types.js';

export const TABLE_ROWS_SHOWN = 20;

class TableWriter implements BatchWriter {
  private readonly shown: string[][] = [];
  private rows = 0;

  constructor(private readonly sink: ByteSink, private readonly schema: Schema) {}

  async write(batch: Batch): Promise<void> {
    const take = Math.min(batch.length, TABLE_ROWS_SHOWN - this.shown.length);
    if (take > 0) {
      const cells = batch.columns.map((c) => cellFormatter(c, 'table'));
      for (let i = 0; i < take; i++) this.shown.push(cells.map((cell) => cell(i)));
    }
    this.rows += batch.length;
  }

  async close(): Promise<void> {
    const header = this.schema.map((f) => f.name);
    const widths = header.map((h, c) => Math.max(h.length, ...this.shown.map((r) => r[c].length)));
    // Numbers read best right-aligned, text left-aligned.
    const right = this.schema.map((f) => f.type === 'int64' || f.type === 'float64');
    const line = (cells: string[]) => cells.map((s, c) => (right[c] ? s.padStart(widths[c]) : s.padEnd(widths[c]))).join('  ').trimEnd();
    const out = [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...this.shown.map(line)];
    if (this.rows > this.shown.length) out.push('...');
    out.push(`${this.rows} ${this.rows === 1 ? 'row' : 'rows'}`);
    await this.sink.write(Buffer.from(out.join('\n') + '\n', 'utf8'));
    await this.sink.close();
  }

  abort(): Promise<void> {
    return this.sink.abort();
  }
}

export function tableWriter(sink: ByteSink, schema: Schema): BatchWriter {
  return new TableWriter(sink, schema);
}
