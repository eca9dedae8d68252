// The combine step of a groupby, in the parent: partial states arrive in partition order and are
// merged in that order. While the merged state is small it stays in the parent. Past a quarter of
// --memory-limit, or past SLICE_AFTER_GROUPS groups when several workers could share the merge,
// every partial goes to sorted slices in the temp dir instead, and each key range is merged and
// finalised by a worker (partial-slices.ts). Every group sees the same sequence of merges either
// way, so neither spilling nor the number of workers changes the output bytes. A key sample that
// predicts about as many groups as rows in a partition skips partials altogether: the rows are
// exchanged by key range and each range aggregated once (row-exchange.ts).

import { randomBytes } from 'node:crypto';
import type { FinalAggregateNode } from '../plan/nodes.js';
import type { Column } from '../batch.js';
import { aggregateOutputSchema, finalizeAggregate, PartialAggregator, PartialMerger } from '../ops/aggregate/index.js';
import type { SpillRange, Terminal } from './fragment.js';
import { exchangeRanges, exchangeSplitters, rangeCount, rowsRangeFragments } from './row-exchange.js';
import { GPU_MAX_BLOCKSIZE, type RunContext } from './context.js';
import { gpuWorkersTake, inGpuPartitions } from './gpu-partitions.js';
import { gpuGroupByPlan, sampleGroupKeys } from './group-cardinality.js';
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
  const { manyGroups, partitionBytes } = gpuPartitioning(stream, plain, ctx);
  const terminal = { ...plain, manyGroups };
  const input = inGpuPartitions(stream, terminal, ctx, partitionBytes);
  // About as many groups as rows in a partition, on CPU workers: the rows are exchanged by key
  // range instead of partially aggregated (row-exchange.ts).
  const first = input.fragments[0];
  const cpuTakes = first !== undefined && (manyGroups || !gpuWorkersTake(ctx, first, terminal));
  if (sliceDir !== undefined && workers >= 2 && cpuTakes && (input.epilogues?.length ?? 0) === 0) {
    const ranges = exchangeRanges(input.fragments.reduce((n, f) => n + f.bytes, 0), ctx.blocksize, workers);
    const splitters = await exchangeSplitters(input.fragments, input.schema, node.spec.keys, ranges);
    if (splitters !== null) return exchangeRows(input, node, splitters, ctx);
  }
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

/** The group-by's rows cut by key range in their partitions, then one fragment per range that aggregates its rows. */
async function exchangeRows(input: Stream, node: FinalAggregateNode, splitters: Column[], ctx: RunContext): Promise<Stream> {
  const prefix = `rows-${randomBytes(4).toString('hex')}`;
  const terminal = { kind: 'range-partition' as const, keys: node.spec.keys, splitters, dir: ctx.tmpDir, prefix };
  const pieces: (SpillRange | null)[][] = [];
  await runStream(ctx, input, terminal, 'groupby', (r) => { pieces.push(r.ranged!); });
  return { schema: aggregateOutputSchema(input.schema, node.spec), fragments: rowsRangeFragments(input.schema, node.spec, pieces, rangeCount(splitters)) };
}

/**
 * What a sample of the key at the start of the input says about a group-by the GPU workers would
 * take: whether the CPU workers take it instead, and the GPU partition size (gpuGroupByPlan).
 */
export function gpuPartitioning(stream: Stream, terminal: Terminal, ctx: RunContext): { manyGroups: boolean; partitionBytes?: number } {
  const first = stream.fragments[0];
  const base = ctx.gpuBlocksize;
  if (first === undefined || base === undefined || !gpuWorkersTake(ctx, first, terminal)) return { manyGroups: false };
  const sample = sampleGroupKeys(first, terminal);
  if (sample === null) return { manyGroups: false };
  return gpuGroupByPlan(sample, {
    base, inputBytes: stream.fragments.reduce((n, f) => n + f.bytes, 0), gpuWorkers: ctx.runner.gpuWorkers ?? 1,
    besideCpuWorkers: ctx.runner.gpuWorkersOnly !== true, largest: GPU_MAX_BLOCKSIZE,
  });
}
