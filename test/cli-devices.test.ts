// `gpuframe devices`: the GPUs WebGPU sees and which the executor would use, as JSON and as text.
// Here (CI) that is lavapipe: a software adapter, used only with --device gpu.

import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { budgetBytes, BUDGET_SHARE_OF_FREE } from '../src/engine/gpu/buffers.js';
import { driPrimeOf, gpuMemoryByBus, parseGpuMemory } from '../src/engine/gpu/pci.js';
import { skipGpuTests } from '../src/engine/gpu/test-gpu.js';
import { gpuframe } from './helpers/cli.js';
import { tempDir } from './helpers/data.js';

interface DevicesJson {
  gpus: {
    index: number; name: string | null; backend: string | null; busId: string | null; isSoftware: boolean | null; limits: Record<string, number | null>;
    memory: { totalBytes: number; freeBytes: number } | null; budgetBytes: number | null; used: boolean;
  }[];
  executor: { device: string; gpus: number[]; reason: string };
}

describe.skipIf(skipGpuTests)('gpuframe devices', () => {
  it('--json lists the adapter with its limits; auto skips a software adapter, --device gpu uses it', async () => {
    const auto = await gpuframe(['devices', '--json']);
    expect(auto.code).toBe(0);
    const a = JSON.parse(auto.stdout) as DevicesJson;
    expect(a.gpus.length).toBeGreaterThan(0);
    const g = a.gpus[0];
    expect(g.index).toBe(0);
    expect(g.name).toMatch(/\S/);
    expect(g.backend).toBe('vulkan');
    expect(g.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 << 20);
    // No memory size from a software adapter's driver: the budget is 8 largest bindings (or maxBufferSize).
    expect(g.memory).toBeNull();
    expect(g.budgetBytes).toBe(Math.min(g.limits.maxBufferSize!, 8 * g.limits.maxStorageBufferBindingSize!));
    if (g.isSoftware) {
      expect(a.executor.gpus).toEqual([]);
      expect(g.used).toBe(false);
    }
    const gpu = JSON.parse((await gpuframe(['devices', '--json', '--device', 'gpu', '--gpus', '0'])).stdout) as DevicesJson;
    expect(gpu.executor.gpus).toEqual([0]);
    expect(gpu.gpus[0].used).toBe(true);
  }, 30_000);

  it('prints a readable list; --device cpu uses no GPU; a bad --gpus is a usage error', async () => {
    const text = await gpuframe(['devices', '--device', 'cpu']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^ {2}0: .+\n {5}backend vulkan, PCI bus /m);
    expect(text.stdout).toMatch(/executor \(--device cpu\): CPU workers/);
    const bad = await gpuframe(['devices', '--gpus', 'x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--gpus 'x'/);
  }, 30_000);
});

describe('GPU memory and the device budget', () => {
  const MiB = 2 ** 20;

  it('reads nvidia-smi\'s bus id, total and free MiB per GPU, keyed by bus whatever its domain width', () => {
    const got = parseGpuMemory('00000000:06:00.0, 143771, 143255\n00000000:07:00.0, 143771, 1000\n[N/A], x, y\n\n');
    expect([...got.keys()]).toEqual([driPrimeOf('0000:06:00.0'), driPrimeOf('0000:07:00.0')]);
    expect(got.get(driPrimeOf('0000:06:00.0'))).toEqual({ totalBytes: 143771 * MiB, freeBytes: 143255 * MiB });
  });

  it('asks nvidia-smi on the PATH once for every GPU; none there gives no sizes', async () => {
    const dir = tempDir('nvidia-smi');
    const fake = join(dir, 'nvidia-smi');
    writeFileSync(fake, '#!/bin/sh\necho "00000000:06:00.0, 81559, 80000"\n');
    chmodSync(fake, 0o755);
    const path = process.env.PATH;
    try {
      process.env.PATH = `${dir}:${path}`;
      const byBus = await gpuMemoryByBus();
      expect(byBus.get(driPrimeOf('0000:06:00.0'))).toEqual({ totalBytes: 81559 * MiB, freeBytes: 80000 * MiB });
      process.env.PATH = tempDir('no-nvidia-smi');
      expect((await gpuMemoryByBus()).size).toBe(0);
    } finally {
      process.env.PATH = path;
    }
  });

  it('a worker may hold a share of the free memory where the driver tells it, else 8 largest bindings', () => {
    const h200 = { maxBufferSize: 2 ** 40, maxStorageBufferBindingSize: 2 ** 31 - 4 };
    expect(budgetBytes(h200, 140_000 * MiB)).toBe(Math.floor(BUDGET_SHARE_OF_FREE * 140_000 * MiB));
    expect(budgetBytes(h200, null)).toBe(8 * (2 ** 31 - 4));
    expect(budgetBytes({ maxBufferSize: 2 ** 32 - 1, maxStorageBufferBindingSize: 2 ** 30 }, null)).toBe(2 ** 32 - 1);
  });
});
