// A tiny helper that keeps optimiser passes pure: rebuild a node with rewritten children.

import type { PlanNode } from '../plan/nodes.js';

export function mapChildren(node: PlanNode, f: (child: PlanNode) => PlanNode): PlanNode {
  switch (node.kind) {
    case 'scan':
    case 'generate':
      return node;
    case 'join':
      return { ...node, left: f(node.left), right: f(node.right) };
    case 'final-aggregate': {
      const input = f(node.input);
      if (input.kind !== 'partial-aggregate') throw new Error('final-aggregate must sit on a partial-aggregate');
      return { ...node, input };
    }
    default:
      return { ...node, input: f(node.input) } as PlanNode;
  }
}
