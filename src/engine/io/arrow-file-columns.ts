// Float64 columns of an Arrow IPC file chunk read where they lie in the file (arrow-ipc.ts
// float64Extents), without reading its record batches: a GPU worker loading ML rows reads them
// straight into staging memory (no host copy, no fresh memory to fault in), and reads single
// rows or whole columns again only when CPU code asks for them.

import { closeSync, fstatSync, openSync, statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { DataError } from '../errors.js';
import type { Float64Extents } from './arrow-ipc.js';
import type { BytePiece, ColumnBlock } from './byte-pieces.js';
import type { InputName } from './input-error.js';
import { readInto, readIntoAsync } from './csv/input-file.js';

/** How much larger than the columns' own bytes a batch's range may be and still be read whole (the columns lie close together). */
const MAX_BLOCK_SPREAD = 1.5;

export class ArrowFileColumns {
  readonly rows: number;
  /** First row of each batch, and the row count at the end. */
  private readonly starts: number[] = [0];
  /** The file's size and modification time when its extents were read: every later read checks them. */
  private readonly stamp: { size: number; mtimeMs: number };

  constructor(private readonly file: InputName, private readonly extents: Float64Extents) {
    for (const n of extents.batchRows) this.starts.push(this.starts[this.starts.length - 1] + n);
    this.rows = this.starts[this.starts.length - 1];
    const { size, mtimeMs } = statSync(file.path);
    this.stamp = { size, mtimeMs };
  }

  /** The file, opened for `pieces` (the caller closes it); DataError if it changed since the extents were read. */
  async open(): Promise<FileHandle> {
    const handle = await open(this.file.path, 'r');
    try {
      this.checkUnchanged(await handle.stat());
      return handle;
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /** Column j's pieces, batch by batch, read through `handle` (from `open`) when copied. */
  pieces(handle: FileHandle, j: number): BytePiece[] {
    return this.extents.batchRows.map((rows, b) => ({
      byteLength: rows * 8,
      copyTo: (view, offset) => this.readInto(handle, view, this.extents.offsets[b][j] + offset),
    }));
  }

  /**
   * Each batch's columns as one range of the file, read with one call (the bytes between the
   * columns too), or null when the columns lie too far apart in some batch (MAX_BLOCK_SPREAD) or
   * off 8-byte boundaries; the caller closes `handle`.
   */
  blocks(handle: FileHandle): ColumnBlock[] | null {
    const out: ColumnBlock[] = [];
    for (let b = 0; b < this.extents.batchRows.length; b++) {
      const rows = this.extents.batchRows[b], offsets = this.extents.offsets[b];
      const start = Math.min(...offsets), end = Math.max(...offsets) + rows * 8;
      if (offsets.some((o) => o % 8 !== 0) || (end - start) > MAX_BLOCK_SPREAD * offsets.length * rows * 8) return null;
      out.push({ rows, byteLength: end - start, columnOffsets: offsets.map((o) => o - start), copyTo: (view, offset) => this.readInto(handle, view, start + offset) });
    }
    return out;
  }

  private async readInto(handle: FileHandle, view: Uint8Array, position: number): Promise<void> {
    if (await readIntoAsync(handle.fd, view, position) !== view.length) throw this.truncated();
  }

  /** Column j, read whole. */
  column(j: number): Float64Array {
    const out = new Float64Array(this.rows);
    this.withFile((fd) => this.extents.batchRows.forEach((rows, b) => this.readAt(fd, new Uint8Array(out.buffer, this.starts[b] * 8, rows * 8), this.extents.offsets[b][j])));
    return out;
  }

  /** Row r's values in columns 0 … count - 1. */
  row(r: number, count: number): Float64Array {
    let b = 0;
    while (this.starts[b + 1] <= r) b++;
    const out = new Float64Array(count);
    this.withFile((fd) => { for (let j = 0; j < count; j++) this.readAt(fd, new Uint8Array(out.buffer, j * 8, 8), this.extents.offsets[b][j] + (r - this.starts[b]) * 8); });
    return out;
  }

  private withFile(read: (fd: number) => void): void {
    const fd = openSync(this.file.path, 'r');
    try {
      this.checkUnchanged(fstatSync(fd));
      read(fd);
    } finally {
      closeSync(fd);
    }
  }

  private checkUnchanged(now: { size: number; mtimeMs: number }): void {
    if (now.size !== this.stamp.size || now.mtimeMs !== this.stamp.mtimeMs) {
      throw new DataError('the file changed during the run (its rows are read again from it when needed); run again on a file that stays as it is', { file: this.file.displayName });
    }
  }

  private readAt(fd: number, view: Uint8Array, position: number): void {
    if (readInto(fd, view, position) !== view.length) throw this.truncated();
  }

  private truncated(): DataError {
    return new DataError('the file ended before the rows it held when the run began (changed or truncated during the run?)', { file: this.file.displayName });
  }
}
