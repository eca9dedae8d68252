// Bytes a consumer copies into memory of its own (a GPU worker's mapped staging memory), from
// wherever they are: from memory, or read from a file straight into it (arrow-file-columns.ts), so
// no copy is made in between. Uploads take these (kernels/ml-matrix.ts uploadColumns, uploadBlocks).

/** Float64 words of a column piece: `copyTo` puts bytes [offset, offset + view.length) of it into `view`. */
export interface BytePiece {
  byteLength: number;
  copyTo(view: Uint8Array, offset: number): void | Promise<void>;
}

/**
 * Rows of every column at once, as a record batch lies in a file: column j's `rows` float64
 * values at byte columnOffsets[j] (a multiple of 8) of the block's `byteLength` bytes.
 */
export interface ColumnBlock extends BytePiece {
  rows: number;
  columnOffsets: readonly number[];
}

/** A piece held in memory. */
export function memoryPiece(values: Float64Array): BytePiece {
  return { byteLength: values.byteLength, copyTo: (view, offset) => { view.set(new Uint8Array(values.buffer, values.byteOffset + offset, view.length)); } };
}
