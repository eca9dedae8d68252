// Turning typed column batches into the row-major float64 design matrix the trainers use.

import { int64AsNumber, int64Words, stringAt, type Batch, type Column, type Int64Column } from '../batch.js';
import { DataError, requireColumn } from '../errors.js';

export interface DesignMatrix { rows: number; cols: number; x: Float64Array; y: Float64Array | null }

/** The same values column by column, as the batch holds them (float64 columns are not copied). */
export interface DesignColumns { rows: number; columns: Float64Array[]; y: Float64Array | null }

/**
 * Numeric (float64, int64, bool, timestamp) columns `features` and optional `target` of a batch as
 * float64; nulls are data errors. `targetLabels`: a classifier's classes, the target read as their
 * indices in this list: a string target's values, or an int64 target's as decimal text (exact
 * where float64 would merge labels beyond 2^53).
 */
export function designColumns(batch: Batch, features: readonly string[], target: string | null, file?: string, targetLabels: readonly string[] | null = null): DesignColumns {
  const names = batch.schema.map((f) => f.name);
  const column = (name: string): Column => {
    requireColumn(name, names);
    return batch.columns[names.indexOf(name)];
  };
  return {
    rows: batch.length,
    columns: features.map((name) => numericValues(column(name), name, file)),
    y: target === null ? null : targetLabels ? labelCodes(column(target), target, targetLabels, file) : numericValues(column(target), target, file),
  };
}

/** Design columns of consecutive batches joined into one (the pieces themselves when there is one). */
export function joinDesignColumns(pieces: readonly DesignColumns[], cols: number): DesignColumns {
  if (pieces.length === 1) return pieces[0];
  const rows = pieces.reduce((s, p) => s + p.rows, 0);
  return {
    rows,
    columns: Array.from({ length: cols }, (_, j) => concatFloat64(pieces.map((p) => p.columns[j]))),
    y: pieces[0]?.y ? concatFloat64(pieces.map((p) => p.y!)) : null,
  };
}

/** The arrays end to end, in one new array. */
export function concatFloat64(arrays: readonly Float64Array[]): Float64Array {
  const out = new Float64Array(arrays.reduce((s, a) => s + a.length, 0));
  let at = 0;
  for (const a of arrays) { out.set(a, at); at += a.length; }
  return out;
}

/** The design matrix of a batch: its feature columns as rows × features, row-major. */
export function designMatrix(batch: Batch, features: readonly string[], target: string | null, file?: string, targetLabels: readonly string[] | null = null): DesignMatrix {
  const { rows, columns, y } = designColumns(batch, features, target, file, targetLabels);
  return { rows, cols: columns.length, x: rowMajor(columns, rows), y };
}

/** Columns side by side as one row-major matrix. */
export function rowMajor(columns: readonly Float64Array[], rows: number): Float64Array {
  const cols = columns.length;
  const x = new Float64Array(rows * cols);
  // Blocks of rows, all columns each: the block's part of x stays in cache (a whole column at a
  // time strided through x and missed the cache on every write).
  for (let r0 = 0; r0 < rows; r0 += TRANSPOSE_BLOCK_ROWS) {
    const r1 = Math.min(rows, r0 + TRANSPOSE_BLOCK_ROWS);
    for (let j = 0; j < cols; j++) {
      const v = columns[j];
      for (let r = r0; r < r1; r++) x[r * cols + j] = v[r];
    }
  }
  return x;
}

const TRANSPOSE_BLOCK_ROWS = 256;

/** A string column's values as their indices in `labels` (which holds every value); an int64 column's, `labels` being their decimal text. */
function labelCodes(col: Column, name: string, labels: readonly string[], file?: string): Float64Array {
  requireComplete(col, name, file);
  if (col.type === 'int64') return int64LabelCodes(col, name, labels, file);
  if (col.type !== 'string') throw new DataError(`column '${name}' holds ${col.type} values where class labels (strings) were found before`, { file, column: name });
  const index = new Map(labels.map((l, i) => [l, i]));
  const out = new Float64Array(col.offsets.length - 1);
  for (let r = 0; r < out.length; r++) {
    const code = index.get(stringAt(col, r));
    if (code === undefined) throw new DataError(`column '${name}' holds '${stringAt(col, r)}', not among its classes`, { file, column: name });
    out[r] = code;
  }
  return out;
}

function int64LabelCodes(col: Int64Column, name: string, labels: readonly string[], file?: string): Float64Array {
  const index = new Map(labels.map((l, i) => [BigInt(l), i]));
  const out = new Float64Array(col.values.length);
  for (let r = 0; r < out.length; r++) {
    const code = index.get(col.values[r]);
    if (code === undefined) throw new DataError(`column '${name}' holds ${col.values[r]}, not among its classes`, { file, column: name });
    out[r] = code;
  }
  return out;
}

/** Refuses a column with nulls (a data error naming the first). */
export function requireComplete(col: Column, name: string, file?: string): void {
  if (col.valid) {
    const row = col.valid.indexOf(0);
    if (row >= 0) throw new DataError(`null in column '${name}' (row ${row + 1} of its batch); machine learning needs complete rows`, { file, column: name });
  }
}

/** A numeric column's values as float64; nulls and strings are data errors. */
export function numericValues(col: Column, name: string, file?: string): Float64Array {
  requireComplete(col, name, file);
  switch (col.type) {
    case 'float64': return col.values;
    case 'bool': return Float64Array.from(col.values);
    case 'int64':
    case 'timestamp': {
      const w = int64Words(col);
      return Float64Array.from({ length: col.values.length }, (_, r) => int64AsNumber(w, r));
    }
    case 'string': throw new DataError(`column '${name}' holds strings; machine learning needs numeric columns`, { file, column: name });
  }
}
