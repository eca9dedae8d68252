// Exclusive prefix sum on the GPU (used by csv-scan for quote parity and record numbering, by
// hash-join for output offsets, and by groupby-aggregate to number groups).

import type { GpuContext } from '../engine/gpu/device.js';
import { freeBuffer, kernelFor, sharedUniform, storageBuffer, workgroupsFor } from '../engine/gpu/buffers.js';
import { PREFIX_SCAN_WGSL } from './prefix-scan.wgsl.js';

const BLOCK = 1024;

/**
 * Replaces words [0, n) of `buf` with their exclusive prefix sum. To get the total as well,
 * scan n+1 words with the last one 0: it becomes the total. Submits its own work.
 */
export function exclusiveScan(ctx: GpuContext, buf: GPUBuffer, n: number): void {
  if (n === 0) return;
  const kernel = kernelFor(ctx, 'prefix-scan', PREFIX_SCAN_WGSL);
  const blocks = Math.ceil(n / BLOCK);
  const sums = storageBuffer(ctx, blocks * 4, 'scan block sums');
  const params = sharedUniform(ctx, [n]);
  kernel.dispatch('scan_blocks', [buf, sums, params], Math.min(blocks, 8192));
  if (blocks > 1) {
    exclusiveScan(ctx, sums, blocks);
    kernel.dispatch('add_block_offsets', [buf, sums, params], workgroupsFor(n));
  }
  freeBuffer(ctx, sums);
}

/** CPU twin: exclusive prefix sum (u32 wrap-around like the GPU). */
export function exclusiveScanCpu(words: Uint32Array): Uint32Array {
  const out = new Uint32Array(words.length);
  let t = 0;
  for (let i = 0; i < words.length; i++) { out[i] = t; t = (t + words[i]) >>> 0; }
  return out;
}
