// What a GPU worker does with one task: ML design-matrix tasks keep their partitions on the device
// (gpu-matrix.ts); a random forest's trees grow there (gpu-forest.ts); partial aggregates the GPU covers run there
// (over a broadcast join: over its left rows, join-aggregate.ts). Over a CSV
// chunk the GPU parses the bytes itself (gpu-csv-aggregate.ts) when it can; otherwise rows are read
// and parsed on the CPU of this process with the same reader as CPU workers. Every other task,
// and any partition whose GPU aggregation fails while the device is still alive, runs the CPU code.

import { RuntimeFailure } from '../errors.js';
import type { GpuContext } from '../gpu/device.js';
import { PartialAggregator } from '../ops/aggregate/index.js';
import type { FragmentResult, Task } from './fragment.js';
import { isMatrixTask, runGpuMatrixTask } from './gpu-matrix.js';
import { growTreesTaskOnGpu } from './gpu-forest.js';
import { gpuPartialAggregate, gpuSupports } from './gpu-aggregate.js';
import { gpuCsvOptionsFromEnv, gpuCsvPartialAggregate } from './gpu-csv-aggregate.js';
import type { ResidentCache } from './gpu-resident.js';
import { runTask, type BroadcastCache } from './run-fragment.js';
import { aggregateBelowJoin, runAggregateBelowJoin } from './join-aggregate.js';

export interface GpuWorkerState {
  gpu: GpuContext;
  /** Device data kept between tasks (the hook for iterative plans; see gpu-resident.ts). */
  resident: ResidentCache;
}

/** The device was lost: the task must be retried on another GPU, not reported as its own error. */
export class DeviceLost extends RuntimeFailure {}

/**
 * Whether the task may run the kernels a GPU worker compiles when it starts (gpu-warmup.ts: the CSV
 * and group-by path), so it waits for that warm-up; ML tasks compile their own (a matrix's while it
 * loads) and need only the device checks.
 */
export function usesWarmedKernels(task: Task): boolean {
  return !isMatrixTask(task) && task.terminal.kind !== 'grow-trees';
}

export async function runGpuTask(task: Task, cache: BroadcastCache, worker: GpuWorkerState): Promise<FragmentResult> {
  const { terminal, fragment } = task;
  if (isMatrixTask(task)) return matrixOnGpu(task, cache, worker);
  if (terminal.kind === 'grow-trees') return treesOnGpu(terminal, worker);
  const below = aggregateBelowJoin(task);
  if (below !== null) return runAggregateBelowJoin(below, cache, (t) => runGpuTask(t, cache, worker));
  if (terminal.kind !== 'partial-aggregate' || !gpuSupports(terminal.spec, terminal.inputSchema)) return runTask(task, cache);
  const direct = await csvOnGpu(task, worker);
  if (!('warning' in direct)) return direct;
  const rows = await runTask({ fragment, terminal: { kind: 'collect' } }, cache);
  if (direct.warning) rows.warnings.push(direct.warning);
  try {
    const partial = await gpuPartialAggregate(worker.gpu, rows.batches!, terminal.inputSchema, terminal.spec);
    return { partial, matched: rows.matched, rows: rows.rows, warnings: rows.warnings };
  } catch (err) {
    if (worker.gpu.lostReason) throw new DeviceLost(`GPU device lost: ${worker.gpu.lostReason}`);
    const agg = new PartialAggregator(terminal.inputSchema, terminal.spec);
    for (const b of rows.batches!) agg.add(b);
    const why = err instanceof Error ? err.message : String(err);
    return { partial: agg.finish(), matched: rows.matched, rows: rows.rows, warnings: [...rows.warnings, `GPU aggregation of partition ${fragment.index} failed (${why}); it ran on the CPU`] };
  }
}

/** ML design-matrix tasks: partitions resident on the device (gpu-matrix.ts). */
async function matrixOnGpu(task: Task, cache: BroadcastCache, worker: GpuWorkerState): Promise<FragmentResult> {
  try {
    return await runGpuMatrixTask(task, cache, worker.gpu);
  } catch (err) {
    if (worker.gpu.lostReason) throw new DeviceLost(`GPU device lost: ${worker.gpu.lostReason}`);
    throw err;
  }
}

/** A random forest's trees (gpu-forest.ts). */
async function treesOnGpu(terminal: Extract<Task['terminal'], { kind: 'grow-trees' }>, worker: GpuWorkerState): Promise<FragmentResult> {
  try {
    return await growTreesTaskOnGpu(worker.gpu, terminal);
  } catch (err) {
    if (worker.gpu.lostReason) throw new DeviceLost(`GPU device lost: ${worker.gpu.lostReason}`);
    throw err;
  }
}

/**
 * The partial aggregate of a CSV chunk parsed on the GPU, or why not: no warning when that path
 * does not apply to the query or chunk (the caller reads it on the CPU; GPUFRAME_GPU_CSV_REPORT=1
 * makes that a warning, for tests and diagnosis), a warning when it failed.
 */
async function csvOnGpu(task: Task, worker: GpuWorkerState): Promise<FragmentResult | { warning: string | null }> {
  const { fragment, terminal } = task;
  if (terminal.kind !== 'partial-aggregate' || fragment.source.kind !== 'csv' || !fragment.ops.every((op) => op.kind === 'project')) return { warning: null };
  try {
    const out = await gpuCsvPartialAggregate(worker.gpu, fragment.source, terminal.spec, terminal.inputSchema, gpuCsvOptionsFromEnv());
    if ('partial' in out) return { partial: out.partial, matched: {}, rows: out.rows, warnings: [] };
    return { warning: process.env.GPUFRAME_GPU_CSV_REPORT === '1' ? `partition ${fragment.index} was read on the CPU: ${out.fallback}` : null };
  } catch (err) {
    if (worker.gpu.lostReason) throw new DeviceLost(`GPU device lost: ${worker.gpu.lostReason}`);
    return { warning: `GPU parsing of partition ${fragment.index} failed (${err instanceof Error ? err.message : String(err)}); it was read on the CPU` };
  }
}
