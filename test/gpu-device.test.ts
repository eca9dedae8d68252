import { describe, expect, it } from 'vitest';
import { describeAdapter, listGpus } from '../src/engine/gpu/device.js';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { driPrimeOf, quickGpuBusIds } from '../src/engine/gpu/pci.js';
import { readU32, StagingRing, storageBuffer, freeBuffer, MemoryBudget, kernelFor } from '../src/engine/gpu/buffers.js';
import { CSV_GROUPBY_KERNELS } from '../src/engine/exec/gpu-warmup.js';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';

describe('gpu device', () => {
  it('turns nvidia-smi and sysfs bus ids into DRI_PRIME values', () => {
    expect(driPrimeOf('00000000:06:00.0')).toBe('pci-0000_06_00_0');
    expect(driPrimeOf('0000:C1:00.0')).toBe('pci-0000_c1_00_0');
    expect(() => driPrimeOf('gpu0')).toThrow();
  });

  it('reads the GPUs NVIDIA\'s driver lists (its /proc directory) in bus order; none without the directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nvidia-gpus-'));
    for (const d of ['0000:41:00.0', '0000:06:00.0', '0000:c1:00.0', 'not-a-gpu']) mkdirSync(join(dir, d));
    expect(quickGpuBusIds(dir)).toEqual(['0000:06:00.0', '0000:41:00.0', '0000:c1:00.0']);
    expect(quickGpuBusIds(join(dir, 'absent'))).toBeNull();
  });

  it('refuses to go over the memory budget', () => {
    const b = new MemoryBudget(100);
    b.reserve(60, 'a');
    expect(() => b.reserve(50, 'b')).toThrow(/budget/);
    b.release(60);
    b.reserve(100, 'c');
    expect(b.used).toBe(100);
  });

  it.skipIf(skipGpuTests)('opens the adapter and describes it', async () => {
    const ctx = await testGpu();
    const d = describeAdapter(ctx);
    expect(d.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 << 20);
    expect(ctx.device.limits.maxStorageBufferBindingSize).toBe(d.limits.maxStorageBufferBindingSize);
    expect(d.isSoftware).toBe(/llvmpipe|lavapipe|swiftshader/i.test(`${d.name} ${d.architecture} ${d.vendor}`) || d.isSoftware);
    expect(ctx.hasSubgroups).toBe(d.features.includes('subgroups'));
  });

  // The warm-up of GPU workers (hardware adapters only) swallows compile errors: check here that
  // every kernel and entry point it names compiles, asynchronously, and that a bad entry rejects.
  it.skipIf(skipGpuTests)('the warm-up\'s kernels all compile ahead of use; an unknown entry point rejects', async () => {
    const ctx = await testGpu();
    await Promise.all(CSV_GROUPBY_KERNELS.map(([label, code, entries]) => kernelFor(ctx, label, code).prepare(entries)));
    expect(ctx.errors).toEqual([]);
    const [label, code] = CSV_GROUPBY_KERNELS[0];
    await expect(kernelFor(ctx, label, code).prepare(['no_such_entry'])).rejects.toThrow();
  });

  it.skipIf(skipGpuTests)('uploads through the staging ring across several slots and reads back', async () => {
    const ctx = await testGpu();
    const ring = new StagingRing(ctx, 4096, 3);
    const data = new Uint32Array(10_000 + 3);
    for (let i = 0; i < data.length; i++) data[i] = (i * 2654435761) >>> 0;
    const buf = storageBuffer(ctx, data.byteLength, 'ring test');
    await ring.upload(data, buf);
    expect(await readU32(ctx, buf, data.length)).toEqual(data);
    freeBuffer(ctx, buf);
    ring.destroy();
  });

  it.skipIf(skipGpuTests)('fills with asynchronous writes across more slots than the ring has; a failed write frees its slot', async () => {
    const ctx = await testGpu();
    const ring = new StagingRing(ctx, 4096, 3);
    const data = new Uint8Array(7 * 4096 + 12);
    for (let i = 0; i < data.length; i++) data[i] = (i * 131) & 0xff;
    const buf = storageBuffer(ctx, data.byteLength, 'ring fill test');
    const later = () => new Promise((resolve) => setTimeout(resolve, 1));
    await ring.fill(buf, 0, data.length, async (view, at) => { await later(); view.set(data.subarray(at, at + view.length)); });
    expect(new Uint8Array((await readU32(ctx, buf, data.length / 4)).buffer)).toEqual(data);
    await expect(ring.fill(buf, 0, 4096, async () => { await later(); throw new Error('file changed'); })).rejects.toThrow(/file changed/);
    // Every slot is usable again: this fill goes through all three of them.
    await ring.fill(buf, 0, data.length, (view, at) => view.set(data.subarray(at, at + view.length).map((b) => b ^ 0xff)));
    expect(new Uint8Array((await readU32(ctx, buf, data.length / 4)).buffer)).toEqual(data.map((b) => b ^ 0xff));
    freeBuffer(ctx, buf);
    ring.destroy();
  });

  it.skipIf(skipGpuTests)('recycles freed storage buffers, zeroed again (at once, or in the encoder given)', async () => {
    const ctx = await testGpu();
    const a = storageBuffer(ctx, 3 << 20, 'pool test');
    ctx.device.queue.writeBuffer(a, 0, new Uint32Array(1024).fill(7));
    freeBuffer(ctx, a);
    const b = storageBuffer(ctx, (3 << 20) - 100, 'pool test'); // the same size class
    expect(b).toBe(a);
    expect((await readU32(ctx, b, 1024)).every((w) => w === 0)).toBe(true);
    ctx.device.queue.writeBuffer(b, 0, new Uint32Array(1024).fill(9));
    freeBuffer(ctx, b);
    const encoder = ctx.device.createCommandEncoder();
    const c = storageBuffer(ctx, 3 << 20, 'pool test', encoder);
    expect(c).toBe(a);
    ctx.device.queue.submit([encoder.finish()]);
    expect((await readU32(ctx, c, 1024)).every((w) => w === 0)).toBe(true);
    freeBuffer(ctx, c);
  });

  it.skipIf(skipGpuTests)('lists GPUs: each pinned probe, or the software adapter flagged', async () => {
    const gpus = await listGpus();
    for (const g of gpus) {
      if (g.busId === null) expect(g.adapter?.isSoftware).toBe(true);
      else expect(g.driPrime).toMatch(/^pci-[0-9a-f]{4}_[0-9a-f]{2}_[0-9a-f]{2}_[0-9a-f]$/);
    }
    expect(gpus.length).toBeGreaterThan(0);
  });
});
