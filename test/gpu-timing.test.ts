// KernelTimer (timestamp-query) against the wall clock: durations are positive, grow with the
// work timed, and never exceed the wall-clock time of the submit that ran the work.
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { freeBuffer, kernelFor, storageBuffer, uniformWords, workgroupsFor } from '../src/engine/gpu/buffers.js';
import type { GpuContext } from '../src/engine/gpu/device.js';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { KernelTimer, timestampsUnavailable, wallClockNs } from '../src/engine/gpu/timing.js';
import { PREFIX_SCAN_WGSL } from '../src/kernels/prefix-scan.wgsl.js';

// add_block_offsets of the prefix scan over N words: a plain read-modify-write pass to time.
const N = 1 << 20;

function addOffsetsKernel(ctx: GpuContext) {
  const data = storageBuffer(ctx, N * 4, 'timing data');
  const sums = storageBuffer(ctx, Math.ceil(N / 1024) * 4, 'timing block sums');
  const params = uniformWords(ctx, [N]);
  const kernel = kernelFor(ctx, 'prefix-scan', PREFIX_SCAN_WGSL);
  return {
    dispatch: (enc: GPUCommandEncoder, writes?: GPUComputePassTimestampWrites) =>
      kernel.dispatch('add_block_offsets', [data, sums, params], workgroupsFor(N), enc, writes),
    free: () => { freeBuffer(ctx, data); freeBuffer(ctx, sums); params.destroy(); },
  };
}

describe.skipIf(skipGpuTests)('KernelTimer', () => {
  it('times passes by timestamps: positive, growing with the work, within the wall clock', async () => {
    const ctx = await testGpu();
    if (!ctx.hasTimestamps) {
      expect(() => new KernelTimer(ctx)).toThrow(/timestamp-query is not available/);
      return;
    }
    const k = addOffsetsKernel(ctx);
    const timer = new KernelTimer(ctx, 32);
    const warm = ctx.device.createCommandEncoder();
    k.dispatch(warm);
    ctx.device.queue.submit([warm.finish()]);

    const enc = ctx.device.createCommandEncoder();
    k.dispatch(enc, timer.writes('one'));
    for (let r = 0; r < 20; r++) k.dispatch(enc, timer.writes('twenty'));
    const t0 = performance.now();
    ctx.device.queue.submit([enc.finish()]);
    await ctx.device.queue.onSubmittedWorkDone();
    const wallNs = (performance.now() - t0) * 1e6;
    const times = await timer.read();
    const one = times.get('one')!, twenty = times.get('twenty')!;
    expect(one.passes).toBe(1);
    expect(twenty.passes).toBe(20);
    expect(one.ns).toBeGreaterThan(0);
    // 20 passes of the same work: well above 1 (noise on a shared CPU allows a wide margin).
    expect(twenty.ns).toBeGreaterThan(4 * one.ns);
    // GPU time of the passes fits inside the wall-clock time of their submit.
    expect(one.ns + twenty.ns).toBeLessThan(wallNs * 1.05 + 1e5);

    // A read starts over; a span covers several passes.
    const enc2 = ctx.device.createCommandEncoder();
    timer.spanStart('span', enc2);
    for (let r = 0; r < 10; r++) k.dispatch(enc2);
    timer.spanEnd('span', enc2);
    ctx.device.queue.submit([enc2.finish()]);
    const spans = await timer.read();
    expect([...spans.keys()]).toEqual(['span']);
    expect(spans.get('span')!.ns).toBeGreaterThan(2 * one.ns);
    timer.destroy();
    k.free();
  });

  it('says why without timestamp-query, and the wall-clock fallback grows with the work', async () => {
    const ctx = await testGpu();
    const without = { ...ctx, hasTimestamps: false };
    expect(timestampsUnavailable(without)).toMatch(/timestamp-query is not available.*wall clock/);
    expect(() => new KernelTimer(without)).toThrow(/timestamp-query is not available/);
    expect(timestampsUnavailable(ctx)).toBe(ctx.hasTimestamps ? null : timestampsUnavailable(without));

    const k = addOffsetsKernel(ctx);
    const perOne = await wallClockNs(ctx, (enc) => k.dispatch(enc), 10);
    const perTen = await wallClockNs(ctx, (enc) => { for (let r = 0; r < 10; r++) k.dispatch(enc); }, 10);
    expect(perOne).toBeGreaterThan(0);
    expect(perTen).toBeGreaterThan(3 * perOne);
    k.free();
  });
});
