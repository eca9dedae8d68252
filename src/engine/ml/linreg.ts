// Linear regression (ordinary least squares, or ridge with --alpha > 0): the centred Gram matrix
// is accumulated per partition and solved in float64 by Cholesky, falling back to the
// minimum-norm solution when X is rank-deficient. The intercept is not penalised (as scikit-learn).

import { ddCombine } from './double-double.js';
import { solveNormalEquations } from './linalg.js';
import type { GramArgs, GramResult, ResidualArgs } from './linreg-tasks.js';
import { modelBase, type LinRegModel } from './model.js';
import type { PartitionedMatrix } from './partitioned.js';
import { columnMoments } from './stats.js';
import type { DDArray } from './double-double.js';
import { UsageError } from '../errors.js';

export interface LinRegParams {
  fitIntercept?: boolean;
  /** Ridge penalty; 0 is ordinary least squares. */
  alpha?: number;
  /** Name of the target column, recorded in the model. */
  target?: string;
}

export async function fitLinReg(data: PartitionedMatrix, params: LinRegParams = {}): Promise<LinRegModel> {
  const { fitIntercept = true, alpha = 0, target = 'y' } = params;
  if (!(alpha >= 0)) throw new UsageError(`--alpha must be a non-negative number, got ${alpha}`);
  const d = data.cols;
  const moments = await columnMoments(data);
  const shift = fitIntercept ? moments.mean.slice(0, d) : new Float64Array(d);
  const yShift = fitIntercept ? moments.mean[d] : 0;
  const parts = await data.map<GramResult>('linreg.gram', { shift, yShift } satisfies GramArgs);
  const xtx = ddCombine(parts.map((p) => p.xtx), d * d);
  const xty = ddCombine(parts.map((p) => p.xty), d);
  for (let i = 0; i < d; i++) {
    for (let j = 0; j < i; j++) xtx[i * d + j] = xtx[j * d + i]; // mirror the upper triangle
    xtx[i * d + i] += alpha;
  }
  const { x: coefficients, rankDeficient } = solveNormalEquations(xtx, xty, d);
  let intercept = 0;
  if (fitIntercept) {
    intercept = yShift;
    for (let j = 0; j < d; j++) intercept -= coefficients[j] * shift[j];
  }
  const sse = ddCombine(await data.map<DDArray>('linreg.residualSumSq', { coefficients, intercept } satisfies ResidualArgs), 1)[0];
  const sst = moments.centredSumSq[d];
  return {
    kind: 'linreg',
    ...modelBase(data.featureNames, target, [], { fitIntercept, alpha },
      { r2: rSquared(sse, sst), rows: moments.rows, rankDeficient: rankDeficient ? 1 : 0 }),
    coefficients,
    intercept,
  };
}

/** 1 - SSE/SST, with scikit-learn's convention for a constant target. */
export function rSquared(sse: number, sst: number): number {
  if (sst === 0) return sse === 0 ? 1 : 0;
  return 1 - sse / sst;
}
