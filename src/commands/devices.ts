import { Flags } from '@oclif/core';
import { GpuframeCommand } from '../cli/base-command.js';
import { RuntimeFailure } from '../engine/errors.js';
import { listGpus, type GpuInfo } from '../engine/gpu/device.js';
import { chooseGpus, type DeviceMode } from '../engine/exec/gpu-select.js';
import { driPrimeOf, gpuMemoryByBus, parseGpuList } from '../engine/gpu/pci.js';
import { budgetBytes } from '../engine/gpu/buffers.js';

/** The limits that decide chunk sizes and kernel shapes. */
const KEY_LIMITS = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupsPerDimension'];

export default class Devices extends GpuframeCommand {
  static summary = 'List the GPUs WebGPU sees (name, backend, PCI bus, limits, memory) and which the executor would use.';
  static examples = ['<%= config.bin %> devices', '<%= config.bin %> devices --json --device gpu --gpus 0'];
  static flags = {
    json: Flags.boolean({ description: 'print JSON instead of a table' }),
    device: Flags.string({ description: 'as for a run: auto, gpu or cpu', options: ['auto', 'gpu', 'cpu'], default: 'auto' }),
    gpus: Flags.string({ description: 'as for a run: which GPUs, e.g. 0,1' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Devices);
    const indices = flags.gpus === undefined ? undefined : parseGpuList(flags.gpus);
    const [found, memoryByBus] = await Promise.all([listGpus(), gpuMemoryByBus()]);
    let used: GpuInfo[] = [];
    let reason: string;
    try {
      const choice = await chooseGpus(flags.device as DeviceMode, indices, found);
      used = choice.use;
      reason = choice.reason;
    } catch (err) {
      if (!(err instanceof RuntimeFailure)) throw err;
      reason = `a run would fail: ${err.message}`;
    }
    const gpus = found.map((g, index) => {
      const memory = g.busId ? memoryByBus.get(driPrimeOf(g.busId)) ?? null : null;
      return {
        index,
        name: g.adapter?.name ?? null,
        vendor: g.adapter?.vendor ?? null,
        backend: g.adapter?.backend ?? null,
        busId: g.busId,
        isSoftware: g.adapter?.isSoftware ?? null,
        limits: Object.fromEntries(KEY_LIMITS.map((k) => [k, g.adapter?.limits[k] ?? null])),
        features: g.adapter?.features ?? [],
        // Device memory as the driver reports it (nvidia-smi), and what a GPU worker's buffers may hold.
        memory,
        budgetBytes: g.adapter ? budgetBytes({ maxBufferSize: g.adapter.limits.maxBufferSize, maxStorageBufferBindingSize: g.adapter.limits.maxStorageBufferBindingSize }, memory?.freeBytes ?? null) : null,
        used: used.includes(g),
        error: g.error ?? null,
      };
    });
    const executor = { device: flags.device, gpus: gpus.filter((g) => g.used).map((g) => g.index), reason };
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ gpus, executor }, null, 2)}\n`);
      return;
    }
    if (gpus.length === 0) process.stdout.write('WebGPU sees no GPU (no Vulkan driver found).\n');
    for (const g of gpus) {
      const mib = (n: number | null) => (n === null ? '?' : `${Math.round(n / 2 ** 20)} MiB`);
      process.stdout.write(`${g.used ? '*' : ' '} ${g.index}: ${g.name ?? `no adapter (${g.error ?? 'unknown'})`}${g.isSoftware ? ' [software]' : ''}\n`);
      process.stdout.write(`     backend ${g.backend ?? '?'}, PCI bus ${g.busId ?? 'none'}, storage binding ${mib(g.limits.maxStorageBufferBindingSize)}, `
        + `workgroup storage ${g.limits.maxComputeWorkgroupStorageSize ?? '?'} B, ${g.limits.maxComputeInvocationsPerWorkgroup ?? '?'} invocations/workgroup\n`);
      process.stdout.write(`     memory ${g.memory ? `${mib(g.memory.totalBytes)} (${mib(g.memory.freeBytes)} free)` : 'unknown'}, budget ${mib(g.budgetBytes)}\n`);
    }
    process.stdout.write(`executor (--device ${flags.device}${flags.gpus ? ` --gpus ${flags.gpus}` : ''}): ${executor.gpus.length > 0 ? `GPU ${executor.gpus.join(', ')}` : 'CPU workers'} (${reason})\n`);
  }
}
