// What a GPU worker does with one task: partial aggregates the GPU covers run there (rows are read
// and parsed on the CPU of this process with the same reader as CPU workers); every other task,
// and any partition whose GPU aggregation fails while the device is still alive, runs the CPU code.

import { RuntimeFailure } from '../errors.js';
import type { GpuContext } from '../gpu/device.js';
import { PartialAggregator } from '../ops/aggregate/index.js';
import type { FragmentResult, Task } from './fragment.js';
import { gpuPartialAggregate, gpuSupports } from './gpu-aggregate.js';
import type { ResidentCache } from './gpu-resident.js';
import { runTask, type BroadcastCache } from './run-fragment.js';

export interface GpuWorkerState {
  gpu: GpuContext;
  /** Device data kept between tasks (the hook for iterative plans; see gpu-resident.ts). */
  resident: ResidentCache;
}

/** The device was lost: the task must be retried on another GPU, not reported as its own error. */
export class DeviceLost extends RuntimeFailure {}

export async function runGpuTask(task: Task, cache: BroadcastCache, worker: GpuWorkerState): Promise<FragmentResult> {
  const { terminal, fragment } = task;
  if (terminal.kind !== 'partial-aggregate' || !gpuSupports(terminal.spec, terminal.inputSchema)) return runTask(task, cache);
  const rows = await runTask({ fragment, terminal: { kind: 'collect' } }, cache);
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
