// A random forest's trees grown as tasks on the workers. The parent writes the binned rows once to
// a file in the run's temp dir; each task names the file and the trees it grows, so a worker reads
// the file once (and a GPU worker uploads it once) however many of its tasks it runs. When GPU
// workers grow the trees on their device, the tasks are theirs alone (the GPU finder compares
// splits in f32, the CPU one in float64): the forest never depends on which worker took which
// task. Trees are seeded by their index, so how they are grouped into tasks changes nothing either.
// Regression trees grow on the device too (from exact fixed-point sums of the target, forest.ts).

import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { growTreesOnCpu } from '../ml/forest-split-cpu.js';
import type { BinnedData, GrownTree, TreeSpec } from '../ml/forest-tree.js';
import type { TreeGrower } from '../ml/forest.js';
import type { RunContext } from './context.js';
import { NO_SOURCE, type FragmentResult, type Terminal } from './fragment.js';
import { concurrencyOf } from './pool.js';
import { writeSpillFile } from './spill-file.js';
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
        groups.forEach((group, g) => { const grown = readGrownTrees(results[g].grownFile!); group.forEach((t, i) => byTree.set(t, grown[i])); });
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
  writeSpillFile(path, [data.bins, new Uint8Array(data.target.buffer, data.target.byteOffset, data.target.byteLength)]);
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
  return { grownFile: writeGrownTrees(terminal.file, growTreesOnCpu(data, terminal.spec, terminal.trees)), rows: 0, warnings: [] };
}

// Grown trees go back to the parent through a file beside the binned rows, as the rows came: 100
// trees of depth 16 are ~100 MB of node arrays, which took ~0.3 s through the IPC channel (H200
// machine, 10^6 rows). Layout: u32 count, then each tree's five array lengths (GROWN_ARRAYS
// order), padded to 8 bytes; then the arrays in that order, each padded to 8 bytes.
const GROWN_ARRAYS = ['feature', 'bin', 'left', 'right', 'value'] as const;
const pad8 = (n: number) => Math.ceil(n / 8) * 8;

/** Writes `trees` to a new file next to the binned rows; returns its path. */
export function writeGrownTrees(binned: BinnedFile, trees: readonly GrownTree[]): string {
  const path = join(dirname(binned.path), `grown-${randomUUID()}.bin`);
  const header = new Uint32Array(1 + GROWN_ARRAYS.length * trees.length);
  header[0] = trees.length;
  trees.forEach((tree, t) => GROWN_ARRAYS.forEach((name, a) => { header[1 + t * GROWN_ARRAYS.length + a] = tree[name].length; }));
  const parts: Uint8Array[] = [new Uint8Array(pad8(header.byteLength))];
  parts[0].set(new Uint8Array(header.buffer));
  for (const tree of trees) {
    for (const name of GROWN_ARRAYS) {
      const a = tree[name];
      parts.push(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), new Uint8Array(pad8(a.byteLength) - a.byteLength));
    }
  }
  writeSpillFile(path, parts);
  return path;
}

/** Reads (and removes) a file of writeGrownTrees: the trees' arrays are views of one buffer. */
export function readGrownTrees(path: string): GrownTree[] {
  const file = readFileSync(path);
  rmSync(path, { force: true });
  // A copy when the read buffer is not 8-byte aligned (float64 views need it).
  const bytes = file.byteOffset % 8 === 0 ? file : Buffer.from(file);
  const count = new Uint32Array(bytes.buffer, bytes.byteOffset, 1)[0];
  const lengths = new Uint32Array(bytes.buffer, bytes.byteOffset + 4, GROWN_ARRAYS.length * count);
  let at = bytes.byteOffset + pad8(4 * (1 + lengths.length));
  const take = <T>(View: new (b: ArrayBufferLike, offset: number, length: number) => T & { byteLength: number }, length: number): T => {
    const view = new View(bytes.buffer, at, length);
    at += pad8(view.byteLength);
    return view;
  };
  return Array.from({ length: count }, (_, t) => {
    const n = (a: number) => lengths[t * GROWN_ARRAYS.length + a];
    return { feature: take(Int32Array, n(0)), bin: take(Int32Array, n(1)), left: take(Int32Array, n(2)), right: take(Int32Array, n(3)), value: take(Float64Array, n(4)) };
  });
}
