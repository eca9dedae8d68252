// Per-partition work of the random forest: a row sample for the bin edges, and the partition's
// rows binned. (Trees are grown afterwards on all binned rows: forest.ts.)

import { RuntimeFailure } from '../errors.js';
import { binMatrix } from './forest-bins.js';
import type { MatrixPartition } from './partitioned.js';
import { rowUniform } from './random.js';

export interface SampleResult { rows: number; x: Float64Array }

/** Rows whose hash under `key` is below `fraction`: a sample that does not depend on partitioning. */
function sample(part: MatrixPartition, { key, fraction }: { key: number; fraction: number }): SampleResult {
  const keep: number[] = [];
  for (let r = 0; r < part.rows; r++) if (rowUniform(key, part.firstRow + r) < fraction) keep.push(r);
  const x = new Float64Array(keep.length * part.cols);
  if (part.column) {
    // Rows outer: the sample is written in order, the columns read forward.
    const columns = Array.from({ length: part.cols }, (_, j) => part.column!(j));
    keep.forEach((r, i) => { for (let j = 0; j < columns.length; j++) x[i * columns.length + j] = columns[j][r]; });
  } else {
    keep.forEach((r, i) => x.set(part.x.subarray(r * part.cols, (r + 1) * part.cols), i * part.cols));
  }
  return { rows: keep.length, x };
}

export interface BinResult { index: number; rows: number; bins: Uint8Array; y: Float64Array }

function bin(part: MatrixPartition, { edges }: { edges: Float64Array[] }): BinResult {
  if (!part.y) throw new RuntimeFailure('random forest training needs a target column in every partition');
  return { index: part.index, rows: part.rows, bins: binMatrix(part, edges), y: part.y.slice() };
}

export const FOREST_TASKS = { 'rf.sample': sample, 'rf.bin': bin };
