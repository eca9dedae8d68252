// Test-only fault injection, driven by GPUFRAME_FAULT (one spec, or several joined by commas):
//   kill-worker@K  the first worker process that reaches its K-th task dies abruptly (once per
//                  run when GPUFRAME_FAULT_MARKER names a marker file), so tests can check that
//                  lost tasks are retried and the output does not change;
//   enospc@BYTES   once a process has written BYTES bytes through checked writes (the output
//                  byte sink, spill files), every further checked write fails with ENOSPC, so
//                  tests can check that a full disk fails the run cleanly with nothing written.
// GPUFRAME_GPU_FAULT (the same syntax; GPU workers, gpu-worker-main.ts): lose-device@K makes a device report loss;
// shader-warning@K makes Dawn print a shader compilation warning.

import { existsSync, writeFileSync } from 'node:fs';

function faultSpecs(variable: string): string[] {
  return (process.env[variable] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/** The number after `name@` in `variable` (GPUFRAME_FAULT by default), or null when that fault is not asked for. */
function faultArgument(name: string, variable = 'GPUFRAME_FAULT'): number | null {
  for (const spec of faultSpecs(variable)) {
    const m = new RegExp(`^${name}@(\\d+)$`).exec(spec);
    if (m) return Number(m[1]);
  }
  return null;
}

/** Called by a worker before its `taskNumber`-th task (1-based). */
export function maybeInjectFault(taskNumber: number): void {
  if (faultArgument('kill-worker') !== taskNumber) return;
  const marker = process.env.GPUFRAME_FAULT_MARKER;
  if (marker) {
    if (existsSync(marker)) return;
    writeFileSync(marker, String(process.pid));
  }
  process.kill(process.pid, 'SIGKILL');
}

/** The GPUFRAME_GPU_FAULT a GPU worker is asked to inject before its `taskNumber`-th task (1-based), if any. */
export function gpuFaultAt(taskNumber: number): 'lose-device' | 'shader-warning' | null {
  for (const name of ['lose-device', 'shader-warning'] as const) if (faultArgument(name, 'GPUFRAME_GPU_FAULT') === taskNumber) return name;
  return null;
}

let checkedBytesWritten = 0;

/** Called before writing `bytes` bytes to `path`; throws the error a full disk gives once the
 *  enospc@BYTES budget of this process is spent. Costs one env lookup when no fault is set. */
export function chargeWrite(path: string, bytes: number): void {
  const budget = faultArgument('enospc');
  if (budget === null) return;
  if (checkedBytesWritten + bytes > budget) {
    const err = new Error(`ENOSPC: no space left on device, write '${path}'`) as NodeJS.ErrnoException;
    err.code = 'ENOSPC';
    err.path = path;
    throw err;
  }
  checkedBytesWritten += bytes;
}
