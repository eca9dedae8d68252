// Worker processes: where their entry script is, for fork(), and whether this process waits for them.

import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RuntimeFailure } from '../errors.js';

/** A compiled worker entry next to this file; under vitest (running .ts sources) the built copy in dist/. */
export function workerEntry(file: string): string {
  const here = fileURLToPath(new URL(`./${file}`, import.meta.url));
  if (existsSync(here)) return here;
  const built = here.replace(/([/\\])src([/\\])engine/, '$1dist$2engine');
  if (existsSync(built)) return built;
  throw new RuntimeFailure(`cannot find the worker entry (${here}); run \`npm run build\` first`);
}

/** Whether this process's event loop waits for `child`: its handle, IPC channel and pipes. */
export function holdChild(child: ChildProcess, held: boolean): void {
  for (const h of [child, child.channel, child.stdin, child.stdout, child.stderr] as ({ ref?: () => void; unref?: () => void } | null | undefined)[]) {
    if (held) h?.ref?.(); else h?.unref?.();
  }
}
