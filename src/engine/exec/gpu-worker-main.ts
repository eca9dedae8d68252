// Entry point of a GPU worker process (one per GPU; gpu-worker-process.ts starts it pinned to its
// GPU). Same IPC protocol as worker-main.ts, plus:
//   -> { type: 'ready', adapter, phases } once the device is open (adapter null: none could be opened)
//   -> { type: 'phases', phases }        start-up steps timed later (kernel compilation), for --trace
//   -> { type: 'device-lost', reason }   then exits: the pool retries its task on another GPU
// Test hooks (GPUFRAME_GPU_FAULT), at the K-th task: lose-device@K destroys the device;
// shader-warning@K compiles WGSL that draws a compiler warning, which dawn.node prints to stdout.

import { serializeError } from '../errors.js';
import { describeAdapter, openGpu, type GpuContext } from '../gpu/device.js';
import { budgetBytes, memoryBudget } from '../gpu/buffers.js';
import { driPrimeOf, gpuMemoryByBus } from '../gpu/pci.js';
import { GPU_PHASES } from '../gpu/timing.js';
import { gpuFaultAt, maybeInjectFault } from './fault-hook.js';
import type { Task } from './fragment.js';
import { ResidentCache } from './gpu-resident.js';
import { DeviceLost, runGpuTask, usesWarmedKernels, type GpuWorkerState } from './gpu-task.js';
import { sliceLargePartial } from './partial-slices.js';
import { warmUpKernels } from './gpu-warmup.js';
import { useForestLeafFinder } from '../ml/predict-columns.js';
import { gpuForestLeafFinder } from './gpu-forest-predict.js';
import { BroadcastCache } from './run-fragment.js';
import { wallSlice, type WallSlice } from './trace.js';
import { pollFor } from './hot-wait.js';
import { parentChannel } from './messages.js';

const cache = new BroadcastCache();
/** How long a GPU worker polls for a trainer's next round after answering one. */
const NEXT_ROUND_POLL_MS = 5;
let tasksRun = 0;
let worker: GpuWorkerState | null = null;

// Everything before this line (Node, the modules and dawn.node) is the process's start-up.
const startup: WallSlice[] = [wallSlice('start GPU worker (Node, modules)', 0)];
const openStart = performance.now();

const opening: Promise<GpuContext | null> = openGpu({ allowSoftware: process.env.GPUFRAME_GPU_SOFTWARE === '1' }).catch((err) => {
  process.stderr.write(`gpuframe: GPU worker could not open its device: ${err instanceof Error ? err.message : String(err)}\n`);
  return null;
});
// The GPU's free memory, asked while the device opens (~0.1 s against ~0.3 s): it sets the budget
// before any task runs. A driver that does not answer within 2 s leaves the default budget.
const busId = process.env.GPUFRAME_GPU_BUS_ID;
const memory = busId ? gpuMemoryByBus(2_000).then((byBus) => byBus.get(driPrimeOf(busId)) ?? null) : Promise.resolve(null);
const opened: Promise<GpuContext | null> = Promise.all([opening, memory]).then(([gpu, mem]) => {
  if (gpu) memoryBudget(gpu, budgetBytes(gpu.device.limits, mem?.freeBytes ?? null));
  return gpu;
});

// Tasks that may use the kernels it compiles wait for the warm-up, which runs once the parent knows
// the worker is ready (it plans then). A trainer's workers skip the compiles (GPUFRAME_GPU_WARM_UP=0).
const WARM_UP = process.env.GPUFRAME_GPU_WARM_UP !== '0';
const warmed: Promise<void> = opened.then((gpu) => new Promise((resolve) => {
  setImmediate(async () => {
    const start = performance.now();
    try { if (gpu) await (WARM_UP ? warmUpKernels(gpu) : gpu.checked); } catch { /* a kernel that fails to compile fails its task later, with context */ }
    if (gpu && !gpu.isSoftware) process.send!({ type: 'phases', phases: [wallSlice(WARM_UP ? 'compile kernels, map staging' : 'device checks', start)] });
    resolve();
  });
}));

void opened.then((gpu) => {
  startup.push(wallSlice('open GPU device', openStart));
  process.send!({ type: 'ready', adapter: gpu ? describeAdapter(gpu) : null, phases: startup });
  if (!gpu) return;
  // Half the device budget may stay resident between tasks; the rest is for the task at hand.
  worker = { gpu, resident: new ResidentCache(memoryBudget(gpu).limitBytes / 2) };
  // Forests predict on the device (the same leaves as on a CPU).
  useForestLeafFinder(gpuForestLeafFinder(gpu));
  void gpu.device.lost.then((info) => reportLost(info.message || String(info.reason)));
});

function reportLost(reason: string): void {
  process.send!({ type: 'device-lost', reason }, () => process.exit(75));
}

function maybeInjectGpuFault(gpu: GpuContext): void {
  const fault = gpuFaultAt(tasksRun);
  if (fault === 'shader-warning') gpu.device.createShaderModule({ code: 'diagnostic(off, chromium.no_such_rule);\n@compute @workgroup_size(1) fn main() {}' });
  if (fault === 'lose-device') {
    gpu.device.destroy();
    throw new DeviceLost('device destroyed by GPUFRAME_GPU_FAULT');
  }
}

const parent = parentChannel({ broadcast: (b) => cache.add(b), task: runTaskOnGpu });

function runTaskOnGpu(id: number, task: Task): void {
  const received = GPU_PHASES ? performance.timeOrigin + performance.now() : 0;
  const ready = usesWarmedKernels(task) ? warmed.then(() => opened) : opened.then(async (gpu) => { await gpu?.checked; return gpu; });
  void ready.then(async (gpu) => {
    tasksRun++;
    maybeInjectFault(tasksRun);
    try {
      if (!gpu || !worker) throw new DeviceLost('this GPU worker has no device');
      maybeInjectGpuFault(gpu);
      const result = sliceLargePartial(await runGpuTask(task, cache, worker), task.terminal);
      // With GPUFRAME_GPU_PHASES=1, when the task arrived and left (the parent reports the messages' latency).
      parent.send({ type: 'result', id, result, ...(GPU_PHASES ? { received, sent: performance.timeOrigin + performance.now() } : {}) });
      // A trainer's next round follows within a fraction of a millisecond (hot-wait.ts).
      if (task.terminal.kind === 'map-matrix') pollFor(NEXT_ROUND_POLL_MS);
    } catch (err) {
      if (err instanceof DeviceLost) reportLost(err.message);
      else parent.send({ type: 'error', id, error: serializeError(err) });
    }
  });
}

// The parent going away (killed, Ctrl-C) ends the worker too.
process.on('disconnect', () => process.exit(0));
