// Interrupting a run: SIGINT/SIGTERM end the workers, remove the run's temp dir and the temporary
// output, leave no output file, and exit 130/143. SIGKILL of the parent mid-write leaves the
// destination absent (never partial), and the next run removes what the killed one left behind.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, gpuframe } from './helpers/cli.js';
import { tempDir } from './helpers/data.js';
import { childrenOf } from './reliability-process-tree.js';

const dir = tempDir('rel-interrupt');
const big = join(dir, 'big.csv');

beforeAll(() => {
  // ~70 MB: long enough (several seconds on 2 cores, even with the encoding done in the workers)
  // that the signal lands while the output is being written, also on a loaded machine.
  const rows: string[] = ['k,v,f'];
  for (let i = 0; i < 3_000_000; i++) rows.push(`k${i % 1000},${i},${(i * 0.37).toFixed(3)}`);
  writeFileSync(big, rows.join('\n') + '\n');
});

function alive(pid: number): boolean {
  try { process.kill(pid, 0); } catch { return false; }
  // A zombie is dead for our purposes.
  try { return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')); } catch { return false; }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Interrupted { code: number | null; signal: NodeJS.Signals | null; stderr: string; workers: number[]; sawTemp: boolean }

/** Starts `gpuframe read-csv big -o out`, waits until the temp output file exists, sends `signal`. */
async function interruptMidWrite(outFolder: string, signal: NodeJS.Signals, tmp: string): Promise<Interrupted> {
  const child = spawn(process.execPath, [BIN, 'read-csv', big, '-o', join(outFolder, 'out.csv'), '--workers', '2', '--blocksize', '256KB'], {
    cwd: ROOT, env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, sig) => r({ code, signal: sig })));
  let sawTemp = false;
  for (let waited = 0; waited < 30_000 && !sawTemp && child.exitCode === null; waited += 20) {
    sawTemp = readdirSync(outFolder).some((n) => n.endsWith('.tmp'));
    if (!sawTemp) await sleep(20);
  }
  const workers = childrenOf(child.pid!);
  child.kill(signal);
  return { ...(await done), stderr, workers, sawTemp };
}

describe('interrupts', () => {
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    it(`${signal} mid-write: exit ${code}, workers gone, no output, no temp output, no run temp dir`, async () => {
      const out = join(dir, `out-${signal}`);
      const tmp = join(dir, `tmp-${signal}`);
      mkdirSync(out);
      mkdirSync(tmp);
      const res = await interruptMidWrite(out, signal, tmp);
      expect(res.sawTemp, 'the run was interrupted while writing').toBe(true);
      expect(res.code, res.stderr).toBe(code);
      expect(res.stderr).toMatch(new RegExp(`interrupted by ${signal}`));
      expect(res.workers.length).toBeGreaterThan(0);
      await sleep(200);
      expect(res.workers.filter(alive)).toEqual([]);
      expect(readdirSync(out)).toEqual([]);
      expect(readdirSync(tmp)).toEqual([]);
    });
  }

  it('SIGKILL mid-write: no destination file; the next run cleans the leftovers and succeeds', async () => {
    const out = join(dir, 'out-SIGKILL');
    const tmp = join(dir, 'tmp-SIGKILL');
    mkdirSync(out);
    mkdirSync(tmp);
    const res = await interruptMidWrite(out, 'SIGKILL', tmp);
    expect(res.sawTemp, res.stderr).toBe(true);
    expect(res.signal).toBe('SIGKILL');
    expect(existsSync(join(out, 'out.csv'))).toBe(false); // never a partial destination
    // Workers notice the parent is gone (IPC disconnect) and exit.
    for (let waited = 0; waited < 5000 && res.workers.some(alive); waited += 50) await sleep(50);
    expect(res.workers.filter(alive)).toEqual([]);
    // What the killed run left: its temp output beside the destination and its run temp dir.
    expect(readdirSync(out).filter((n) => n.endsWith('.tmp')).length).toBe(1);
    expect(readdirSync(tmp).filter((n) => n.startsWith('gpuframe-run-')).length).toBe(1);

    const small = join(dir, 'small.csv');
    writeFileSync(small, 'a,b\n1,2\n');
    const next = await gpuframe(['read-csv', small, '-o', join(out, 'out.csv')], { env: { TMPDIR: tmp } });
    expect(next.code, next.stderr).toBe(0);
    expect(readdirSync(out)).toEqual(['out.csv']);
    expect(readFileSync(join(out, 'out.csv'), 'utf8')).toBe('a,b\n1,2\n');
    expect(readdirSync(tmp)).toEqual([]);
  });
});
