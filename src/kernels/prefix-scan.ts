// Exclusive prefix sum on the GPU (used by csv-scan for quote parity and record numbering, by
// hash-join for output offsets, and by groupby-aggregate to number groups).

import type { GpuContext } from '../engine/gpu/device.js';
import { freeBuffer, kernelFor, requireWholeQuads, sharedUniform, storageBuffer, workgroupsFor, type GpuKernel } from '../engine/gpu/buffers.js';
import { PREFIX_SCAN_SUBGROUPS_WGSL, PREFIX_SCAN_WGSL } from './prefix-scan.wgsl.js';

const BLOCK = 1024;

/** The two scan_blocks kernels: 'plain' (workgroup memory only) and 'subgroups'. */
export type ScanVariant = 'plain' | 'subgroups';

/**
 * Widest subgroups whose path through the subgroup kernel has been checked against the CPU path:
 * lavapipe in CI (4, 8 and 16 lanes, against the CPU scan) and the H200s (32 lanes, a round where
 * some lanes hold no subgroup total: 10 GB group-by and merge outputs byte-identical to the CPU
 * path's, 2026-11-30). Wider ones run the plain kernel unless GPUFRAME_GPU_SUBGROUPS=1.
 */
export const CHECKED_SUBGROUP_SIZE = 32;

/**
 * The scan_blocks kernel exclusiveScan uses on this device: 'subgroups' where openGpu found
 * subgroups laid out as that kernel assumes and at most CHECKED_SUBGROUP_SIZE wide (wider with
 * GPUFRAME_GPU_SUBGROUPS=1); GPUFRAME_GPU_SUBGROUPS=0 forces the plain one (read at each call, so
 * a test can switch it).
 */
export function scanVariant(ctx: GpuContext): ScanVariant {
  const setting = process.env.GPUFRAME_GPU_SUBGROUPS;
  const { usable, size } = ctx.subgroupLayout;
  if (!usable || setting === '0') return 'plain';
  return setting === '1' || (size !== null && size <= CHECKED_SUBGROUP_SIZE) ? 'subgroups' : 'plain';
}

/** The compiled module holding that variant's scan_blocks (add_block_offsets is in the plain one). */
export function scanBlocksKernel(ctx: GpuContext, variant: ScanVariant): GpuKernel {
  return variant === 'subgroups'
    ? kernelFor(ctx, 'prefix-scan-subgroups', PREFIX_SCAN_SUBGROUPS_WGSL)
    : kernelFor(ctx, 'prefix-scan', PREFIX_SCAN_WGSL);
}

/**
 * Replaces words [0, n) of `buf` with their exclusive prefix sum. To get the total as well,
 * scan n+1 words with the last one 0: it becomes the total. Submits its own work. `variant` is
 * for tests and benchmarks ('subgroups' only where scanVariant could pick it).
 */
export function exclusiveScan(ctx: GpuContext, buf: GPUBuffer, n: number, variant = scanVariant(ctx)): void {
  if (n === 0) return;
  requireWholeQuads(buf, 4 * n, 'exclusiveScan'); // the kernels read and write quads of words
  const blocks = Math.ceil(n / BLOCK);
  const sums = storageBuffer(ctx, blocks * 4, 'scan block sums');
  const params = sharedUniform(ctx, [n]);
  scanBlocksKernel(ctx, variant).dispatch('scan_blocks', [buf, sums, params], Math.min(blocks, 8192));
  if (blocks > 1) {
    exclusiveScan(ctx, sums, blocks, variant);
    scanBlocksKernel(ctx, 'plain').dispatch('add_block_offsets', [buf, sums, params], workgroupsFor(n, 4));
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
