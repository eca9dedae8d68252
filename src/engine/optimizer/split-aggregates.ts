// Aggregate -> FinalAggregate(PartialAggregate(input)): partial states are computed next to the
// data (per partition, on a worker) and only they travel to the combine step.

import type { PlanNode } from '../plan/nodes.js';
import { mapChildren } from './rewrite.js';

export function splitAggregates(node: PlanNode): PlanNode {
  const rewritten = mapChildren(node, splitAggregates);
  if (rewritten.kind !== 'aggregate') return rewritten;
  return {
    kind: 'final-aggregate',
    spec: rewritten.spec,
    input: { kind: 'partial-aggregate', spec: rewritten.spec, input: rewritten.input },
  };
}

