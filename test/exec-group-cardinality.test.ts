// The group-count estimate that decides whether GPU workers take a group-by's tasks
// (group-cardinality.ts): Chao's estimator against keys drawn from known numbers of distinct
// values, the sample read from a real CSV chunk, and the decision for a key with a group per row.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Column } from '../src/engine/batch.js';
import type { Fragment, Terminal } from '../src/engine/exec/fragment.js';
import {
  estimateDistinct, expectedGroups, gpuGroupByPlan, gpuPartitionBytes, groupShareOf, keySample, LARGER_GPU_PARTITIONS_AFTER_GROUPS, MANY_GROUPS_SHARE, sampleGroupKeys, SAMPLE_BYTES,
} from '../src/engine/exec/group-cardinality.js';
import { gpuCsvPathApplies } from '../src/engine/exec/gpu-csv-aggregate.js';
import { gpuPartitioning } from '../src/engine/exec/aggregate-stage.js';
import type { RunContext } from '../src/engine/exec/context.js';
import { DEFAULT_CSV_OPTIONS, inferCsvLayout, type CsvChunk } from '../src/engine/io/csv/index.js';
import { factCsv, rng, tempDir } from './helpers/data.js';

const MB = 1 << 20;

/** `n` int64 keys drawn uniformly from `distinct` values. */
function drawn(n: number, distinct: number, seed: number): Column {
  const r = rng(seed);
  return { type: 'int64', values: BigInt64Array.from({ length: n }, () => BigInt(Math.floor(r() * distinct))), valid: null };
}

describe('estimateDistinct (Chao) and expectedGroups', () => {
  it('estimates the distinct keys behind 16k draws within 15% from 300 to 90k keys, and millions past 10^7', () => {
    for (const distinct of [300, 5000, 90_000]) {
      const got = estimateDistinct(keySample([drawn(16_000, distinct, distinct)], 16_000, MB));
      expect(Math.abs(got / distinct - 1), `${distinct}: ${got}`).toBeLessThan(0.15);
    }
    expect(estimateDistinct(keySample([drawn(16_000, 1e7, 7)], 16_000, MB))).toBeGreaterThan(2e6);
  });

  it('expects as many groups as rows when keys are many, and all keys when rows are many', () => {
    expect(expectedGroups(1e12, 1e6) / 1e6).toBeCloseTo(1, 5);
    expect(expectedGroups(300, 1e6)).toBeCloseTo(300, 6);
    expect(expectedGroups(1000, 1000)).toBeCloseTo(1000 * (1 - Math.exp(-1)), 6);
    expect(expectedGroups(0, 1000)).toBe(0);
  });

  it('puts the bench\'s keys on the right side of the threshold for a 256 MB partition', () => {
    // 16k rows per MB of sample, as the bench's flights data (about 60 bytes a row).
    const share = (distinct: number) => groupShareOf(keySample([drawn(16_000, distinct, 3)], 16_000, MB), 256 * MB);
    expect(share(300)).toBeLessThan(0.001); // an airport
    expect(share(90_000)).toBeLessThan(MANY_GROUPS_SHARE / 2); // a pair of airports
    expect(share(1e9)).toBeGreaterThan(0.9); // an id
    expect(share(3e6)).toBeGreaterThan(MANY_GROUPS_SHARE); // a few million keys: ~0.7 per row
  });

  it('plans a group-by\'s GPU work: the CPU workers\' for many groups per row, larger GPU partitions for many per partition while each GPU worker keeps four', () => {
    const sample = (distinct: number) => keySample([drawn(16_000, distinct, 5)], 16_000, MB);
    const shape = { base: 256 * MB, inputBytes: 10_000 * MB, gpuWorkers: 1, besideCpuWorkers: true, largest: 512 * MB };
    expect(gpuGroupByPlan(sample(300), shape)).toEqual({ manyGroups: false, partitionBytes: 256 * MB });
    expect(gpuGroupByPlan(sample(90_000), shape)).toEqual({ manyGroups: false, partitionBytes: 512 * MB });
    expect(gpuGroupByPlan(sample(1e9), shape)).toEqual({ manyGroups: true, partitionBytes: 256 * MB });
    expect(gpuGroupByPlan(sample(1e9), { ...shape, besideCpuWorkers: false })).toEqual({ manyGroups: false, partitionBytes: 256 * MB });
    // 2 GB over 512 MB partitions: four for one GPU worker, two each for two.
    expect(gpuGroupByPlan(sample(90_000), { ...shape, inputBytes: 2048 * MB }).partitionBytes).toBe(512 * MB);
    expect(gpuGroupByPlan(sample(90_000), { ...shape, inputBytes: 2048 * MB, gpuWorkers: 2 }).partitionBytes).toBe(256 * MB);
    expect(gpuGroupByPlan(sample(90_000), { ...shape, inputBytes: 2047 * MB }).partitionBytes).toBe(512 * MB); // rounded up: still four
    expect(gpuGroupByPlan(sample(90_000), { ...shape, inputBytes: 1536 * MB }).partitionBytes).toBe(256 * MB);
  });

  it('doubles GPU partitions (up to the largest) for a pair of airports, not for an airport', () => {
    const sample = (distinct: number) => keySample([drawn(16_000, distinct, 4)], 16_000, MB);
    expect(gpuPartitionBytes(sample(300), 256 * MB, 512 * MB)).toBe(256 * MB);
    expect(gpuPartitionBytes(sample(90_000), 256 * MB, 512 * MB)).toBe(512 * MB);
    expect(gpuPartitionBytes(sample(90_000), 256 * MB, 384 * MB)).toBe(384 * MB);
    expect(gpuPartitionBytes(sample(90_000), 512 * MB, 512 * MB)).toBe(512 * MB);
    // Around the threshold: 4k keys stay, 64k double; an empty sample says nothing.
    expect(gpuPartitionBytes(sample(LARGER_GPU_PARTITIONS_AFTER_GROUPS / 4), 256 * MB, 512 * MB)).toBe(256 * MB);
    expect(gpuPartitionBytes(sample(LARGER_GPU_PARTITIONS_AFTER_GROUPS * 4), 256 * MB, 512 * MB)).toBe(512 * MB);
    expect(gpuPartitionBytes(keySample([drawn(0, 10, 1)], 0, 0), 256 * MB, 512 * MB)).toBe(256 * MB);
  });
});

describe('sampleGroupKeys over a real CSV file, and the share of groups it predicts', () => {
  const dir = tempDir('group-cardinality');
  const few = join(dir, 'few.csv'), many = join(dir, 'many.csv');
  beforeAll(() => {
    factCsv(few, { rows: 120_000, groups: 300, seed: 1 });
    factCsv(many, { rows: 120_000, groups: 1e9, seed: 2 });
  });

  /** The file in `parts` chunks cut at line ends, as a scan's fragments grouping by `key`. */
  async function fragmentsOf(path: string, key: string, parts: number): Promise<Fragment[]> {
    const text = readFileSync(path);
    const layout = await inferCsvLayout(path, path, DEFAULT_CSV_OPTIONS);
    const cuts = [text.indexOf(0x0a) + 1];
    for (let i = 1; i < parts; i++) cuts.push(text.indexOf(0x0a, Math.floor((i * text.length) / parts)) + 1);
    cuts.push(text.length);
    return cuts.slice(0, -1).map((start, i) => {
      const chunk: CsvChunk = { path, displayName: path, start, end: cuts[i + 1], firstLine: i === 0 ? 2 : null, lineOrigin: { offset: cuts[0], line: 2 } };
      return { index: i, source: { kind: 'csv', chunk, layout, options: DEFAULT_CSV_OPTIONS, columns: [key, 'i'] }, ops: [{ kind: 'project', columns: [key, 'i'] }], bytes: chunk.end - start };
    });
  }
  const terminal = (key: string): Terminal => ({ kind: 'partial-aggregate', spec: { keys: [key], aggs: [], dropna: false }, inputSchema: [] });

  it('samples the first MB of the first chunk, up to a line end', async () => {
    const [first] = await fragmentsOf(many, 'ki', 4);
    const s = sampleGroupKeys(first, terminal('ki'))!;
    expect(s.bytes).toBeLessThanOrEqual(SAMPLE_BYTES);
    expect(s.bytes).toBeGreaterThan(SAMPLE_BYTES - 200);
    const lines = readFileSync(many).subarray(first.source.kind === 'csv' ? first.source.chunk.start : 0).subarray(0, s.bytes).toString().split('\n');
    expect(lines.at(-1)).toBe(''); // ends at a line end
    expect(s.rows).toBe(lines.length - 1);
    // A key per row, but for the 5% null keys (one key, seen many times).
    expect(s.distinct).toBeGreaterThan(0.9 * s.rows);
    expect(s.once).toBe(s.distinct - 1);
  });

  it('finds many groups per partition for a key with a group per row, not for 300 groups; such tasks are not the GPU\'s', async () => {
    const half = readFileSync(many).length / 2;
    const manyGroups = (f: Fragment, key: string) => groupShareOf(sampleGroupKeys(f, terminal(key))!, half) > MANY_GROUPS_SHARE;
    const [manyFirst] = await fragmentsOf(many, 'ki', 8);
    expect(manyGroups(manyFirst, 'ki')).toBe(true);
    // The string key of the many-groups file too (its null keys aside, one per row).
    const [manyStrings] = await fragmentsOf(many, 'ks', 8);
    expect(manyGroups(manyStrings, 'ks')).toBe(true);
    const [fewFirst] = await fragmentsOf(few, 'ks', 8);
    expect(manyGroups(fewFirst, 'ks')).toBe(false);
    // GPU workers take a plain group-by over a CSV chunk, unless it has many groups.
    const input = [{ name: 'ki', type: 'int64' as const }, { name: 'i', type: 'int64' as const }];
    const spec = { keys: ['ki'], aggs: [{ func: 'sum' as const, column: 'i', name: 'sum_i' }], dropna: false };
    const plain: Terminal = { kind: 'partial-aggregate', spec, inputSchema: input };
    expect(gpuCsvPathApplies({ fragment: manyFirst, terminal: plain })).toBe(true);
    expect(gpuCsvPathApplies({ fragment: manyFirst, terminal: { ...plain, manyGroups: true } })).toBe(false);
  });

  it('over the file: a group per row goes to the CPU workers beside them, keeps its size on GPU workers alone', async () => {
    const bytes = readFileSync(many).length;
    const input = [{ name: 'ki', type: 'int64' as const }, { name: 'i', type: 'int64' as const }];
    const groupBy: Terminal = { kind: 'partial-aggregate', spec: { keys: ['ki'], aggs: [], dropna: false }, inputSchema: input };
    const eighth = Math.ceil(bytes / 8);
    const ctx = (gpuWorkersOnly: boolean) => ({
      runner: { size: 1, gpuWorkers: 1, gpuWorkersOnly, prefersGpu: () => !gpuWorkersOnly },
      blocksize: eighth, gpuBlocksize: eighth,
    }) as unknown as RunContext;
    const stream = { schema: input, fragments: await fragmentsOf(many, 'ki', 8) };
    expect(gpuPartitioning(stream, groupBy, ctx(false))).toEqual({ manyGroups: true, partitionBytes: eighth });
    expect(gpuPartitioning(stream, groupBy, ctx(true))).toEqual({ manyGroups: false, partitionBytes: eighth });
    // No GPU size (--blocksize given): nothing to decide.
    expect(gpuPartitioning(stream, groupBy, { ...ctx(true), gpuBlocksize: undefined })).toEqual({ manyGroups: false });
  });

  it('gives no sample (so partitions merge as before) when it cannot read cleanly or the task is not a plain group-by', async () => {
    const [first] = await fragmentsOf(many, 'ki', 4);
    expect(sampleGroupKeys(first, { kind: 'collect' } as Terminal)).toBeNull();
    expect(sampleGroupKeys({ ...first, ops: [{ kind: 'filter' } as never] }, terminal('ki'))).toBeNull();
    expect(sampleGroupKeys(first, terminal('no_such_column'))).toBeNull();
    // A quoted field with a line end across the sample's end: the cut lands inside quotes.
    const quoted = join(dir, 'quoted.csv');
    const row = 'x,1\n';
    const head = 'k,v\n' + row.repeat(Math.floor((SAMPLE_BYTES - 100) / row.length));
    writeFileSync(quoted, head + '"a\n' + 'b'.repeat(200) + '\nc",2\n' + row.repeat(100));
    const layout = await inferCsvLayout(quoted, quoted, DEFAULT_CSV_OPTIONS);
    const chunk: CsvChunk = { path: quoted, displayName: quoted, start: 4, end: readFileSync(quoted).length, firstLine: 2, lineOrigin: { offset: 4, line: 2 } };
    const f: Fragment = { index: 0, source: { kind: 'csv', chunk, layout, options: DEFAULT_CSV_OPTIONS, columns: ['k', 'v'] }, ops: [], bytes: chunk.end - 4 };
    expect(sampleGroupKeys(f, terminal('k'))).toBeNull();
  });
});
