// Larger partitions for work the GPU workers take when CPU workers run beside them (the default
// mode). The block size is chosen before the run knows its tasks, and CPU workers need small
// partitions to share work the GPUs do not speed up; once a stream's tasks turn out to be ones
// the GPU workers take, consecutive CSV chunks of a file are merged into partitions of about
// RunContext.gpuBlocksize: a chunk costs a GPU worker a few round trips whatever its size
// (BENCHMARKS.md, "Larger partitions for GPU workers alone"). A CPU worker that takes one (to time
// the CPU side) is backed up by an idle GPU worker, so it does not hold up the end. Merged chunks
// end at cuts the smaller ones had, so guessed cuts are confirmed as before, and output bytes
// never depend on partition sizes. A group-by with many groups per partition is not a task the
// GPU workers take beside CPU workers (group-cardinality.ts), so it keeps the small chunks; one
// whose partitions would hold many groups but few per row takes partitions twice as large, on GPU
// workers alone too (group-cardinality.ts, gpuGroupByPlan).

import type { RunContext } from './context.js';
import type { Fragment, Terminal } from './fragment.js';
import type { Stream } from './stream.js';

/**
 * The stream with its CSV chunks merged k at a time (k = partitionBytes / blocksize, per file) when
 * GPU workers would take its tasks (beside CPU workers, those the GPU speeds up; alone, all).
 */
export function inGpuPartitions(stream: Stream, terminal: Terminal, ctx: RunContext, partitionBytes = ctx.gpuBlocksize ?? 0): Stream {
  const per = Math.round(partitionBytes / ctx.blocksize);
  const first = stream.fragments[0];
  // An epilogue numbers its fragments after the stream's: left as they are.
  if (per < 2 || first === undefined || (stream.epilogues?.length ?? 0) > 0 || !stream.fragments.every((f) => f.source.kind === 'csv')) return stream;
  if (!gpuWorkersTake(ctx, first, terminal)) return stream;
  const merged: Fragment[] = [];
  let run = 0;
  for (const f of stream.fragments) {
    const last = merged.at(-1);
    if (last && run < per && follows(last, f)) {
      merged[merged.length - 1] = joined(last, f);
      run++;
    } else {
      merged.push({ ...f, index: merged.length });
      run = 1;
    }
  }
  return { ...stream, fragments: merged };
}

/** Whether GPU workers would take a task like this one: all of them when they run alone. */
export function gpuWorkersTake(ctx: RunContext, fragment: Fragment, terminal: Terminal): boolean {
  return ctx.runner.gpuWorkersOnly === true || ctx.runner.prefersGpu?.({ fragment, terminal }) === true;
}

/** Whether `next` is the CSV chunk right after `f`'s in the same file. */
function follows(f: Fragment, next: Fragment): boolean {
  return f.source.kind === 'csv' && next.source.kind === 'csv' && f.source.chunk.path === next.source.chunk.path && f.source.chunk.end === next.source.chunk.start;
}

/** One fragment covering `f` and the chunk after it (same ops; the first chunk's line numbers). */
function joined(f: Fragment, next: Fragment): Fragment {
  if (f.source.kind !== 'csv' || next.source.kind !== 'csv') throw new Error('joined: CSV chunks only');
  return { ...f, source: { ...f.source, chunk: { ...f.source.chunk, end: next.source.chunk.end } }, bytes: f.bytes + next.bytes };
}
