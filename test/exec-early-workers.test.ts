// CPU workers started before oclif loads (bin/run.js, cli/early-workers.ts): the pool adopts them
// when their settings match, so a run has no more worker processes than --workers, gives the same
// bytes, and a run that fails before its pool exists still exits at once.

import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cpuWorkerFor, startCpuWorkersEarly } from '../src/engine/exec/cpu-worker-process.js';
import { BIN, ROOT, gpuframe } from './helpers/cli.js';
import { tempDir } from './helpers/data.js';
import { childrenOf } from './reliability-process-tree.js';

const dir = tempDir('early-workers');

describe('early CPU workers', () => {
  it('are adopted only with the same memory share', () => {
    const [early] = startCpuWorkersEarly(1, 1 << 30);
    const other = cpuWorkerFor(1 << 29);
    const adopted = cpuWorkerFor(1 << 30);
    try {
      expect(adopted).toBe(early);
      expect(other).not.toBe(early);
    } finally {
      for (const c of [early, other]) c.kill('SIGKILL');
    }
  });

  it('a run adopts them (never more processes than --workers), with the same bytes; a failing run exits at once', async () => {
    const csv = join(dir, 'facts.csv');
    const rows = ['k,v,f'];
    for (let i = 0; i < 300_000; i++) rows.push(`k${i % 97},${i},${((i * 7919) % 1000) / 8}`);
    writeFileSync(csv, rows.join('\n') + '\n');
    const args = (out: string) => ['groupby', csv, '--by', 'k', '--agg', 'count(),sum(v),mean(f)', '--blocksize', '128KB', '--workers', '2', '--device', 'cpu', '-o', out];

    // Sampled while it runs: without adoption the two early workers would wait beside two new ones.
    const early = join(dir, 'early.csv');
    const child = spawn(process.execPath, [BIN, ...args(early)], { cwd: ROOT, env: { ...process.env, GPUFRAME_EARLY_CPU_WORKERS: '1' }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let most = 0;
    const sampler = setInterval(() => { most = Math.max(most, childrenOf(child.pid!).length); }, 5);
    const code = await exited;
    clearInterval(sampler);
    expect(code, stderr).toBe(0);
    expect(most).toBe(2);

    const late = join(dir, 'late.csv');
    const reference = await gpuframe(args(late), { env: { GPUFRAME_EARLY_CPU_WORKERS: '0' } });
    expect(reference.code, reference.stderr).toBe(0);
    expect(readFileSync(early).equals(readFileSync(late))).toBe(true);

    const started = performance.now();
    const failed = await gpuframe(['groupby', csv, '--by', 'nope', '--agg', 'count()', '--workers', '2', '-o', join(dir, 'no.csv')], { env: { GPUFRAME_EARLY_CPU_WORKERS: '1' } });
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/unknown key column 'nope'/);
    expect(performance.now() - started).toBeLessThan(10_000);
  }, 60_000);
});
