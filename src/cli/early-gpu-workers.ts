// The GPU workers bin/run.js starts before oclif loads (why: engine/exec/gpu-worker-process.ts).
// A guess from the raw command line, before oclif parses it: a run that uses GPUs adopts these
// workers instead of starting its own; a wrong guess costs a worker process that is killed at exit.
// Overlapping start-ups needs spare cores: on a 2-core machine (lavapipe in CI) starting the worker
// beside the parent made runs slower (2.7-2.9 s against 2.1-2.6 s), so it starts early only with
// at least 4 cores. GPUFRAME_EARLY_GPU_WORKERS=1 or 0 decides instead (tests).

import { fstatSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { startGpuWorkersEarly } from '../engine/exec/gpu-worker-process.js';
import { driPrimeOf, gpuBusIds, gpuCandidates, parseGpuList, quickGpuBusIds } from '../engine/gpu/pci.js';

/** Commands that end by running their plan, unless stdout is a pipe (then they pass it on). */
const STAGES = new Set(['read-csv', 'groupby', 'merge', 'predict', 'make-blobs', 'make-classification', 'make-regression']);
/** Commands that always run (they train on their input). */
const TRAINERS = new Set(['kmeans', 'rf-train', 'linreg']);

/** Whether stdout is a pipe or socket, where a stage writes its plan for the next stage. */
export function stdoutIsPipe(): boolean {
  if (process.stdout.isTTY) return false;
  try {
    const st = fstatSync(1);
    return st.isFIFO() || st.isSocket();
  } catch {
    return false;
  }
}

/** The value of --name (as `--name v` or `--name=v`), or undefined. */
function flagValue(argv: readonly string[], name: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === `--${name}`) return argv[i + 1];
    if (argv[i].startsWith(`--${name}=`)) return argv[i].slice(name.length + 3);
  }
  return undefined;
}

/** Starts the GPU workers the command line `argv` (without node and script) will use, if it runs a plan on GPUs. */
export function startEarlyGpuWorkers(argv: readonly string[]): void {
  const forced = process.env.GPUFRAME_EARLY_GPU_WORKERS;
  if (forced === '0' || (forced !== '1' && availableParallelism() < 4)) return;
  const [command, ...rest] = argv;
  if (!STAGES.has(command) && !TRAINERS.has(command)) return;
  if (rest.some((a) => a === '--help' || a === '-h' || a === '--explain' || a === '--dot')) return;
  const device = flagValue(rest, 'device') ?? 'auto';
  if (device !== 'auto' && device !== 'gpu') return;
  if (STAGES.has(command)) {
    const output = rest.some((a) => a === '-o' || a === '--output' || a.startsWith('--output=') || /^-o./.test(a));
    const format = flagValue(rest, 'format');
    if (format === 'plan' || (!output && format === undefined && stdoutIsPipe())) return;
  }
  try {
    const gpus = flagValue(rest, 'gpus');
    // A trainer's workers compile its ML kernels while its rows load, not the CSV path's at start.
    startGpuWorkersEarly(gpuCandidates(device, gpus === undefined ? undefined : parseGpuList(gpus), quickGpuBusIds() ?? gpuBusIds(), driPrimeOf), device === 'gpu', !TRAINERS.has(command));
  } catch {
    // A bad --gpus: the command says so once oclif has parsed it.
  }
}
