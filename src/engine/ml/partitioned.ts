// The interface ML trainers run against. Rows of the design matrix live in partitions held by
// workers (in-process for tests and --workers 0, CPU worker processes, GPU workers); a trainer only
// sends named, pure per-partition tasks and combines their results in partition order.

import { KMEANS_TASKS } from './kmeans-tasks.js';
import { LINREG_TASKS } from './linreg-tasks.js';
import { FOREST_TASKS } from './forest-tasks.js';
import { STATS_TASKS } from './stats-tasks.js';

/** Rows of a numeric design matrix held by one worker; stays resident across iterations. */
export interface MatrixPartition {
  /** Position of this partition in input order; results are combined in this order. */
  index: number;
  /** Global row number (in input order) of this partition's first row. Per-row random choices
   *  are keyed by global row, so they do not depend on how rows were split into partitions. */
  firstRow: number;
  rows: number;
  cols: number;
  /** rows × cols, row-major. */
  x: Float64Array;
  y: Float64Array | null;
  /** One row, where reading `x` would first make it (a GPU worker keeps the batch's columns). */
  row?(r: number): Float64Array;
  /** Feature j's values, where the partition keeps its columns (reading `x` would first make a row-major copy). */
  column?(j: number): Float64Array;
}

export type PartitionTask = (part: MatrixPartition, args: any) => unknown;

/** Per-partition functions, looked up by name in workers: deterministic, results structured-cloneable. */
export const PARTITION_TASKS: Record<string, PartitionTask> = {
  ...STATS_TASKS,
  ...KMEANS_TASKS,
  ...LINREG_TASKS,
  ...FOREST_TASKS,
};

/** Runs PARTITION_TASKS[name] over every partition and returns results in partition order. */
export interface PartitionedMatrix {
  featureNames: string[];
  rows: number;
  cols: number;
  map<R>(task: string, args: unknown): Promise<R[]>;
}

/** Partitions held in this process (tests and --workers 0). Results are structured-cloned, as a worker's would be. */
export function inMemoryPartitions(featureNames: string[], parts: MatrixPartition[]): PartitionedMatrix {
  const ordered = [...parts].sort((a, b) => a.index - b.index);
  const rows = ordered.reduce((s, p) => s + p.rows, 0);
  return {
    featureNames,
    rows,
    cols: featureNames.length,
    async map<R>(task: string, args: unknown): Promise<R[]> {
      const fn = PARTITION_TASKS[task];
      if (!fn) throw new Error(`unknown partition task '${task}'`);
      return ordered.map((p) => structuredClone(fn(p, args)) as R);
    },
  };
}

/** Splits a row-major matrix into partitions of at most `rowsPerPartition` rows (tests, --workers 0). */
export function splitRows(x: Float64Array, y: Float64Array | null, cols: number, rowsPerPartition: number): MatrixPartition[] {
  const rows = x.length / cols;
  const parts: MatrixPartition[] = [];
  for (let start = 0, index = 0; start < rows; start += rowsPerPartition, index++) {
    const end = Math.min(rows, start + rowsPerPartition);
    parts.push({
      index, firstRow: start, rows: end - start, cols,
      x: x.subarray(start * cols, end * cols),
      y: y ? y.subarray(start, end) : null,
    });
  }
  return parts;
}
