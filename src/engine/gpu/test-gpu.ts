// The GPU the kernel tests run on. CI installs lavapipe, so a missing adapter is a failure,
// unless GPUFRAME_SKIP_GPU_TESTS=1 says this machine has no Vulkan at all.

import { openGpu, type GpuContext } from './device.js';

export const skipGpuTests = process.env.GPUFRAME_SKIP_GPU_TESTS === '1';

let opened: Promise<GpuContext | null> | null = null;

export async function testGpu(): Promise<GpuContext> {
  opened ??= openGpu({ allowSoftware: true });
  const ctx = await opened;
  if (!ctx) throw new Error('no WebGPU adapter found: install Vulkan (lavapipe) or set GPUFRAME_SKIP_GPU_TESTS=1');
  await ctx.checked;
  return ctx;
}

/** Index of the first element where two arrays differ (-1 if equal): vitest's toEqual is slow on millions. */
export function firstDifference(a: ArrayLike<number | bigint>, b: ArrayLike<number | bigint>): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (!Object.is(a[i], b[i])) return i;
  return -1;
}
