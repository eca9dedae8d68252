// Faults injected into real runs (GPUFRAME_FAULT, see src/engine/exec/fault-hook.ts): a killed
// worker costs a retry and the output bytes equal a fault-free run's; a worker that keeps dying
// and a full disk (output or spill) fail with a clear message and leave nothing behind.
// k-means under worker kills is covered in cli-ml.test.ts, GPU device loss in gpu-exec.test.ts.

import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { gpuframe } from './helpers/cli.js';
import { factCsv, tempDir } from './helpers/data.js';

const dir = tempDir('rel-faults');
const fact = join(dir, 'fact.csv');
const dim = join(dir, 'dim.csv');
const RUN = ['--workers', '2', '--blocksize', '64KB'];

beforeAll(() => {
  factCsv(fact, { rows: 30_000, groups: 500, seed: 11 }); // ~1.7 MB: ~27 partitions
  factCsv(dim, { rows: 3_000, groups: 500, seed: 12 });
});

/** A fresh, empty output folder per case, so "nothing written" can be checked as an empty listing. */
function outDir(name: string): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  return d;
}

/** Each job, and the worker task at which a worker is killed (the first, one mid-stream, one later). */
const jobs: Record<string, { args: string[]; killAt: number }> = {
  'read-csv → groupby': { args: ['groupby', fact, '--by', 'ks,b', '--agg', 'count(),sum(i),mean(f),var(f),nunique(ki)'], killAt: 1 },
  // i is nearly a key per row: the rows are exchanged by key range (row-exchange.ts).
  'read-csv → groupby, rows exchanged': { args: ['groupby', fact, '--by', 'i', '--agg', 'count(),sum(f),max(ks)'], killAt: 3 },
  'merge (broadcast)': { args: ['merge', fact, dim, '--on', 'ki', '--memory-limit', '1GB'], killAt: 4 },
  'merge (partitioned)': { args: ['merge', fact, dim, '--on', 'ki', '--memory-limit', '1MB'], killAt: 9 },
};

describe('a worker killed mid-run costs a retry, not the run', () => {
  for (const [name, { args, killAt }] of Object.entries(jobs)) {
    it(`${name}, a worker killed at its task ${killAt}: output identical to a fault-free run`, async () => {
      const d = outDir(`kill-${name.replace(/\W+/g, '-')}`);
      const clean = await gpuframe([...args, ...RUN, '-o', join(d, 'clean.csv')]);
      expect(clean.code, clean.stderr).toBe(0);
      const marker = join(d, 'marker');
      const res = await gpuframe([...args, ...RUN, '-o', join(d, 'fault.csv')], { env: { GPUFRAME_FAULT: `kill-worker@${killAt}`, GPUFRAME_FAULT_MARKER: marker } });
      expect(res.code, res.stderr).toBe(0);
      expect(existsSync(marker), 'the fault really happened').toBe(true);
      expect(readFileSync(join(d, 'fault.csv')).equals(readFileSync(join(d, 'clean.csv')))).toBe(true);
    });
  }

  it('a task whose worker dies every time fails after bounded retries, with a clear message and no output', async () => {
    const d = outDir('kill-always');
    // No marker: every fresh worker dies at its first task, so each task dies MAX_ATTEMPTS times.
    const res = await gpuframe([...jobs['read-csv → groupby'].args, ...RUN, '-o', join(d, 'out.csv')], { env: { GPUFRAME_FAULT: 'kill-worker@1' } });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/worker process died 3 times running .*giving up/);
    expect(res.stderr).not.toMatch(/\n\s+at /);
    expect(readdirSync(d)).toEqual([]);
  });
});

/**
 * Runs gpuframe with the disk full after `bytes` written (the run's temp dir inside `d`) and checks
 * the failure: exit 1, the spill message naming that dir, no stack trace, nothing left in `d`.
 */
async function expectSpillDiskFull(args: string[], d: string, bytes: number): Promise<void> {
  const res = await gpuframe(args, { env: { GPUFRAME_FAULT: `enospc@${bytes}`, TMPDIR: d } });
  expect(res.code, res.stderr).toBe(1);
  expect(res.stderr).toMatch(/cannot write spill file in .*gpuframe-run-.*: no space left on device/);
  expect(res.stderr).not.toMatch(/\n\s+at /);
  expect(readdirSync(d)).toEqual([]); // nor the run's temp dir (TMPDIR points here)
}

describe('a full disk fails the run cleanly', () => {
  it('ENOSPC while writing -o: exit 1, the message names the output, no file and no temp file', async () => {
    for (const format of ['csv', 'parquet', 'arrow', 'jsonl']) {
      const d = outDir(`enospc-out-${format}`);
      const out = join(d, `out.${format}`);
      // In one process: with workers, CSV and JSONL text reaches the parent through spill files,
      // which then meet the full disk first (the next test's message).
      const res = await gpuframe(['read-csv', fact, '--workers', '0', '--blocksize', '256KB', '-o', out], { env: { GPUFRAME_FAULT: 'enospc@100000' } });
      expect(res.code, res.stderr).toBe(1);
      expect(res.stderr).toMatch(new RegExp(`cannot write output '.*out\\.${format}': no space left on device`));
      expect(readdirSync(d)).toEqual([]);
    }
  });

  it('ENOSPC in the text workers encode (spill files on their way to the parent): exit 1, the message names the spill dir, no output', async () => {
    const d = outDir('enospc-encoded');
    await expectSpillDiskFull(['read-csv', fact, ...RUN, '-o', join(d, 'out.csv')], d, 100000);
  });

  it('ENOSPC in join spill files (written by workers): exit 1, the message names the spill dir, no output', async () => {
    const d = outDir('enospc-join-spill');
    await expectSpillDiskFull([...jobs['merge (partitioned)'].args, ...RUN, '-o', join(d, 'out.csv')], d, 20000);
  });

  it('ENOSPC in a row exchange\'s range spills (written by workers): exit 1, the message names the spill dir, no output', async () => {
    const d = outDir('enospc-exchange');
    const args = [...jobs['read-csv → groupby, rows exchanged'].args, ...RUN];
    const clean = await gpuframe([...args, '-o', join(dir, 'exchange-clean.csv'), '--trace', join(dir, 'exchange-clean.json')]);
    expect(clean.code, clean.stderr).toBe(0);
    expect(readFileSync(join(dir, 'exchange-clean.json'), 'utf8')).toContain('(rows-range)');
    // Arrow output is written by the parent alone: only the exchange's spills can meet the fault first.
    await expectSpillDiskFull([...args, '-o', join(d, 'out.arrow')], d, 20000);
  });

  it('ENOSPC in the files that carry large worker results: exit 1, the message names the spill dir, no output', async () => {
    const d = outDir('enospc-messages');
    const big = join(dir, 'fact-big.csv');
    factCsv(big, { rows: 100_000, groups: 500, seed: 13 }); // ~6 MB: results of a few MB each
    // Arrow output: the rows come back to the parent as batches, through message files.
    await expectSpillDiskFull(['read-csv', big, '--workers', '2', '--blocksize', '3MB', '-o', join(d, 'out.arrow')], d, 100000);
  });

  it('ENOSPC in rf-train\'s binned rows file: exit 1, the message names the spill dir, no model', async () => {
    const d = outDir('enospc-forest');
    const data = join(dir, 'forest.csv');
    expect((await gpuframe(['make-classification', '--n-samples', '20000', '--n-features', '8', '--seed', '1', '-o', data])).code).toBe(0);
    await expectSpillDiskFull(['rf-train', data, '--target', 'y', '--n-estimators', '4', '--model-out', join(d, 'rf.json'), '--workers', '2', '--device', 'cpu'], d, 50000);
  });

  it('ENOSPC in predict\'s copy of the model in the run\'s temp dir: exit 1, the message names the spill dir, no output', async () => {
    const d = outDir('enospc-model-copy');
    const data = join(dir, 'regression.csv');
    expect((await gpuframe(['make-regression', '--n-samples', '5000', '--n-features', '4', '--seed', '2', '-o', data])).code).toBe(0);
    expect((await gpuframe(['linreg', data, '--target', 'y', '--model-out', join(dir, 'lr.json')])).code).toBe(0);
    await expectSpillDiskFull(['predict', data, '--model', join(dir, 'lr.json'), '--workers', '2', '-o', join(d, 'out.csv')], d, 100);
  });

  it('ENOSPC in groupby range spills (written by the parent): exit 1, no output', async () => {
    const d = outDir('enospc-agg-spill');
    const args = ['groupby', fact, '--by', 'i', '--agg', 'count(),sum(f)', '--memory-limit', '2MB'];
    const clean = await gpuframe([...args, ...RUN, '-o', join(dir, 'agg-spill-clean.csv')]);
    expect(clean.code, clean.stderr).toBe(0); // the same run without the fault succeeds
    await expectSpillDiskFull([...args, ...RUN, '-o', join(d, 'out.csv')], d, 50000);
  });
});
