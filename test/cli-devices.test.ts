// `gpuframe devices`: the GPUs WebGPU sees and which the executor would use, as JSON and as text.
// Here (CI) that is lavapipe: a software adapter, used only with --device gpu.

import { describe, expect, it } from 'vitest';
import { skipGpuTests } from '../src/engine/gpu/test-gpu.js';
import { gpuframe } from './helpers/cli.js';

interface DevicesJson {
  gpus: { index: number; name: string | null; backend: string | null; busId: string | null; isSoftware: boolean | null; limits: Record<string, number | null>; used: boolean }[];
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
