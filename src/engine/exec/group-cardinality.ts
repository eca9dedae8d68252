// How many groups a group-by's partitions will hold, estimated from a sample at the start of its
// input before any task runs. With few groups per partition a GPU worker is far ahead of a CPU
// worker, most of all in large partitions (gpu-partitions.ts): its cost per partition is a few
// round trips. With many, its host work per group (decoding the groups' records, sorting and
// slicing the partial) is as much as a CPU worker's work per row, and it holds a core for it. A
// group per id, 1 GB, one H200 + 16 cores: in GPU-sized partitions 12.1-12.6 s; in small ones
// beside the CPU workers 5.8-7.4 s, a GPU task taking 1.7 CPU tasks' time and ending last; CPU
// workers alone 4.9-5.2 s. So such tasks go to the CPU workers. Only who runs a task follows
// from the estimate, never the output bytes.

import { closeSync } from 'node:fs';
import type { Column } from '../batch.js';
import { openInput, readBytes } from '../io/csv/input-file.js';
import { readCsvChunk } from '../io/csv/index.js';
import { hashKeys } from '../ops/keys.js';
import type { Fragment, Terminal } from './fragment.js';

/**
 * Groups per row in a GPU-sized partition past which the CPU workers take a group-by's tasks.
 * Between the keys measured (an airport 0.0001 and a pair of airports 0.02 per row in 256 MB: the
 * GPU far ahead; an id 1: the CPU workers ahead); where exactly the two cross is not measured.
 */
export const MANY_GROUPS_SHARE = 1 / 8;

/** Bytes read from the start of the first partition for the estimate (about 16k rows of a narrow table). */
export const SAMPLE_BYTES = 1 << 20;

/** What a sample of the input's rows says about its key. */
export interface KeySample {
  rows: number;
  bytes: number;
  /** Distinct keys in the sample, and how many of them occur once and twice. */
  distinct: number;
  once: number;
  twice: number;
}

/**
 * Distinct keys in the whole input, estimated from a sample (Chao's bias-corrected estimator,
 * distinct + f1(f1 - 1) / (2(f2 + 1))): keys seen once stand for many unseen ones. A lower bound in
 * expectation: where it errs, it leaves the tasks to the GPU workers, as before the estimate existed.
 */
export function estimateDistinct(s: KeySample): number {
  return s.distinct + (s.once * (s.once - 1)) / (2 * (s.twice + 1));
}

/** Expected distinct keys among `rows` rows drawn from `distinct` equally likely keys. */
export function expectedGroups(distinct: number, rows: number): number {
  return distinct === 0 ? 0 : distinct * -Math.expm1(-rows / distinct);
}

/** Frequencies of the key tuples of `length` rows (by 32-bit hash: a few collisions in a sample change nothing here). */
export function keySample(keys: readonly Column[], length: number, bytes: number): KeySample {
  const counts = new Map<number, number>();
  for (const h of hashKeys(keys, length)) counts.set(h, (counts.get(h) ?? 0) + 1);
  let once = 0, twice = 0;
  for (const n of counts.values()) {
    if (n === 1) once++;
    else if (n === 2) twice++;
  }
  return { rows: length, bytes, distinct: counts.size, once, twice };
}

/**
 * The key sample of a partial-aggregate task's first SAMPLE_BYTES: null when the task is not a
 * group-by straight over a CSV chunk (only projections between), or the sample does not read
 * cleanly (a cut inside a quoted field, a malformed record: the task itself reports those).
 */
export function sampleGroupKeys(fragment: Fragment, terminal: Terminal): KeySample | null {
  if (terminal.kind !== 'partial-aggregate') return null;
  const head = readKeyColumns(fragment, terminal.spec.keys, SAMPLE_BYTES);
  return head === null ? null : keySample(head.columns, head.rows, head.bytes);
}

/**
 * The key columns of the records in the first `bytes` of a fragment straight over a CSV chunk
 * (only projections between), and the bytes they took; null for any other fragment, or when
 * those bytes do not read cleanly.
 */
export function readKeyColumns(fragment: Fragment, keys: readonly string[], bytes: number): { columns: Column[]; rows: number; bytes: number } | null {
  const { source } = fragment;
  if (source.kind !== 'csv' || !fragment.ops.every((op) => op.kind === 'project')) return null;
  if (keys.length === 0 || !keys.every((k) => source.columns.includes(k))) return null;
  const { chunk } = source;
  try {
    let end = chunk.end;
    if (end - chunk.start > bytes) {
      // Up to the last line end in the sample's bytes (a record end unless inside quotes).
      const { fd } = openInput(chunk.path, chunk.displayName);
      let head: Buffer;
      try { head = readBytes(fd, chunk.start, bytes); } finally { closeSync(fd); }
      const lastNewline = head.lastIndexOf(0x0a);
      if (lastNewline < 0) return null;
      end = chunk.start + lastNewline + 1;
    }
    const batch = readCsvChunk({ ...chunk, end }, source.layout, { ...source.options, onBadLines: 'error' }, [...keys], () => {});
    return { columns: batch.columns, rows: batch.length, bytes: end - chunk.start };
  } catch {
    return null;
  }
}

/** The share of rows that are distinct groups in a partition of `partitionBytes`, as the sample predicts. */
export function groupShareOf(sample: KeySample, partitionBytes: number): number {
  if (sample.rows === 0) return 0;
  const rows = Math.max(1, (sample.rows * partitionBytes) / sample.bytes);
  return expectedGroups(estimateDistinct(sample), rows) / rows;
}

/**
 * Groups a GPU partition may be expected to hold before GPU partitions are made twice as large:
 * past it, the GPU worker's host work per group of each partition outweighs what more, smaller
 * partitions gain in overlap. 10 GB group-by, one H200 (alone / beside 16 CPU workers): by origin
 * (300 groups) 256 MB 1.21-1.30 / 1.31-1.47 s, 512 MB 1.53-2.02 / 1.53-1.73 s; by origin,dest
 * (90k groups) 256 MB 4.89-5.23 / 4.87-5.10 s, 512 MB 3.54-3.72 / 3.73-3.74 s. Between those
 * two the crossing is not measured.
 */
export const LARGER_GPU_PARTITIONS_AFTER_GROUPS = 1 << 14;

/** The GPU partition size for a key sample: `base`, or twice it (at most `largest`) when a partition of `base` would hold many groups. */
export function gpuPartitionBytes(sample: KeySample, base: number, largest: number): number {
  if (sample.rows === 0) return base;
  const rows = (sample.rows * base) / sample.bytes;
  return expectedGroups(estimateDistinct(sample), rows) > LARGER_GPU_PARTITIONS_AFTER_GROUPS ? Math.max(base, Math.min(2 * base, largest)) : base;
}

/** Where a group-by's GPU work goes, given the GPU partition size `base`, the input's bytes and the workers. */
export interface GpuGroupByShape { base: number; inputBytes: number; gpuWorkers: number; besideCpuWorkers: boolean; largest: number }

/**
 * What a key sample says about a group-by the GPU workers would take. Many groups per row in a
 * partition of `base`: beside CPU workers, theirs (`manyGroups`); GPU workers alone keep `base`
 * (their host work is per group, so per row, whatever the size, and larger partials only hold more
 * memory). Else, many groups per partition: partitions twice as large, while that still leaves four
 * for each GPU worker.
 */
export function gpuGroupByPlan(sample: KeySample, shape: GpuGroupByShape): { manyGroups: boolean; partitionBytes: number } {
  const { base, inputBytes, gpuWorkers, besideCpuWorkers, largest } = shape;
  if (groupShareOf(sample, base) > MANY_GROUPS_SHARE) return { manyGroups: besideCpuWorkers, partitionBytes: base };
  const larger = gpuPartitionBytes(sample, base, largest);
  return { manyGroups: false, partitionBytes: Math.ceil(inputBytes / larger) >= 4 * Math.max(1, gpuWorkers) ? larger : base };
}
