// A numeric design matrix held by the workers, for ML training: each partition of the input is
// parsed once into rows × features float64 and stays resident in the worker that loaded it
// (uploaded once, not once per iteration). Trainers call `map(task, args)`: every worker runs the
// named partition task over the partitions it holds, and the parent orders the results by
// partition. A worker lost mid-training takes its partitions with it: they are loaded again on
// the remaining workers and the map is repeated (tasks are pure, so repeating them is safe).

import { randomUUID } from 'node:crypto';
import { RuntimeFailure } from '../errors.js';
import type { PartitionedMatrix } from '../ml/partitioned.js';
import type { RunContext } from './context.js';
import { NO_SOURCE, type MatrixKernels, type Task } from './fragment.js';
import { decodeMappedPairs } from './mapped-pairs.js';
import { pollFor } from './hot-wait.js';
import { WorkerLost } from './pool.js';
import { runStream, type Stream } from './stream.js';

const MAX_RELOADS = 3;
/** How long the parent polls for a map's answers before it sleeps until they come (hot-wait.ts). */
const MAP_POLL_MS = 50;

export interface ResidentMatrix extends PartitionedMatrix {
  /** Frees the partitions in every worker. */
  release(): Promise<void>;
}

/**
 * `kernels`: the trainer runs these GPU kernels over the rows (then only GPU workers hold them, on
 * their device); null: none. `targetLabels`: a classifier's classes (a string target's values, an
 * int64 target's as decimal text); the target is loaded as their indices.
 */
export async function loadResidentMatrix(stream: Stream, features: string[], target: string | null, ctx: RunContext, kernels: MatrixKernels | null,
  targetLabels: string[] | null = null): Promise<ResidentMatrix> {
  const matrixId = randomUUID();
  const load = { kind: 'load-matrix' as const, matrixId, features, target, targetLabels, kernels };
  const rowsOf = new Map<number, number>();
  await runStream(ctx, stream, load, 'load rows', (r, f) => { rowsOf.set(f.index, r.rows); });
  const indices = stream.fragments.map((f) => f.index);
  const firstRows: number[] = [];
  let total = 0;
  for (const i of indices) { firstRows[i] = total; total += rowsOf.get(i) ?? 0; }

  const onGpus = kernels !== null && (ctx.runner.gpuWorkers ?? 0) > 0;
  const reload = async (missing: number[]) => {
    const again: Stream = { schema: stream.schema, fragments: stream.fragments.filter((f) => missing.includes(f.index)) };
    await runStream(ctx, again, load, 'reload rows', () => {});
  };

  return {
    featureNames: features,
    rows: total,
    cols: features.length,
    async map<R>(task: string, args: unknown): Promise<R[]> {
      const request: Task = { fragment: NO_SOURCE, terminal: { kind: 'map-matrix', matrixId, task, args, firstRows } };
      for (let attempt = 0; ; attempt++) {
        let results;
        // A map over GPU workers answers within milliseconds (a k-means round: 3–6 ms on H200s);
        // CPU workers take longer, and the polling core would be taken from them.
        const stopPolling = onGpus ? pollFor(MAP_POLL_MS) : () => {};
        try {
          results = await ctx.runner.runOnEach(request, `ml ${task}`);
        } catch (err) {
          // Ask again: the survivors answer, and what the lost worker held shows up as missing.
          if (err instanceof WorkerLost && attempt < MAX_RELOADS) continue;
          throw err;
        } finally {
          stopPolling();
        }
        const byIndex = new Map<number, unknown>();
        for (const r of results) {
          const mapped = [...(r.mapped ?? []), ...(r.mappedPairs ? decodeMappedPairs(task, args, r.mappedPairs) : [])];
          for (const m of mapped) if (!byIndex.has(m.index)) byIndex.set(m.index, m.value);
        }
        const missing = indices.filter((i) => !byIndex.has(i));
        if (missing.length === 0) return indices.map((i) => byIndex.get(i) as R);
        if (attempt >= MAX_RELOADS) throw new RuntimeFailure(`lost ${missing.length} partitions of the training data ${MAX_RELOADS} times; giving up`);
        ctx.warn(`a worker was lost during ${task}; reloading ${missing.length} partition(s) on the remaining workers`);
        await reload(missing);
      }
    },
    async release(): Promise<void> {
      await ctx.runner.runOnEach({ fragment: NO_SOURCE, terminal: { kind: 'drop-matrix', matrixId } }, 'ml release').catch(() => {});
    },
  };
}
