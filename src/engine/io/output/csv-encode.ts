// CSV rows straight to bytes: cells joined by ',', each row ending in '\n' (no header).

import type { Batch } from '../../batch.js';
import { ByteBuffer } from './text-encode-buffer.js';
import { cellEncoder, estimatedCellBytes } from './value-encode.js';

const COMMA = 0x2c, NEWLINE = 0x0a;

/** Rows [start, end) of a batch as CSV bytes. */
export function encodeCsvRows(batch: Batch, start = 0, end = batch.length): Uint8Array {
  const out = new ByteBuffer(0);
  appendCsvRows(out, batch, start, end);
  return out.view();
}

/** Appends rows [start, end) of a batch to `out` as CSV. */
export function appendCsvRows(out: ByteBuffer, batch: Batch, start = 0, end = batch.length): void {
  out.reserve(batch.columns.reduce((sum, c) => sum + estimatedCellBytes(c, start, end) + (end - start), 0));
  const cells = batch.columns.map((c) => cellEncoder(c, 'csv', out));
  const last = cells.length - 1;
  for (let i = start; i < end; i++) {
    for (let c = 0; c < last; c++) {
      cells[c](i);
      out.byte(COMMA);
    }
    if (last >= 0) cells[last](i);
    out.byte(NEWLINE);
  }
}
