// Per-partition work of linear regression: the centred Gram matrix Xᵀ X and Xᵀ y, and the
// residual sum of squares of a fitted model, in double-double.

import { RuntimeFailure } from '../errors.js';
import { ddAdd, ddZeros, type DDArray } from './double-double.js';
import type { MatrixPartition } from './partitioned.js';

export interface GramArgs { shift: Float64Array; yShift: number }
export interface GramResult { xtx: DDArray; xty: DDArray }

function targetOf(part: MatrixPartition): Float64Array {
  if (!part.y) throw new RuntimeFailure('linear regression needs a target column in every partition');
  return part.y;
}

/** Upper triangle of (X - shift)ᵀ(X - shift), plus (X - shift)ᵀ(y - yShift). */
function gram(part: MatrixPartition, { shift, yShift }: GramArgs): GramResult {
  const { rows, cols: d, x } = part;
  const y = targetOf(part);
  const xtx = ddZeros(d * d), xty = ddZeros(d);
  const row = new Float64Array(d);
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < d; j++) row[j] = x[r * d + j] - shift[j];
    const yc = y[r] - yShift;
    for (let i = 0; i < d; i++) {
      const xi = row[i];
      for (let j = i; j < d; j++) ddAdd(xtx, i * d + j, xi * row[j]);
      ddAdd(xty, i, xi * yc);
    }
  }
  return { xtx, xty };
}

export interface ResidualArgs { coefficients: Float64Array; intercept: number }

/** Σ (y - x·w - b)² over the partition. */
function residualSumSq(part: MatrixPartition, { coefficients, intercept }: ResidualArgs): DDArray {
  const { rows, cols: d, x } = part;
  const y = targetOf(part);
  const sse = ddZeros(1);
  for (let r = 0; r < rows; r++) {
    let pred = intercept;
    for (let j = 0; j < d; j++) pred += x[r * d + j] * coefficients[j];
    const e = y[r] - pred;
    ddAdd(sse, 0, e * e);
  }
  return sse;
}

export const LINREG_TASKS = { 'linreg.gram': gram, 'linreg.residualSumSq': residualSumSq };
