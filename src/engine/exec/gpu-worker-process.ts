// Starting a GPU worker process, and starting them early.
//
// A GPU worker takes about half a second before it can take a task (2 × H200: ~0.2 s for Node and
// its modules, ~0.3 s to open the device), and the command used to start it only once oclif had
// loaded, the plan was built and the runner created (~0.35 s into the process). bin/run.js calls
// startGpuWorkersEarly when the command line says the run will use GPUs, so these overlap; the
// pool then adopts the waiting workers, with everything they said meanwhile. Workers nobody
// adopts (the command failed, or chose other GPUs) never keep this process alive.

import { fork, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { GpuInfo } from '../gpu/device.js';
import { pinnedEnv } from '../gpu/pci.js';
import { holdChild, workerEntry } from './worker-entry.js';

/** libuv threads of a GPU worker (its file reads run there) unless UV_THREADPOOL_SIZE says otherwise: more than the ML partition loads it runs at once (gpu-pool.ts). */
export const GPU_WORKER_THREADPOOL = 12;

/**
 * Node flags of GPU workers. A larger young generation (32 MB semi-spaces; Node's default is 16):
 * every mapped staging range is a new ArrayBuffer over external memory, and V8 collects whenever
 * that grows by tens of MB, so uploading 13.6 GB took ~90 full and ~600 young collections, 35–45%
 * of the worker's main thread (--trace-gc, "external memory pressure"); with 32 MB, 10^8 × 16
 * loaded in 1.15–1.17 s against 1.32–1.42 s on an H200 (128 MB: 1.26–1.42 s; 32 MB with
 * --single-threaded-gc: 1.57–1.70 s).
 *
 * No crash workarounds: the dawn.node crash of notes/webgpu.md (a process holding a GPUDevice
 * dying on a hot JS loop) is the GPU instance or adapter being garbage-collected while their
 * device lives: the reproducers c7, c9 and t5 all pass without flags once both are kept
 * referenced, and all crash otherwise (lavapipe, 3-4 runs each). device.ts keeps both for the
 * life of the process (gpuInstance, GpuContext.adapter), so workers no longer need
 * --no-use-osr --single-threaded-gc, which made their JS loops ~3.7x slower.
 */
export const GPU_WORKER_NODE_FLAGS: string[] = ['--max-semi-space-size=32'];

/** The flags a GPU worker starts with: GPU_WORKER_NODE_FLAGS, then GPUFRAME_GPU_NODE_FLAGS (space-separated; to measure others). */
function gpuWorkerNodeFlags(): string[] {
  return [...GPU_WORKER_NODE_FLAGS, ...(process.env.GPUFRAME_GPU_NODE_FLAGS ?? '').split(/\s+/).filter((f) => f !== '')];
}

/**
 * A started GPU worker; what it writes and sends before its owner listens is kept. Its stdout is
 * not the command's: dawn.node prints Dawn's messages there (a shader's compilation warnings), and
 * the command's stdout may be its output. So both of its streams come back as lines, to stderr.
 */
export class GpuWorkerProcess {
  readonly child: ChildProcess;
  private lines: string[] | null = [];
  private lineReceiver: ((line: string) => void) | null = null;
  private readonly early: unknown[] = [];
  private readonly keep = (msg: unknown) => { this.early.push(msg); };

  /** `warmUp`: compile the CSV and group-by kernels when it starts (gpu-warmup.ts); a trainer's workers compile their own instead. */
  constructor(readonly gpu: GpuInfo, readonly allowSoftware: boolean, warmUp = true) {
    const base = gpu.driPrime ? pinnedEnv(gpu.driPrime) : process.env;
    const env = { ...base, UV_THREADPOOL_SIZE: base.UV_THREADPOOL_SIZE ?? String(GPU_WORKER_THREADPOOL), MESA_VK_DEVICE_SELECT_DEBUG: '1', GPUFRAME_GPU_SOFTWARE: allowSoftware ? '1' : '0', GPUFRAME_GPU_WARM_UP: warmUp ? '1' : '0',
      ...(gpu.busId ? { GPUFRAME_GPU_BUS_ID: gpu.busId } : {}) };
    this.child = fork(workerEntry('gpu-worker-main.js'), [], {
      env,
      execArgv: [...process.execArgv.filter((a) => !a.startsWith('--inspect')), ...gpuWorkerNodeFlags()],
      serialization: 'advanced',
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child.on('message', this.keep);
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        if (this.lineReceiver) this.lineReceiver(line);
        else this.lines!.push(line);
      });
    }
  }

  /** Hands every line the worker writes (stdout and stderr), the kept ones first, to `receive`. */
  onLine(receive: (line: string) => void): void {
    for (const line of this.lines ?? []) receive(line);
    this.lines = null;
    this.lineReceiver = receive;
  }

  /** Re-emits the messages kept so far to the child's other 'message' listeners, and stops keeping them. */
  replayMessages(): void {
    this.child.off('message', this.keep);
    for (const msg of this.early.splice(0)) this.child.emit('message', msg);
  }
}

const waiting: GpuWorkerProcess[] = [];

/** Starts a worker for each of `gpus` now, for a pool created later to adopt; returns them. */
export function startGpuWorkersEarly(gpus: readonly GpuInfo[], allowSoftware: boolean, warmUp = true): GpuWorkerProcess[] {
  if (waiting.length === 0 && gpus.length > 0) process.once('exit', () => { for (const w of waiting) w.child.kill('SIGKILL'); });
  return gpus.map((gpu) => {
    const w = new GpuWorkerProcess(gpu, allowSoftware, warmUp);
    holdChild(w.child, false);
    waiting.push(w);
    return w;
  });
}

/**
 * A worker started early for this GPU (the same pinning: bus ids may be written differently) with
 * the same settings, now owned by the caller; else a fresh one.
 */
export function gpuWorkerFor(gpu: GpuInfo, allowSoftware: boolean): GpuWorkerProcess {
  const at = waiting.findIndex((w) => w.gpu.driPrime === gpu.driPrime && w.allowSoftware === allowSoftware && w.child.exitCode === null && w.child.signalCode === null);
  if (at < 0) return new GpuWorkerProcess(gpu, allowSoftware);
  const [w] = waiting.splice(at, 1);
  holdChild(w.child, true);
  return w;
}
