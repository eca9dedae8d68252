// The combine step of a groupby with many groups, spread over the workers.
//
// Why: merging every partial in the parent is one thread's work. With a group per id it bound the
// whole command (200 MB, 5.9M groups, 2 workers: 4.4 s of merging in the parent and 3.6 s of
// encoding the one result batch in one worker, the other idle).
//
// How: a partial is sorted by key and cut into slices of consecutive keys, one after another in a
// spill file (written by the worker that made it when it is large, otherwise by the parent). Once
// every partial is in, the keys that start the slices, a sample of all keys, give splitters of key
// ranges of about equal size. Each range is one fragment: a worker merges its groups from the
// slices in partition order and finalises them. Every group sees the same sequence of merges as
// in one merge in the parent, and the ranges come out in key order, so the bytes are the same.

import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { columnLength, concatBatches, emptyBatch, takeColumn, type Batch, type Column, type Schema } from '../batch.js';
import {
  chooseSplitters, finalizeMergedBySort, rangeOfKeys, sliceOfSorted, sortedPartial, takeGroups, type PartialAggregate,
} from '../ops/aggregate/index.js';
import type { Fragment, FragmentResult, SourceSpec, Terminal } from './fragment.js';
import { readSpillRange, writeSpillFile } from './spill-file.js';

/**
 * Groups a slice of a partial of `groups` groups holds: a partial's keys may span the whole key
 * space, so it is cut into about 64 slices (a range then reads at most two slices of it that hold
 * keys of other ranges too), but no slices smaller than 1024 groups or larger than 65536.
 */
function sliceGroupsFor(groups: number): number {
  return Math.min(1 << 16, Math.max(1024, Math.ceil(groups / 64)));
}

/** A worker cuts its partial into slices itself from this many groups on (smaller ones go to the parent whole). */
const WORKER_SLICE_GROUPS = 1 << 18;

/**
 * A partial cut into slices of consecutive keys (key order), one spill file holding them one after
 * another (a file per slice cost a GPU worker on the H200 1 s of opening files per 1 GB of ids).
 */
export interface PartialSlices {
  file: string;
  /** The first and the last key of each slice: a row per slice. */
  firsts: Column[];
  lasts: Column[];
  /** Groups in each slice. */
  groups: number[];
  /** Where each slice starts in the file, and its bytes. */
  offsets: number[];
  bytes: number[];
}

/** One key range's slices, in partition order; `whole`: every group of the slice lies in the range. */
export type AggregateRangeSource = Extract<SourceSpec, { kind: 'aggregate-range' }>;

/** Sorts p by key and writes it as slices under `dir`. */
export function writePartialSlices(p: PartialAggregate, dir: string, sliceGroups = sliceGroupsFor(p.groups)): PartialSlices {
  const sorted = sortedPartial(p);
  const out: PartialSlices = { file: join(dir, `agg-slices-${randomBytes(6).toString('hex')}.v8`), firsts: [], lasts: [], groups: [], offsets: [], bytes: [] };
  const parts: Uint8Array[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  let offset = 0;
  for (let start = 0; start < sorted.groups; start += sliceGroups) {
    const end = Math.min(sorted.groups, start + sliceGroups);
    const bytes = serialize(sliceOfSorted(sorted, start, end));
    parts.push(bytes);
    out.groups.push(end - start);
    out.offsets.push(offset);
    out.bytes.push(bytes.byteLength);
    offset += bytes.byteLength;
    starts.push(start);
    ends.push(end - 1);
  }
  writeSpillFile(out.file, parts);
  out.firsts = sorted.keys.map((c) => takeColumn(c, Int32Array.from(starts)));
  out.lasts = sorted.keys.map((c) => takeColumn(c, Int32Array.from(ends)));
  return out;
}

/**
 * In a worker: a large partial goes back as slices (terminal `sliceDir` set), so that the parent
 * neither receives nor sorts it. A partial below WORKER_SLICE_GROUPS goes back as it is.
 */
export function sliceLargePartial(result: FragmentResult, terminal: Terminal): FragmentResult {
  if (terminal.kind !== 'partial-aggregate' || !terminal.sliceDir || !result.partial || result.partial.groups < WORKER_SLICE_GROUPS) return result;
  const { partial, ...rest } = result;
  return { ...rest, slices: writePartialSlices(partial, terminal.sliceDir) };
}

/** The parent's side: sliced partials in partition order, turned into one fragment per key range. */
export class SliceCombine {
  private readonly sliced: PartialSlices[] = [];
  private bytes = 0;

  constructor(private readonly schema: Schema, private readonly dir: string) {}

  /** Adds a partial the parent holds (cut into slices here). */
  addPartial(p: PartialAggregate): void {
    if (p.groups > 0) this.add(writePartialSlices(p, this.dir));
  }

  /** Adds a partial a worker already cut into slices. */
  add(s: PartialSlices): void {
    this.sliced.push(s);
    this.bytes += s.bytes.reduce((a, b) => a + b, 0);
  }

  /** Spill bytes held so far (about the bytes of all partials). */
  heldBytes(): number {
    return this.bytes;
  }

  /** Fragments of up to `ranges` key ranges, in key order, each merging and finalising its groups where it runs. */
  fragments(ranges: number): Fragment[] {
    const keySchema: Schema = this.schema.slice(0, this.sliced[0]?.firsts.length ?? 0);
    const allKeys = (pick: (s: PartialSlices) => Column[]) =>
      concatBatches(keySchema, this.sliced.map((s) => ({ schema: keySchema, length: s.groups.length, columns: pick(s) }))).columns;
    const slices = this.sliced.reduce((n, s) => n + s.groups.length, 0);
    const firsts = allKeys((s) => s.firsts);
    const splitters = chooseSplitters(firsts, slices, Math.max(1, Math.min(ranges, slices)));
    const firstRange = rangeOfKeys(firsts, slices, splitters);
    const lastRange = rangeOfKeys(allKeys((s) => s.lasts), slices, splitters);
    const count = splitters.length === 0 ? 1 : columnLength(splitters[0]) + 1;
    const splitter = (i: number) => (i < 0 || i >= count - 1 ? null : splitters.map((c) => takeColumn(c, Int32Array.of(i))));
    const sources: AggregateRangeSource[] = Array.from({ length: count }, (_, range) => ({
      kind: 'aggregate-range', schema: this.schema, slices: [], lower: splitter(range - 1), upper: splitter(range),
    }));
    const bytes = new Array<number>(count).fill(0);
    let at = 0;
    for (const s of this.sliced) {
      for (let i = 0; i < s.groups.length; i++, at++) {
        const from = firstRange[at], to = lastRange[at];
        for (let r = from; r <= to; r++) {
          sources[r].slices.push({ file: s.file, offset: s.offsets[i], length: s.bytes[i], whole: from === to });
          bytes[r] += s.bytes[i] / (to - from + 1);
        }
      }
    }
    return sources.map((source, index) => ({ index, source, ops: [], bytes: Math.round(bytes[index]) }));
  }
}

/** In the worker that runs a range: its groups from every slice, merged in order and finalised. */
export function readAggregateRange(source: AggregateRangeSource): Batch {
  const partials: PartialAggregate[] = [];
  for (const slice of source.slices) {
    let p = deserialize(readSpillRange(slice)) as PartialAggregate;
    if (!slice.whole) {
      // The range's bounds as splitters: a key of the range is at or past `lower` and before `upper`.
      const keySchema = source.schema.slice(0, p.keys.length);
      const bounds = [source.lower, source.upper].filter((b): b is Column[] => b !== null).map((columns) => ({ schema: keySchema, length: 1, columns }));
      const range = rangeOfKeys(p.keys, p.groups, concatBatches(keySchema, bounds).columns);
      const inside = source.lower === null ? 0 : 1;
      const mine: number[] = [];
      for (let g = 0; g < p.groups; g++) if (range[g] === inside) mine.push(g);
      p = takeGroups(p, Int32Array.from(mine));
    }
    if (p.groups > 0) partials.push(p);
  }
  return partials.length === 0 ? emptyBatch(source.schema) : finalizeMergedBySort(partials);
}
