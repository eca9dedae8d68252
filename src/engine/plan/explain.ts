// Human-readable (`explain`) and Graphviz (`--dot`) renderings of a plan.

import { childrenOf, type PlanNode } from './nodes.js';

function label(node: PlanNode): string {
  switch (node.kind) {
    case 'scan': {
      const files = node.files.map((f) => f.displayName).join(', ');
      const cols = node.columns === null ? 'all columns' : `columns [${node.columns.join(', ')}]`;
      return `Scan ${node.format} ${files} (${cols} of ${node.schema.length})`;
    }
    case 'generate': {
      const p = node.params;
      const cols = node.columns === null ? '' : ` (columns [${node.columns.join(', ')}])`;
      return `Generate make-${node.generator}: ${p.nSamples} rows × ${p.nFeatures} features, seed ${p.seed ?? 0}${cols}`;
    }
    case 'project':
      return `Project [${node.columns.join(', ')}]`;
    case 'aggregate':
    case 'partial-aggregate':
    case 'final-aggregate': {
      const name = { aggregate: 'Aggregate', 'partial-aggregate': 'PartialAggregate (per partition)', 'final-aggregate': 'FinalAggregate (combine in partition order, sort by keys)' }[node.kind];
      const aggs = node.spec.aggs.map((a) => `${a.func}(${a.column ?? ''})`).join(', ');
      return `${name} by [${node.spec.keys.join(', ')}]: ${aggs}${node.spec.dropna ? ' (drop null keys)' : ''}`;
    }
    case 'join': {
      const on = node.spec.leftOn.map((l, i) => (l === node.spec.rightOn[i] ? l : `${l}=${node.spec.rightOn[i]}`)).join(', ');
      const strategy = node.strategy === undefined ? '' : node.strategy === 'broadcast' ? ' [broadcast right]' : ` [hash-partitioned, ${node.buckets} buckets]`;
      return `Join ${node.spec.how} on ${on}${strategy}`;
    }
    case 'predict':
      return `Predict with ${node.modelPath}${node.proba ? ' (probabilities)' : ''}`;
  }
}

export function explainText(plan: PlanNode): string {
  const lines: string[] = [];
  const walk = (node: PlanNode, depth: number) => {
    lines.push(`${'  '.repeat(depth)}${depth > 0 ? '└─ ' : ''}${label(node)}`);
    for (const child of childrenOf(node)) walk(child, depth + 1);
  };
  walk(plan, 0);
  return lines.join('\n') + '\n';
}

export function explainDot(plan: PlanNode): string {
  const lines = ['digraph plan {', '  rankdir=BT;', '  node [shape=box, fontname="monospace"];'];
  let next = 0;
  const walk = (node: PlanNode): string => {
    const id = `n${next++}`;
    lines.push(`  ${id} [label=${JSON.stringify(label(node))}];`);
    for (const child of childrenOf(node)) lines.push(`  ${walk(child)} -> ${id};`);
    return id;
  };
  walk(plan);
  lines.push('}');
  return lines.join('\n') + '\n';
}
