// The worker processes bin/run.js starts before oclif loads: GPU workers
// (engine/exec/gpu-worker-process.ts) and CPU workers (engine/exec/cpu-worker-process.ts).
// A guess from the raw command line, before oclif parses it: a run adopts these workers instead of
// starting its own; a wrong guess costs worker processes that are killed at exit.
// Overlapping start-ups needs spare cores: on a 2-core machine (lavapipe in CI) starting the GPU
// worker beside the parent made runs slower (2.7-2.9 s against 2.1-2.6 s), so workers start early
// only with at least 4 cores. GPUFRAME_EARLY_GPU_WORKERS and GPUFRAME_EARLY_CPU_WORKERS (1 or 0)
// decide instead (tests, measurements).

import { fstatSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { cpuWorkerMemoryShare, startCpuWorkersEarly } from '../engine/exec/cpu-worker-process.js';
import { startGpuWorkersEarly } from '../engine/exec/gpu-worker-process.js';
import { driPrimeOf, gpuBusIds, gpuCandidates, parseGpuList, quickGpuBusIds } from '../engine/gpu/pci.js';
import { memoryLimitOf } from './sizes.js';

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

/** Whether workers of this kind start early: the variable says so, else with 4 cores or more. */
function startsEarly(variable: string | undefined): boolean {
  return variable === '1' || (variable !== '0' && availableParallelism() >= 4);
}

/** Starts the workers the command line `argv` (without node and script) will use, if it runs a plan. */
export function startEarlyWorkers(argv: readonly string[]): void {
  const [command, ...rest] = argv;
  if (!STAGES.has(command) && !TRAINERS.has(command)) return;
  if (rest.some((a) => a === '--help' || a === '-h' || a === '--explain' || a === '--dot')) return;
  if (STAGES.has(command)) {
    const output = rest.some((a) => a === '-o' || a === '--output' || a.startsWith('--output=') || /^-o./.test(a));
    const format = flagValue(rest, 'format');
    if (format === 'plan' || (!output && format === undefined && stdoutIsPipe())) return;
  }
  const device = flagValue(rest, 'device') ?? 'auto';
  const gpuDevice = device === 'auto' || device === 'gpu' ? device : null;
  const busIds = gpuDevice ? quickGpuBusIds() ?? gpuBusIds() : [];
  const onGpus = device === 'gpu' || busIds.length > 0;
  if (gpuDevice && onGpus && startsEarly(process.env.GPUFRAME_EARLY_GPU_WORKERS)) startGpuWorkers(gpuDevice, flagValue(rest, 'gpus'), busIds, TRAINERS.has(command));
  // CPU workers alone (a run beside GPUs has them too, gpu-select.ts, but there the GPU workers'
  // start is what the run waits for): 1 GB group-bys on 16 cores, --device cpu, ran 2-16% faster;
  // beside an H100 (--device auto) 3-4% slower (BENCHMARKS.md, twenty-eighth session).
  const forced = process.env.GPUFRAME_EARLY_CPU_WORKERS;
  if (forced === '1' || (startsEarly(forced) && !onGpus)) startCpuWorkers(flagValue(rest, 'workers'), flagValue(rest, 'memory-limit'));
}

function startGpuWorkers(device: 'auto' | 'gpu', gpus: string | undefined, busIds: string[], trainer: boolean): void {
  try {
    // A trainer's workers compile its ML kernels while its rows load, not the CSV path's at start.
    startGpuWorkersEarly(gpuCandidates(device, gpus === undefined ? undefined : parseGpuList(gpus), busIds, driPrimeOf), device === 'gpu', !trainer);
  } catch {
    // A bad --gpus: the command says so once oclif has parsed it.
  }
}

/** As runSettings (stage.ts) reads --workers and --memory-limit. */
function startCpuWorkers(workers: string | undefined, memoryLimit: string | undefined): void {
  const count = workers === undefined ? availableParallelism() : Number(workers);
  if (!Number.isInteger(count) || count <= 0) return; // 0: no workers; a bad value: the command says so
  let limit: number;
  try {
    limit = memoryLimitOf(memoryLimit);
  } catch {
    return;
  }
  startCpuWorkersEarly(count, cpuWorkerMemoryShare(count, limit));
}
