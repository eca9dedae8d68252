// Per-partition work of the random forest (layout (a): trees are split over workers and each
// worker holds all binned rows, n × d bytes). Partitions provide a row sample for the bin edges
// and their binned rows; then each partition trains the trees assigned to it on all rows.

import { RuntimeFailure } from '../errors.js';
import { binMatrix } from './forest-bins.js';
import { growTreesOnCpu } from './forest-split-cpu.js';
import type { BinnedData, GrownTree, TreeSpec } from './forest-tree.js';
import type { MatrixPartition } from './partitioned.js';
import { rowUniform } from './random.js';

export interface SampleResult { rows: number; x: Float64Array }

/** Rows whose hash under `key` is below `fraction`: a sample that does not depend on partitioning. */
function sample(part: MatrixPartition, { key, fraction }: { key: number; fraction: number }): SampleResult {
  const keep: number[] = [];
  for (let r = 0; r < part.rows; r++) if (rowUniform(key, part.firstRow + r) < fraction) keep.push(r);
  const x = new Float64Array(keep.length * part.cols);
  keep.forEach((r, i) => x.set(part.x.subarray(r * part.cols, (r + 1) * part.cols), i * part.cols));
  return { rows: keep.length, x };
}

export interface BinResult { index: number; rows: number; bins: Uint8Array; y: Float64Array }

function bin(part: MatrixPartition, { edges }: { edges: Float64Array[] }): BinResult {
  if (!part.y) throw new RuntimeFailure('random forest training needs a target column in every partition');
  return { index: part.index, rows: part.rows, bins: binMatrix(part.x, part.rows, part.cols, edges), y: part.y.slice() };
}

export interface TrainTreesArgs { data: BinnedData; spec: TreeSpec; treesByPartition: Record<number, number[]> }

/** Grows the trees assigned to this partition's worker, each from its own (seed, tree) stream. */
function trainTrees(part: MatrixPartition, { data, spec, treesByPartition }: TrainTreesArgs): { tree: number; grown: GrownTree }[] {
  // One tree at a time: a tree's rows and weights take 8 bytes per row.
  return (treesByPartition[part.index] ?? []).map((t) => ({ tree: t, grown: growTreesOnCpu(data, spec, [t])[0] }));
}

export const FOREST_TASKS = { 'rf.sample': sample, 'rf.bin': bin, 'rf.trainTrees': trainTrees };
