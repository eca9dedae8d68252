// Chooses how each join runs: broadcast the right side when it is small (every worker gets a copy
// and probes it with its own partitions of the left side, no shuffle), otherwise hash-partition both
// sides into buckets that each fit in memory, spilling them to the temp dir.
// The choice depends only on input sizes and --memory-limit, and the output bytes not even on
// that: a partitioned join gathers its rows back into the broadcast join's order (bucket-join.ts).

import type { JoinNode, PlanNode } from '../plan/nodes.js';
import { scansOf } from '../plan/nodes.js';
import { mapChildren } from './rewrite.js';

export interface JoinStrategyOptions { memoryLimit: number }

/** Broadcast when the right side is at most this share of the memory limit. */
const BROADCAST_SHARE = 1 / 8;
/** Each bucket pair of a partitioned join should take at most this share of the memory limit. */
const BUCKET_SHARE = 1 / 8;
/** In-memory columns take more room than CSV text; a rough factor for estimates. */
const IN_MEMORY_FACTOR = 1.5;

export function chooseJoinStrategies(node: PlanNode, opts: JoinStrategyOptions): PlanNode {
  const rewritten = mapChildren(node, (c) => chooseJoinStrategies(c, opts));
  if (rewritten.kind !== 'join') return rewritten;
  return decide(rewritten, opts);
}

function decide(join: JoinNode, { memoryLimit }: JoinStrategyOptions): JoinNode {
  const right = estimateBytes(join.right);
  if (right <= memoryLimit * BROADCAST_SHARE) return { ...join, strategy: 'broadcast', buckets: undefined };
  const total = right + estimateBytes(join.left);
  const buckets = nextPowerOfTwo(Math.ceil(total / (memoryLimit * BUCKET_SHARE)));
  return { ...join, strategy: 'partitioned', buckets: Math.min(Math.max(buckets, 2), 4096) };
}

/** Bytes a subtree would hold in memory: its scans' sizes scaled by the share of columns read. */
export function estimateBytes(node: PlanNode): number {
  let bytes = 0;
  for (const scan of scansOf(node)) {
    const share = scan.columns === null ? 1 : scan.columns.length / Math.max(1, scan.schema.length);
    bytes += scan.files.reduce((s, f) => s + f.bytes, 0) * share * IN_MEMORY_FACTOR;
  }
  return bytes;
}

function nextPowerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}
