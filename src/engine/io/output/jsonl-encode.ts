// JSON Lines rows straight to bytes: one object per row, keys in schema order, '\n' after each.

import type { Batch } from '../../batch.js';
import { ByteBuffer } from './text-encode-buffer.js';
import { cellEncoder, estimatedCellBytes } from './value-encode.js';

const utf8 = new TextEncoder();
const OPEN = 0x7b, CLOSE = 0x7d, NEWLINE = 0x0a;

/** Rows [start, end) of a batch as JSONL bytes. */
export function encodeJsonlRows(batch: Batch, start = 0, end = batch.length): Uint8Array {
  const out = new ByteBuffer(0);
  appendJsonlRows(out, batch, start, end);
  return out.view();
}

/** Appends rows [start, end) of a batch to `out` as JSONL. */
export function appendJsonlRows(out: ByteBuffer, batch: Batch, start = 0, end = batch.length): void {
  // '{"name":' before the first value, ',"name":' before the others.
  const keys = batch.schema.map((f, c) => utf8.encode((c === 0 ? '{' : ',') + JSON.stringify(f.name) + ':'));
  out.reserve(batch.columns.reduce((sum, c, k) => sum + estimatedCellBytes(c, start, end) + keys[k].length * (end - start), 2 * (end - start)));
  const cells = batch.columns.map((c) => cellEncoder(c, 'jsonl', out));
  for (let i = start; i < end; i++) {
    if (cells.length === 0) out.byte(OPEN);
    for (let c = 0; c < cells.length; c++) {
      out.append(keys[c]);
      cells[c](i);
    }
    out.byte(CLOSE);
    out.byte(NEWLINE);
  }
}
