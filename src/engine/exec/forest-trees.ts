// A random forest's trees grown as tasks on the workers. The parent writes the binned rows once to
// a file in the run's temp dir; each task names the file and the trees it grows, so a worker reads
// the file once (and a GPU worker uploads it once) however many of its tasks it runs. When GPU
// workers grow the trees on their device, the tasks are theirs alone (the GPU finder compares
// splits in f32, the CPU one in float64): the forest never depends on which worker took which
// task. Trees are seeded by their index, so how they are grouped into tasks changes nothing either.
// Regression trees grow on the device too (from exact fixed-point sums of the target, forest.ts).

import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { growTreesOnCpu } from '../ml/forest-split-cpu.js';
import type { BinnedData, GrownTree, TreeSpec } from '../ml/forest-tree.js';
import type { TreeGrower } from '../ml/forest.js';
import type { RunContext } from './context.js';
import { NO_SOURCE, type FragmentResult, type Terminal } from './fragment.js';
import { concurrencyOf } from './pool.js';
import { MAX_GPU_CLASSES } from '../../kernels/forest.wgsl.js';

/** Where the binned rows are, and their shape: bins (rows × cols bytes, column-major), then the target. */
export interface BinnedFile { path: string; rows: number; cols: number; binsPerFeature: number[]; nClasses: number; target: 'int32' | 'float64' }

/**
 * Whether GPU workers grow these trees on their device: classification with few enough classes,
 * or regression on a finite target (its quantisation needs a finite range).
 */
export function forestOnGpu(data: BinnedData, spec: TreeSpec): boolean {
  if (data.rows === 0) return false;
  if (spec.task === 'regression') return data.target.every(Number.isFinite);
  return data.nClasses >= 1 && data.nClasses <= MAX_GPU_CLASSES;
}

/**
 * Grows trees as tasks of `ctx`'s runner: one task per GPU worker when the device grows them
 * (then only GPU workers take them), else as many as all its workers run at once. One per GPU
 * worker, not as many as it runs at once: its growTreesOnGpu already grows batches side by side
 * (gpu-forest.ts FOREST_LANES), and four smaller batches sharing a device and its host thread took
 * longer (H200, 10^6 × 32, 100 trees: 2.37 s on one GPU and 2.18 s on two, against 1.72 s and 1.32 s).
 */
export function workerTreeGrower(ctx: RunContext): TreeGrower {
  return {
    async grow(data: BinnedData, spec: TreeSpec, trees: readonly number[]): Promise<GrownTree[]> {
      const file = writeBinnedFile(ctx.tmpDir, data);
      try {
        const gpu = forestOnGpu(data, spec) && (ctx.runner.gpuWorkers ?? 0) > 0;
        const lanes = Math.min(trees.length, gpu ? ctx.runner.gpuWorkers! : concurrencyOf(ctx.runner));
        const groups = Array.from({ length: lanes }, (_, g) => trees.filter((_, i) => i % lanes === g));
        const results = await Promise.all(groups.map((group) =>
          ctx.runner.run({ fragment: NO_SOURCE, terminal: { kind: 'grow-trees', file, spec, trees: group, gpu } }, 'ml grow trees')));
        const byTree = new Map<number, GrownTree>();
        groups.forEach((group, g) => group.forEach((t, i) => byTree.set(t, results[g].grown![i])));
        return trees.map((t) => byTree.get(t)!);
      } finally {
        rmSync(file.path, { force: true });
      }
    },
  };
}

function writeBinnedFile(dir: string, data: BinnedData): BinnedFile {
  const path = join(dir, `forest-${randomUUID()}.bin`);
  const target = data.target instanceof Int32Array ? 'int32' : 'float64';
  writeFileSync(path, Buffer.concat([data.bins, new Uint8Array(data.target.buffer, data.target.byteOffset, data.target.byteLength)]));
  return { path, rows: data.rows, cols: data.cols, binsPerFeature: Array.from(data.binsPerFeature), nClasses: data.nClasses, target };
}

/** The last binned file this worker read: its tasks of one forest share it. */
let lastRead: { path: string; data: BinnedData } | null = null;

export function readBinnedFile(file: BinnedFile): BinnedData {
  if (lastRead?.path === file.path) return lastRead.data;
  const bytes = readFileSync(file.path);
  const binsBytes = file.rows * file.cols;
  const targetBytes = bytes.subarray(binsBytes);
  // Copied out, so the typed arrays are aligned.
  const target = file.target === 'int32' ? new Int32Array(file.rows) : new Float64Array(file.rows);
  new Uint8Array(target.buffer).set(targetBytes);
  const data: BinnedData = {
    rows: file.rows, cols: file.cols, bins: new Uint8Array(bytes.subarray(0, binsBytes)),
    binsPerFeature: Int32Array.from(file.binsPerFeature), target, nClasses: file.nClasses,
  };
  lastRead = { path: file.path, data };
  return data;
}

/** grow-trees on a CPU worker. */
export function growTreesTask(terminal: Extract<Terminal, { kind: 'grow-trees' }>): FragmentResult {
  const data = readBinnedFile(terminal.file);
  return { grown: growTreesOnCpu(data, terminal.spec, terminal.trees), rows: 0, warnings: [] };
}
