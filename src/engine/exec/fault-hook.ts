// Test-only fault injection: GPUFRAME_FAULT=kill-worker@K makes the first worker process that
// reaches its K-th task die abruptly (once per run, coordinated through a marker file), so tests
// can check that lost tasks are retried and the output does not change.

import { existsSync, writeFileSync } from 'node:fs';

export function maybeInjectFault(taskNumber: number): void {
  const spec = process.env.GPUFRAME_FAULT;
  if (!spec) return;
  const m = /^kill-worker@(\d+)$/.exec(spec);
  if (!m || Number(m[1]) !== taskNumber) return;
  const marker = process.env.GPUFRAME_FAULT_MARKER;
  if (marker) {
    if (existsSync(marker)) return;
    writeFileSync(marker, String(process.pid));
  }
  process.kill(process.pid, 'SIGKILL');
}
