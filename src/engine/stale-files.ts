// Temp files and dirs that gpuframe processes left behind when they died without cleaning up
// (SIGKILL, a crash, a pipe stage that failed before reading the plan handed to it) are removed by
// later runs. Each such name holds its owner's pid: an owner still running keeps its files.

import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

/**
 * Removes the entries of `dir` whose owner (`ownerOf` their name; null: not ours) is another
 * process that no longer runs, and whose status changed at least `minAgeMs` ago (a file handed
 * from one process to the next is ownerless for a moment).
 */
export function removeStaleEntries(dir: string, ownerOf: (name: string) => number | null, minAgeMs = 0): void {
  let names: string[];
  try { names = readdirSync(dir); } catch { return; }
  const now = Date.now();
  for (const name of names) {
    const pid = ownerOf(name);
    if (pid === null || !Number.isInteger(pid) || pid === process.pid || processAlive(pid)) continue;
    const path = join(dir, name);
    try {
      if (minAgeMs > 0 && now - lstatSync(path).ctimeMs < minAgeMs) continue;
      rmSync(path, { recursive: true, force: true });
    } catch { /* gone already, or not ours to remove */ }
  }
}
