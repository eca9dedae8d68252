// Which runner a run gets: --device cpu -> CPU workers; --device gpu -> one worker per selected GPU
// (software adapters such as lavapipe allowed); --device auto -> GPU workers when WebGPU finds
// hardware GPUs, else CPU workers. --gpus 0,1 picks GPUs by their index in `gpuframe devices`.

import { RuntimeFailure, UsageError } from '../errors.js';
import type { GpuInfo } from '../gpu/device.js';
import { driPrimeOf, gpuBusIds, gpuCandidates } from '../gpu/pci.js';
import type { Task } from './fragment.js';
import { HybridRunner } from './hybrid-pool.js';
import { InProcessRunner, NO_WORKERS, ProcessPool, type TaskRunner } from './pool.js';
import { traced, type Tracer } from './trace.js';

export type DeviceMode = 'auto' | 'gpu' | 'cpu';

export interface DeviceSettings {
  device?: DeviceMode;
  /** Indices into listGpus() (--gpus); all when absent. */
  gpus?: number[];
  workers: number;
  /** --memory-limit, shared out to the workers. */
  memoryLimit?: number;
  warn(message: string): void;
}

export interface GpuChoice {
  /** GPUs the executor would use (empty: CPU workers). */
  use: GpuInfo[];
  /** Every GPU found, in index order. */
  found: GpuInfo[];
  allowSoftware: boolean;
  /** Why the choice is what it is, in words. */
  reason: string;
}

/** The GPUs a run with these flags would use. Throws for --device gpu without a usable adapter. */
export async function chooseGpus(device: DeviceMode, indices: number[] | undefined, found?: GpuInfo[]): Promise<GpuChoice> {
  if (device === 'cpu') return { use: [], found: found ?? [], allowSoftware: false, reason: '--device cpu' };
  // auto without any GPU on the PCI bus: skip probing (it starts a process) — CPU it is.
  if (device === 'auto' && found === undefined && gpuBusIds().length === 0) {
    return { use: [], found: [], allowSoftware: false, reason: 'no GPU on this machine; CPU workers' };
  }
  // Loaded only when GPUs are probed: it brings in dawn.node.
  const { listGpus } = await import('../gpu/device.js');
  const all = found ?? (await listGpus());
  for (const i of indices ?? []) {
    if (i >= all.length) throw new UsageError(`--gpus: there is no GPU ${i}; WebGPU sees ${all.length} (${all.map((g, k) => `${k}: ${g.adapter?.name ?? 'no adapter'}`).join(', ') || 'none'})`);
  }
  const picked = (indices ?? all.map((_, i) => i)).map((i) => all[i]).filter((g) => g.adapter !== null);
  if (device === 'auto') {
    const hardware = picked.filter((g) => !g.adapter!.isSoftware);
    return hardware.length > 0
      ? { use: hardware, found: all, allowSoftware: false, reason: `--device auto found ${hardware.length} hardware GPU(s)` }
      : { use: [], found: all, allowSoftware: false, reason: '--device auto found no hardware GPU; CPU workers' };
  }
  if (picked.length === 0) {
    const why = all.length === 0 ? 'WebGPU found no adapter (no Vulkan driver or ICD; install mesa-vulkan-drivers for lavapipe, or the GPU vendor\'s Vulkan driver)' : all.map((g, i) => `GPU ${i}: ${g.error ?? 'no adapter'}`).join('; ');
    throw new RuntimeFailure(`--device gpu: no usable GPU: ${why}`);
  }
  return { use: picked, found: all, allowSoftware: true, reason: `--device gpu: ${picked.length} GPU(s)` };
}

/**
 * The task runner for a run: GPU workers joined by CPU workers (tasks the GPU speeds up, partial
 * aggregates parsed from CSV on the GPU, prefer the GPUs; idle CPU workers take any task), or CPU workers alone, or (workers 0, CPU) this process.
 * With GPUs, --workers 0 means GPU workers only. --device auto falls back to CPU workers when no
 * worker opens a hardware GPU.
 */
export async function createRunner(settings: DeviceSettings, tracer?: Tracer): Promise<TaskRunner> {
  const device = settings.device ?? 'cpu';
  const candidates = device === 'cpu' ? [] : gpuCandidatesHere(device, settings.gpus);
  if (candidates.length === 0) return settings.workers === 0 ? new InProcessRunner(tracer) : new ProcessPool(settings.workers, tracer, settings.memoryLimit);
  // Loaded only when GPUs may be used.
  const [{ gpuCsvPathApplies }, { gpuTasksPerWorker }] = await Promise.all([import('./gpu-csv-aggregate.js'), import('./gpu-pool.js')]);
  // The run plans (chunking its inputs) while the GPU workers open (most of a second each).
  const opening = traced(tracer, 'open GPU workers', () => openGpuWorkers(device, candidates, settings, tracer));
  const gpus = (runner: Promise<TaskRunner | null>) => ({ workers: candidates.length, tasksPerWorker: gpuTasksPerWorker, runner });
  // GPU workers only: every task waits for them (this process runs the tasks when none opened, --device auto).
  if (settings.workers === 0) return new HybridRunner(gpus(opening.then((r) => r ?? new InProcessRunner(tracer))), NO_WORKERS, () => true);
  // Training data GPU kernels read lives on the GPU workers only, and forests grow there: GPU and
  // CPU compute these in different precisions, so results never depend on scheduling.
  // Forest predictions too, for speed only (the bytes are the same anywhere): the device walks
  // the trees while a CPU worker walks them row by row, so a chunk it took held up the end
  // (2 H200s + 32 cores, 333k rows, 100 trees: 13.3 s with CPU workers taking chunks, 6.3 s on
  // the GPUs alone).
  const predictsForest = (task: Task) => task.fragment.ops.some((op) => op.kind === 'predict' && op.modelKind === 'random-forest');
  const gpuOnly = (task: Task) => (task.terminal.kind === 'load-matrix' && task.terminal.kernels !== null) || (task.terminal.kind === 'grow-trees' && task.terminal.gpu) || predictsForest(task);
  // The CPU workers start on the first tasks while the GPU workers open; they yield the cores to them.
  return new HybridRunner(gpus(opening), new ProcessPool(settings.workers, tracer, settings.memoryLimit, true), gpuCsvPathApplies, gpuOnly);
}

/** The GPUs this machine offers a run with these flags (from the PCI bus; nothing is opened). */
function gpuCandidatesHere(device: DeviceMode, indices: number[] | undefined): GpuInfo[] {
  return gpuCandidates(device, indices, gpuBusIds(), driPrimeOf);
}

/** One worker per candidate GPU, or null (--device auto) when none opens. */
async function openGpuWorkers(device: DeviceMode, candidates: GpuInfo[], settings: DeviceSettings, tracer?: Tracer): Promise<TaskRunner | null> {
  const { GpuProcessPool } = await import('./gpu-pool.js');
  try {
    return await GpuProcessPool.create({ gpus: candidates, allowSoftware: device === 'gpu', tracer, warn: settings.warn });
  } catch (err) {
    if (device === 'auto') return null;
    const why = err instanceof Error ? err.message : String(err);
    throw new RuntimeFailure(`--device gpu: no usable GPU: WebGPU found no adapter in any GPU worker (no Vulkan driver or ICD? install mesa-vulkan-drivers for lavapipe, or the GPU vendor's Vulkan driver): ${why}`);
  }
}
