// Temp files and dirs that gpuframe processes left behind when they died without cleaning up
// (SIGKILL, a crash, a pipe stage that failed before reading the plan handed to it) are removed by
// later runs. Each such name holds its owner's pid: an owner still running keeps its files.

import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

/** Whose a temp entry is, and how long after its last change it may be taken for dead. */
export interface StaleRule { pid: number; minAgeMs: number }

/**
 * Removes the entries of `dir` whose owner (`ruleOf` their name; null: not ours) is another
 * process that no longer runs, and whose status changed at least the rule's minAgeMs ago (a file
 * handed from one process to the next is ownerless for a moment).
 */
export function removeStaleEntries(dir: string, ruleOf: (name: string) => StaleRule | null): void {
  let names: string[];
  try { names = readdirSync(dir); } catch { return; }
  const now = Date.now();
  for (const name of names) {
    const rule = ruleOf(name);
    if (rule === null || !Number.isInteger(rule.pid) || rule.pid === process.pid || processAlive(rule.pid)) continue;
    const path = join(dir, name);
    try {
      if (rule.minAgeMs > 0 && now - lstatSync(path).ctimeMs < rule.minAgeMs) continue;
      rmSync(path, { recursive: true, force: true });
    } catch { /* gone already, or not ours to remove */ }
  }
}

/** Run temp dirs: `gpuframe-run-<pid>-<random>`. */
export const RUN_DIR_PREFIX = 'gpuframe-run-';
/** Spooled copies of stdin: `gpuframe-stdin-<pid>-<random>[.ext]`. */
export const SPOOL_PREFIX = 'gpuframe-stdin-';

/**
 * A spool's owner may die before the next stage claims it (a stage that failed before reading the
 * plan handed to it never does): spools ownerless for ten minutes go.
 */
const SPOOL_ORPHAN_MS = Number(process.env.GPUFRAME_SPOOL_ORPHAN_MS ?? 10 * 60_000); // the variable is for tests

let tempDirSwept = false;

/** Removes the run dirs and spools of dead processes from the temp dir, once per process (stages and runs both ask). */
export function sweepTempDir(): void {
  if (tempDirSwept) return;
  tempDirSwept = true;
  const pidAfter = (name: string, prefix: string) => Number(name.slice(prefix.length).split('-')[0]);
  removeStaleEntries(tmpdir(), (name) => {
    if (name.startsWith(RUN_DIR_PREFIX)) return { pid: pidAfter(name, RUN_DIR_PREFIX), minAgeMs: 0 };
    if (name.startsWith(SPOOL_PREFIX)) return { pid: pidAfter(name, SPOOL_PREFIX), minAgeMs: SPOOL_ORPHAN_MS };
    return null;
  });
}
