// The optimiser: a fixed sequence of pure plan -> plan passes.

import type { PlanNode } from '../plan/nodes.js';
import { chooseJoinStrategies } from './join-strategy.js';
import { pushdownProjection } from './projection-pushdown.js';
import { splitAggregates } from './split-aggregates.js';

export interface OptimizeOptions { memoryLimit: number }

export function optimize(plan: PlanNode, opts: OptimizeOptions): PlanNode {
  const projected = pushdownProjection(plan);
  const split = splitAggregates(projected);
  return chooseJoinStrategies(split, { memoryLimit: opts.memoryLimit });
}
