// The combine step of a groupby, in the parent: partial states arrive in partition order and are
// merged in that order. While the merged state is small it stays in the parent. Past a quarter of
// --memory-limit, or past SLICE_AFTER_GROUPS groups when several workers could share the merge,
// every partial goes to sorted slices in the temp dir instead, and each key range is merged and
// finalised by a worker (partial-slices.ts). Every group sees the same sequence of merges either
// way, so neither spilling nor the number of workers changes the output bytes.

import type { FinalAggregateNode } from '../plan/nodes.js';
import { aggregateOutputSchema, finalizeAggregate, PartialAggregator, PartialMerger } from '../ops/aggregate/index.js';
import type { RunContext } from './context.js';
import type { Terminal } from './fragment.js';
import { inGpuPartitions } from './gpu-partitions.js';
import { manyGroupsPerPartition } from './group-cardinality.js';
import { SliceCombine } from './partial-slices.js';
import { concurrencyOf } from './pool.js';
import { runStream, type Stream } from './stream.js';

/** Share of --memory-limit the merged state may hold in the parent. */
const STATE_SHARE = 1 / 4;
/** Groups past which the merge goes to the workers, when there are two or more. */
const SLICE_AFTER_GROUPS = 1 << 20;
/** Most key ranges a merge is cut into. */
const MAX_RANGES = 4096;

export async function aggregateStream(node: FinalAggregateNode, stream: Stream, ctx: RunContext): Promise<Stream> {
  const workers = ctx.runner.inProcess ? 1 : concurrencyOf(ctx.runner);
  const sliceDir = ctx.runner.inProcess ? undefined : ctx.tmpDir;
  const plain = { kind: 'partial-aggregate' as const, spec: node.spec, inputSchema: stream.schema, sliceDir };
  const terminal = { ...plain, manyGroups: manyGroupsForGpus(stream, plain, ctx) };
  const input = inGpuPartitions(stream, terminal, ctx);
  const budget = ctx.memoryLimit * STATE_SHARE;
  const schema = aggregateOutputSchema(input.schema, node.spec);
  let merger = new PartialMerger();
  let slices: SliceCombine | null = null;
  const toSlices = (): SliceCombine => {
    const combine = new SliceCombine(schema, ctx.tmpDir);
    const held = merger.result();
    if (held !== null) combine.addPartial(held); // the partials merged so far come first
    merger = new PartialMerger();
    return combine;
  };
  await runStream(ctx, input, terminal, 'groupby', (r) => {
    if (r.slices) { (slices ??= toSlices()).add(r.slices); return; }
    if (slices !== null) { slices.addPartial(r.partial!); return; }
    merger.add(r.partial!);
    if (merger.bytes() > budget || (workers >= 2 && merger.groups() > SLICE_AFTER_GROUPS)) slices = toSlices();
  });
  const combine = slices as SliceCombine | null;
  if (combine !== null) {
    // Ranges for every worker to take a few, and each of about half the budget.
    const ranges = Math.min(MAX_RANGES, Math.max(4 * workers, Math.ceil((2 * combine.heldBytes()) / budget)));
    return { schema, fragments: combine.fragments(ranges) };
  }
  const state = merger.result() ?? new PartialAggregator(input.schema, node.spec).finish();
  const batch = finalizeAggregate(state);
  return { schema: batch.schema, fragments: [{ index: 0, source: { kind: 'batch', batch }, ops: [], bytes: 0 }] };
}

/**
 * Beside CPU workers, whether a sample of the key puts many groups per row in a GPU-sized
 * partition: then the CPU workers take the tasks (group-cardinality.ts).
 */
function manyGroupsForGpus(stream: Stream, terminal: Terminal, ctx: RunContext): boolean {
  const first = stream.fragments[0];
  return first !== undefined && ctx.gpuBlocksize !== undefined && ctx.runner.prefersGpu?.({ fragment: first, terminal }) === true
    && manyGroupsPerPartition(first, terminal, ctx.gpuBlocksize);
}
