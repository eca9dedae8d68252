// The run's temp dir at the end of a run: a process still writing there (a backup copy of a task
// that lost its race is killed only as the run ends) must not turn a finished run into a failure.
import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { withRunContext } from '../src/engine/run.js';

describe('the run temp dir', () => {
  it('a run ends normally while another process keeps writing files into its temp dir', async () => {
    let dir = '';
    let writer: ReturnType<typeof spawn> | null = null;
    // withRunContext installs the CLI's signal handlers (print, exit 130/143): not in a test worker.
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
    const before = new Map(signals.map((s) => [s, process.listeners(s)]));
    try {
      const result = await withRunContext({ workers: 0, memoryLimit: 1e9, progress: false, warn: () => {} }, null, async (ctx) => {
        dir = ctx.tmpDir;
        // Creates files as fast as it can until the dir is gone.
        writer = spawn(process.execPath, ['-e', "const fs = require('fs'); let i = 0; for (;;) { try { fs.writeFileSync(process.argv[1] + '/late-' + i++, 'x'); } catch { process.exit(0); } }", dir]);
        await sleep(300);
        return 42;
      });
      expect(result).toBe(42);
    } finally {
      for (const s of signals) for (const l of process.listeners(s)) if (!before.get(s)!.includes(l)) process.off(s, l);
      (writer as ReturnType<typeof spawn> | null)?.kill('SIGKILL');
      await sleep(50);
      rmSync(dir, { recursive: true, force: true });
    }
    expect(existsSync(dir)).toBe(false);
  });
});
