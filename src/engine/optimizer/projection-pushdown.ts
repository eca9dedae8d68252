// Pushes the set of needed columns down to the scans, so readers parse only the columns a plan uses
// (a CSV reader skips converting the rest; Parquet reads only those column chunks).

import type { PlanNode } from '../plan/nodes.js';
import { schemaOf } from '../plan/schema.js';
import { joinColumnSources } from './join-columns.js';

export function pushdownProjection(plan: PlanNode): PlanNode {
  return push(plan, schemaOf(plan).map((f) => f.name));
}

/** Rewrites `node` so it produces at least `needed` (names of its output columns). */
function push(node: PlanNode, needed: readonly string[]): PlanNode {
  const want = new Set(needed); // lookups in wide schemas stay linear
  switch (node.kind) {
    case 'scan': {
      const order = node.columns ?? node.schema.map((f) => f.name);
      return { ...node, columns: order.filter((c) => want.has(c)) };
    }
    case 'generate': {
      const order = node.columns ?? schemaOf({ ...node, columns: null }).map((f) => f.name);
      return { ...node, columns: order.filter((c) => want.has(c)) };
    }
    case 'project': {
      const input = push(node.input, node.columns);
      // A projection that now matches its scan exactly adds nothing.
      if (input.kind === 'scan' && sameList(input.columns ?? [], node.columns)) return input;
      return { ...node, input };
    }
    case 'aggregate':
    case 'partial-aggregate': {
      const cols = unique([...node.spec.keys, ...node.spec.aggs.flatMap((a) => (a.column === null ? [] : [a.column]))]);
      return { ...node, input: push(node.input, cols) } as PlanNode;
    }
    case 'final-aggregate': {
      const input = push(node.input, needed);
      if (input.kind !== 'partial-aggregate') throw new Error('final-aggregate must sit on a partial-aggregate');
      return { ...node, input };
    }
    case 'join': {
      const leftSchema = schemaOf(node.left);
      const rightSchema = schemaOf(node.right);
      const sources = joinColumnSources(leftSchema, rightSchema, node.spec);
      const leftNeeded = new Set(node.spec.leftOn);
      const rightNeeded = new Set(node.spec.rightOn);
      for (const s of sources) {
        if (!want.has(s.output)) continue;
        if (s.left !== null) leftNeeded.add(s.left);
        if (s.right !== null) rightNeeded.add(s.right);
      }
      // A name read on one side stays on the other too: whether it is on both sides decides its
      // suffix, and so the output names the plan above was built against.
      const leftNames = new Set(leftSchema.map((f) => f.name)), rightNames = new Set(rightSchema.map((f) => f.name));
      for (const c of leftNeeded) if (rightNames.has(c)) rightNeeded.add(c);
      for (const c of rightNeeded) if (leftNames.has(c)) leftNeeded.add(c);
      return {
        ...node,
        left: push(node.left, leftSchema.map((f) => f.name).filter((c) => leftNeeded.has(c))),
        right: push(node.right, rightSchema.map((f) => f.name).filter((c) => rightNeeded.has(c))),
      };
    }
    case 'predict':
      // The model's features are checked at run time; keep every input column.
      return { ...node, input: push(node.input, schemaOf(node.input).map((f) => f.name)) } as PlanNode;
  }
}

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
