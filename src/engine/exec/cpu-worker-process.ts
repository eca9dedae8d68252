// Starting a CPU worker process, and starting them early.
//
// A CPU worker needs ~0.3 s (development machine) for Node and its modules before it can take a
// task, and the pool used to start it only once oclif had loaded and the plan was built (~0.35 s
// into the process): a 300 MB Parquet group-by's first tasks took 0.48-0.56 s against ~0.1 s for
// later ones. bin/run.js calls startCpuWorkersEarly when the command line says the run will use
// CPU workers, so the two overlap; the pool then adopts the waiting workers. Workers nobody adopts
// (the command failed, or wanted other settings) never keep this process alive.

import { fork, type ChildProcess } from 'node:child_process';
import { holdChild, workerEntry } from './worker-entry.js';

/**
 * Node flags a CPU worker starts with: --expose-gc (a worker over its memory share collects after
 * a task, see worker-main.ts) and, under --cpu-prof, the profiling flags.
 */
function cpuWorkerNodeFlags(): string[] {
  return ['--expose-gc', ...cpuProfileFlags(process.execArgv)];
}

/** The --cpu-prof flags (and their values) of `execArgv`, for workers to profile themselves too. */
export function cpuProfileFlags(execArgv: string[]): string[] {
  const flags: string[] = [];
  execArgv.forEach((a, i) => {
    if (!a.startsWith('--cpu-prof')) return;
    flags.push(a);
    // A value given as the next argument (--cpu-prof-interval 200) goes with its flag.
    const next = execArgv[i + 1];
    if (a !== '--cpu-prof' && !a.includes('=') && next !== undefined && !next.startsWith('-')) flags.push(next);
  });
  return flags;
}

/** A CPU worker keeping `memoryShare` bytes of --memory-limit (Infinity: none). */
interface CpuWorker { child: ChildProcess; memoryShare: number }

function forkCpuWorker(memoryShare: number): CpuWorker {
  const env = Number.isFinite(memoryShare) ? { ...process.env, GPUFRAME_WORKER_MEMORY: String(memoryShare) } : process.env;
  const child = fork(workerEntry('worker-main.js'), [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: cpuWorkerNodeFlags(), env });
  return { child, memoryShare };
}

const waiting: CpuWorker[] = [];

/** Starts `count` workers keeping `memoryShare` bytes each now, for a pool created later to adopt. */
export function startCpuWorkersEarly(count: number, memoryShare: number): ChildProcess[] {
  if (waiting.length === 0 && count > 0) process.once('exit', () => { for (const w of waiting) w.child.kill('SIGKILL'); });
  return Array.from({ length: count }, () => {
    const w = forkCpuWorker(memoryShare);
    holdChild(w.child, false);
    waiting.push(w);
    return w.child;
  });
}

/** A worker started early with this memory share, now owned by the caller; else a fresh one. */
export function cpuWorkerFor(memoryShare: number): ChildProcess {
  const at = waiting.findIndex((w) => w.memoryShare === memoryShare && w.child.exitCode === null && w.child.signalCode === null);
  if (at < 0) return forkCpuWorker(memoryShare).child;
  const [w] = waiting.splice(at, 1);
  holdChild(w.child, true);
  return w.child;
}

/** The memory share of each of `count` CPU workers under `memoryLimit`: the parent counts as one more. */
export function cpuWorkerMemoryShare(count: number, memoryLimit: number): number {
  return Math.floor(memoryLimit / (count + 1));
}
