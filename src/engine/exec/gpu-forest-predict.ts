// Random-forest prediction on a GPU worker: the trees are uploaded once per model, and each batch's
// rows walk every tree on the device (forest.ts: one thread per row and tree). Only the leaves come
// back; the host sums their values in tree order, exactly as the CPU does (predict.ts), and the
// comparisons are exact (order-preserving keys), so a chunk predicted here gives the same bytes as
// on a CPU worker.

import type { GpuContext } from '../gpu/device.js';
import { freeBuffer, stagingRingOf, uploadNew } from '../gpu/buffers.js';
import type { ForestModel } from '../ml/model.js';
import { forestLeaves } from '../ml/predict.js';
import type { ForestLeafFinder } from '../ml/predict-columns.js';
import { recordForestLeaves, sortableKeys, type DeviceForest } from '../../kernels/forest.js';
import { GpuWork } from '../../kernels/ml-matrix.js';
import { PhaseTimes } from '../gpu/timing.js';

/** Bytes of row keys or leaves one submission may take. */
const BATCH_BYTES = 256 << 20;

export function gpuForestLeafFinder(ctx: GpuContext): ForestLeafFinder {
  let held: { model: ForestModel; forest: Promise<DeviceForest> } | null = null;
  return async (model, x, rows) => {
    const phases = new PhaseTimes();
    if (held?.model !== model) {
      void held?.forest.then((old) => freeForest(ctx, old), () => {});
      held = { model, forest: uploadForest(ctx, model) };
    }
    const d = model.featureNames.length;
    try {
      const forest = await held.forest;
      phases.mark('model on the device');
      const leaves = await leavesOnGpu(ctx, forest, x, rows, d);
      phases.mark('leaves');
      phases.report(`forest predict of ${rows} rows, ${forest.trees} trees`);
      return leaves;
    } catch (err) {
      if (ctx.lostReason) throw err;
      return forestLeaves(model, x, rows, d); // the same leaves, found on this CPU
    }
  };
}

async function leavesOnGpu(ctx: GpuContext, forest: DeviceForest, x: Float64Array, rows: number, d: number): Promise<Int32Array> {
  const limit = Math.min(BATCH_BYTES, ctx.device.limits.maxStorageBufferBindingSize);
  const perBatch = Math.max(1, Math.floor(limit / (Math.max(forest.trees, 2 * d) * 4)));
  const leaves = new Int32Array(rows * forest.trees);
  for (let start = 0; start < rows; start += perBatch) {
    const n = Math.min(perBatch, rows - start);
    const work = new GpuWork(ctx);
    const xKey = work.input(sortableKeys(x.subarray(start * d, (start + n) * d)), 'forest predict rows');
    const out = work.temp(n * forest.trees * 4, 'forest leaves');
    recordForestLeaves(work, forest, xKey, n, d, out);
    const [got] = await work.finish([{ buf: out, floats: n * forest.trees }]);
    leaves.set(new Int32Array(got.buffer, got.byteOffset, n * forest.trees), start * forest.trees);
  }
  return leaves;
}

async function uploadForest(ctx: GpuContext, model: ForestModel): Promise<DeviceForest> {
  const t = model.trees, ring = stagingRingOf(ctx);
  // All at once: the ring's slots then fill and copy while the next array's are written.
  const [treeOffsets, feature, thresholdKey, left, right] = await Promise.all([
    uploadNew(ctx, Uint32Array.from(t.treeOffsets), 'forest tree offsets', ring),
    uploadNew(ctx, t.feature, 'forest features', ring),
    uploadNew(ctx, sortableKeys(t.threshold), 'forest thresholds', ring),
    uploadNew(ctx, t.left, 'forest left children', ring),
    uploadNew(ctx, t.right, 'forest right children', ring),
  ]);
  return { trees: t.treeOffsets.length - 1, treeOffsets, feature, thresholdKey, left, right };
}

function freeForest(ctx: GpuContext, f: DeviceForest): void {
  for (const b of [f.treeOffsets, f.feature, f.thresholdKey, f.left, f.right]) freeBuffer(ctx, b);
}
