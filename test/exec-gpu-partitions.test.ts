// Larger partitions for work GPU workers take beside CPU workers (gpu-partitions.ts): consecutive
// CSV chunks of a file merged k at a time, only when the runner's GPU workers would take the
// stream's tasks; and through the CLI on lavapipe, a default-mode group-by (GPU and CPU workers,
// automatic block size) runs fewer, larger partitions and writes the CPU run's bytes.

import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RunContext } from '../src/engine/exec/context.js';
import type { Fragment, Terminal } from '../src/engine/exec/fragment.js';
import { inGpuPartitions } from '../src/engine/exec/gpu-partitions.js';
import type { Stream } from '../src/engine/exec/stream.js';
import { skipGpuTests } from '../src/engine/gpu/test-gpu.js';
import type { CsvChunk } from '../src/engine/io/csv/index.js';
import { gpuframe } from './helpers/cli.js';
import { factCsv, tempDir } from './helpers/data.js';

const MB = 1 << 20;
const terminal: Terminal = { kind: 'partial-aggregate', spec: { keys: ['k'], aggs: [], dropna: false }, inputSchema: [] };

/** `n` consecutive chunks of `path`, each `size` bytes, as a scan's fragments. */
function chunks(path: string, n: number, size: number, from = 0): Fragment[] {
  return Array.from({ length: n }, (_, i) => {
    const chunk: CsvChunk = { path, displayName: path, start: 10 + i * size, end: 10 + (i + 1) * size, firstLine: i === 0 ? 2 : null, lineOrigin: { offset: 10, line: 2 } };
    return { index: from + i, source: { kind: 'csv', chunk, layout: {}, options: {}, columns: ['k'] }, ops: [{ kind: 'project', columns: ['k'] }], bytes: size } as unknown as Fragment;
  });
}

function context(prefersGpu: boolean | undefined, gpuBlocksize: number | undefined, gpuWorkersOnly = false): RunContext {
  const runner = { size: 3, gpuWorkersOnly, prefersGpu: prefersGpu === undefined ? undefined : () => prefersGpu };
  return { runner, blocksize: 64 * MB, gpuBlocksize } as unknown as RunContext;
}

const chunkOf = (f: Fragment) => (f.source.kind === 'csv' ? f.source.chunk : null)!;

describe('inGpuPartitions', () => {
  it('merges four 64 MB chunks into each 256 MB partition, in order, never across files', () => {
    const stream: Stream = { schema: [], fragments: [...chunks('a.csv', 10, 64 * MB), ...chunks('b.csv', 3, 64 * MB, 10)] };
    const got = inGpuPartitions(stream, terminal, context(true, 256 * MB)).fragments;
    expect(got.map((f) => f.index)).toEqual([0, 1, 2, 3]);
    expect(got.map((f) => f.bytes / MB)).toEqual([256, 256, 128, 192]);
    expect(got.map((f) => chunkOf(f).path)).toEqual(['a.csv', 'a.csv', 'a.csv', 'b.csv']);
    // Each partition spans its chunks exactly: together they still cover each file once, in order.
    expect(got.map((f) => [chunkOf(f).start, chunkOf(f).end])).toEqual([[10, 10 + 256 * MB], [10 + 256 * MB, 10 + 512 * MB], [10 + 512 * MB, 10 + 640 * MB], [10, 10 + 192 * MB]]);
    // Line numbers for messages count from the first chunk's.
    expect(chunkOf(got[0]).firstLine).toBe(2);
    expect(chunkOf(got[1]).firstLine).toBeNull();
    expect(got[0].ops).toEqual(stream.fragments[0].ops);
  });

  it('merges to the size asked for (many groups per partition), on GPU workers alone too', () => {
    const stream: Stream = { schema: [], fragments: chunks('a.csv', 16, 64 * MB) };
    expect(inGpuPartitions(stream, terminal, context(true, 256 * MB), 512 * MB).fragments.map((f) => f.bytes / MB)).toEqual([512, 512]);
    // GPU workers alone (no CPU workers, so prefersGpu is false) take every task.
    expect(inGpuPartitions(stream, terminal, context(false, 64 * MB, true), 128 * MB).fragments.length).toBe(8);
    expect(inGpuPartitions(stream, terminal, context(false, 64 * MB, true))).toBe(stream);
  });

  it('leaves the stream alone: tasks the GPUs would not take, no GPU size, an epilogue, or a source other than CSV', () => {
    const stream: Stream = { schema: [], fragments: chunks('a.csv', 8, 64 * MB) };
    expect(inGpuPartitions(stream, terminal, context(false, 256 * MB))).toBe(stream);
    expect(inGpuPartitions(stream, terminal, context(undefined, 256 * MB))).toBe(stream);
    expect(inGpuPartitions(stream, terminal, context(true, undefined))).toBe(stream);
    expect(inGpuPartitions(stream, terminal, context(true, 64 * MB))).toBe(stream);
    const withEpilogue: Stream = { ...stream, epilogues: [() => []] };
    expect(inGpuPartitions(withEpilogue, terminal, context(true, 256 * MB))).toBe(withEpilogue);
    const mixed: Stream = { schema: [], fragments: [...chunks('a.csv', 2, 64 * MB), { index: 2, source: { kind: 'none' }, ops: [], bytes: 0 }] };
    expect(inGpuPartitions(mixed, terminal, context(true, 256 * MB))).toBe(mixed);
  });
});

describe.skipIf(skipGpuTests)('default mode through the CLI (GPU and CPU workers, automatic block size)', () => {
  const dir = tempDir('gpu-partitions');
  const facts = join(dir, 'facts.csv');
  const ids = join(dir, 'ids.csv');
  beforeAll(() => {
    factCsv(facts, { rows: 160_000, groups: 300, seed: 9 });
    factCsv(ids, { rows: 160_000, groups: 1e9, seed: 10 });
  });
  const taskLabels = (name: string) => (JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')).traceEvents as { name: string }[])
    .map((e) => e.name).filter((l) => l.startsWith('groupby #'));
  // Partitions: distinct task labels ("groupby #i (csv)"), whichever worker and copy ran them.
  const tasks = (name: string) => new Set(taskLabels(name).map((l) => /^groupby #(\d+)/.exec(l)![1])).size;

  /** Groups `file` by ki with --device gpu and cpu (2 CPU workers), traced as `${name}-gpu` and `${name}-cpu`; both write the same bytes. */
  async function gpuAndCpu(name: string, file: string): Promise<void> {
    for (const device of ['gpu', 'cpu']) {
      const out = `${name}-${device}`;
      const res = await gpuframe(['groupby', file, '--by', 'ki', '--agg', 'count(),sum(i),max(f)', '--device', device, '--workers', '2', '-o', join(dir, `${out}.csv`), '--trace', join(dir, `${out}.json`)]);
      expect(res.code, res.stderr).toBe(0);
    }
    expect(readFileSync(join(dir, `${name}-gpu.csv`)).equals(readFileSync(join(dir, `${name}-cpu.csv`)))).toBe(true);
  }

  it('a group-by the GPU takes runs in fewer, larger partitions, with the CPU run\'s bytes', async () => {
    await gpuAndCpu('facts', facts);
    const bytes = statSync(facts).size;
    // CPU: 64 MB capped to four per worker (2 workers): 8. Default mode: 1 MB chunks (four per
    // worker of 3) merged into partitions of about a quarter of the file (four per GPU worker).
    expect(bytes).toBeGreaterThan(8 * MB);
    expect(tasks('facts-cpu')).toBe(8);
    expect(tasks('facts-gpu')).toBeLessThanOrEqual(5);
    expect(tasks('facts-gpu')).toBeGreaterThanOrEqual(4);
  }, 60_000);

  it('a group-by with a group per row is left to the CPU workers, in small chunks (group-cardinality.ts), with the CPU run\'s bytes', async () => {
    await gpuAndCpu('ids', ids);
    // Four 1 MB chunks per worker of 3 (two CPU, one GPU), none merged, none run by the GPU worker.
    expect(statSync(ids).size).toBeGreaterThan(12 * MB);
    expect(tasks('ids-gpu')).toBeGreaterThanOrEqual(12);
    expect(taskLabels('ids-gpu').filter((l) => l.endsWith('[gpu]'))).toEqual([]);
  }, 60_000);
});
