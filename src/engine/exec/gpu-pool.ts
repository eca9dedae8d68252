// One worker process per GPU. Each worker is pinned to its GPU through Mesa's device-select layer
// (DRI_PRIME=pci-… + MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE=1) and reports the adapter it got;
// the layer's debug output (MESA_VK_DEVICE_SELECT_DEBUG=1, on the worker's stderr) names the
// physical device it selected, so the pool can check that no two workers share a GPU. When it
// cannot (no layer, or a duplicate), it says what is missing and keeps one worker per device.
// A crashed worker is restarted a bounded number of times; a lost device retires its worker;
// tasks of either are retried on the other workers (queue, retries: WorkerProcessPool).

import type { ChildProcess } from 'node:child_process';
import { RuntimeFailure } from '../errors.js';
import type { AdapterDescription, GpuInfo } from '../gpu/device.js';
import { gpuWorkerFor } from './gpu-worker-process.js';
import { WorkerProcessPool, type WorkerMessage, type WorkerSlot } from './pool.js';
import type { Tracer, WallSlice } from './trace.js';
import type { Terminal } from './fragment.js';

/**
 * Tasks a GPU worker runs at once: one reads and uploads its chunk while others wait on the GPU.
 * Three, not two: 10 GB CSV group-by on 2 H200s with 256 MB chunks, four runs over two sessions,
 * 1.17-1.51 s against 1.30-1.64 s (BENCHMARKS.md, seventh session). GPUFRAME_GPU_TASKS overrides
 * it (for measuring; the work's results never depend on it).
 */
export const GPU_TASKS_PER_WORKER = Math.max(1, Math.floor(Number(process.env.GPUFRAME_GPU_TASKS) || 3));

/**
 * ML partition loads a GPU worker runs at once: a load mostly waits on its file read (the pages of
 * the memory it reads into, which the worker keeps, fault in at first touch), so more of them in
 * flight overlap those waits. k-means 10^7 × 32 on one H200, loading: three at once 1.41–1.58 s,
 * six 1.04–1.26 s, nine 1.09–1.15 s (eighth session, with UV_THREADPOOL_SIZE 8 and 12:
 * GPU_WORKER_THREADPOOL).
 */
export const GPU_LOADS_PER_WORKER = 9;

/** Tasks ending in `terminal` a GPU worker runs at once (without one: tasks of any kind). */
export function gpuTasksPerWorker(terminal?: Terminal): number {
  return terminal?.kind === 'load-matrix' ? Math.max(GPU_LOADS_PER_WORKER, GPU_TASKS_PER_WORKER) : GPU_TASKS_PER_WORKER;
}

/** Restarts of one GPU's worker after crashes before the GPU is given up. */
const MAX_RESTARTS = 2;
const READY_TIMEOUT_MS = 120_000;

export interface GpuPoolOptions {
  /** The GPUs to use, in --gpus order (listGpus entries). */
  gpus: GpuInfo[];
  /** Let workers open software adapters such as lavapipe (--device gpu only). */
  allowSoftware: boolean;
  tracer?: Tracer;
  warn(message: string): void;
}

/** What one worker reported about its device. */
export interface GpuWorkerDevice {
  gpu: GpuInfo;
  adapter: AdapterDescription | null;
  /** The physical device as the device-select layer names it (e.g. `10de:2335 "NVIDIA H200" discrete GPU 0000:06:00.0`), null without the layer. */
  selected: string | null;
  /** Whether the device-select layer was loaded in the worker. */
  layer: boolean;
}

interface SlotInfo {
  device: GpuWorkerDevice;
  selectLines: string[];
  restarts: number;
  /** Why this GPU is out of service. */
  gone: string | null;
  onReady: ((adapter: AdapterDescription | null) => void) | null;
}

export class GpuProcessPool extends WorkerProcessPool {
  private readonly info: SlotInfo[];

  get gpuWorkers(): number {
    return this.size;
  }

  /** Starts one worker per GPU, waits until each has opened its device, and checks the pinning. */
  static async create(options: GpuPoolOptions): Promise<GpuProcessPool> {
    const pool = new GpuProcessPool(options);
    try {
      await pool.waitReady();
      pool.checkDistinctDevices();
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  protected override depthOf(terminal: Terminal): number {
    return gpuTasksPerWorker(terminal);
  }

  private constructor(private readonly options: GpuPoolOptions, tracer?: Tracer) {
    super(tracer ?? options.tracer, GPU_TASKS_PER_WORKER);
    this.info = options.gpus.map((gpu) => ({ device: { gpu, adapter: null, selected: null, layer: false }, selectLines: [], restarts: 0, gone: null, onReady: null }));
    options.gpus.forEach((_, i) => this.startSlot(i));
  }

  /** The devices of the workers in service. */
  get devices(): GpuWorkerDevice[] {
    return this.info.filter((_, i) => !this.slots[i].retired).map((s) => s.device);
  }

  protected spawnChild(i: number): { child: ChildProcess; name: string } {
    // A restart always starts a fresh process; the first start may adopt one started early.
    const worker = gpuWorkerFor(this.info[i].device.gpu, this.options.allowSoftware);
    this.info[i].selectLines = [];
    worker.onLine((line) => this.onWorkerLine(i, line));
    // After startSlot has attached its own 'message' listener (synchronously, after this returns).
    queueMicrotask(() => worker.replayMessages());
    return { child: worker.child, name: `gpu-worker-${i}` };
  }

  /** A line a worker wrote: device-select debug lines are kept for identification; Dawn's limit notices are dropped; the rest goes to stderr. */
  private onWorkerLine(i: number, line: string): void {
    if (/^(selectable devices:|\s+GPU \d+: |device-select: )/.test(line)) { this.info[i].selectLines.push(line); return; }
    if (/^Warning: maxDynamic\w+ artificially reduced/.test(line)) return;
    process.stderr.write(`${line}\n`);
  }

  protected onWorkerMessage(slot: WorkerSlot, msg: WorkerMessage): void {
    const i = this.slots.indexOf(slot);
    if (i < 0) return;
    const s = this.info[i];
    if (Array.isArray(msg.phases)) this.tracer?.recordWall(slot.name, msg.phases as WallSlice[]);
    if (msg.type === 'ready') {
      s.device.adapter = (msg.adapter as AdapterDescription | null) ?? null;
      s.onReady?.(s.device.adapter);
      s.onReady = null;
    } else if (msg.type === 'device-lost' && s.gone === null) {
      s.gone = `device lost (${String(msg.reason)})`;
      this.options.warn(`${this.label(i)}: ${s.gone}; its tasks move to the other GPUs`);
    }
  }

  protected shouldRespawn(i: number, code: number | null, signal: NodeJS.Signals | null): boolean {
    const s = this.info[i];
    s.onReady?.(null);
    s.onReady = null;
    if (s.gone) return false;
    if (++s.restarts > MAX_RESTARTS) {
      s.gone = `its worker died ${s.restarts} times (last: ${signal ?? `exit code ${code}`})`;
      return false;
    }
    return !this.closed;
  }

  protected noWorkersLeft(): string {
    const why = this.info.map((s, i) => `${this.label(i)}: ${s.gone ?? 'not in service'}`).join('; ');
    return `no GPU is left to run on (${why}); rerun with --device cpu`;
  }

  private label(i: number): string {
    const { gpu, adapter } = this.info[i].device;
    return `GPU ${i} (${adapter?.name ?? gpu.adapter?.name ?? 'unknown'}${gpu.busId ? `, ${gpu.busId}` : ''})`;
  }

  private async waitReady(): Promise<void> {
    const ready = this.info.map((s, i) => new Promise<AdapterDescription | null>((resolve) => {
      if (s.device.adapter) return resolve(s.device.adapter);
      s.onReady = resolve;
      setTimeout(() => { if (s.onReady === resolve) { s.onReady = null; this.retire(i); resolve(null); } }, READY_TIMEOUT_MS).unref();
    }));
    const adapters = await Promise.all(ready);
    // The layer writes to stderr before the device opens, but the pipe may deliver it after the
    // ready message: wait until each opened worker's selection has arrived (or 150 ms, without the layer).
    const selectionSeen = () => this.info.every((s, i) => adapters[i] === null || parseDeviceSelect(s.selectLines).selected !== null);
    for (const deadline = performance.now() + 150; !selectionSeen() && performance.now() < deadline;) await new Promise((r) => setTimeout(r, 5));
    adapters.forEach((a, i) => {
      if (a) return;
      this.info[i].gone ??= 'no WebGPU adapter in its worker';
      this.retire(i);
    });
    if (adapters.every((a) => a === null)) {
      throw new RuntimeFailure(`--device gpu: no GPU worker could open a WebGPU adapter (${this.info.map((s, i) => `${this.label(i)}: ${s.gone}`).join('; ')}); check the Vulkan driver (vulkaninfo) or use --device cpu`);
    }
    for (const s of this.info) Object.assign(s.device, parseDeviceSelect(s.selectLines));
  }

  /** Keeps one worker per physical device; warns when it cannot tell devices apart or two share one. */
  private checkDistinctDevices(): void {
    const live = this.info.map((_, i) => i).filter((i) => !this.slots[i].retired);
    if (live.length < 2) return;
    if (live.some((i) => !this.info[i].device.layer || this.info[i].device.selected === null)) {
      for (const i of live.slice(1)) this.retire(i);
      this.options.warn(`cannot pin GPU workers to different GPUs: Mesa's device-select Vulkan layer (VkLayer_MESA_device_select; Debian/Ubuntu package mesa-vulkan-drivers) did not load in the workers, so each would drive the same GPU; using one GPU, ${this.label(live[0])}`);
      return;
    }
    const seen = new Map<string, number>();
    for (const i of live) {
      const id = this.info[i].device.selected!;
      const first = seen.get(id);
      if (first === undefined) { seen.set(id, i); continue; }
      this.retire(i);
      this.options.warn(`${this.label(i)} and ${this.label(first)} both got the same device (${id}): DRI_PRIME pinning did not take effect; keeping ${this.label(first)}`);
    }
  }
}

/**
 * Reads MESA_VK_DEVICE_SELECT_DEBUG output: "selectable devices:", "  GPU n: vid:did "name" kind [bus]",
 * and "device-select: <rule> selected n". With one device and no rule line, that device is the one.
 */
export function parseDeviceSelect(lines: readonly string[]): { layer: boolean; selected: string | null } {
  const listed = new Map<number, string>();
  let chosen: number | null = null;
  for (const line of lines) {
    const g = /^\s+GPU (\d+): (.*)$/.exec(line);
    if (g) listed.set(Number(g[1]), g[2].trim());
    const s = /^device-select: .* selected (\d+)/.exec(line);
    if (s) chosen = Number(s[1]);
  }
  const layer = lines.some((l) => l.startsWith('selectable devices:'));
  if (chosen === null && listed.size === 1) chosen = [...listed.keys()][0];
  return { layer, selected: chosen === null ? null : listed.get(chosen) ?? `device ${chosen}` };
}
