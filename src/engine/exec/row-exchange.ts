// A group-by whose partitions hold about as many groups as rows, by an exchange of rows.
//
// Why: a partial aggregate only pays when it holds fewer groups than its partition has rows. By
// destination and distance (1.47M groups in 28.8M rows, 64 partitions of 450k rows) each partial
// held ~390k groups, and a group's states (sums in three words, counts, extremes: ~160 bytes for
// six aggregates) weigh five times its row: the partials were cut into slices, written, read back
// and merged, as much work again as aggregating the rows (H200 machine, 16 cores: 5.7 s where
// DuckDB took 1.2 s).
//
// How: before any task runs, keys read from the start of up to SPLITTER_SAMPLES partitions spread
// over the input (CSV or Parquet) give splitters of key ranges. Each partition's rows (projected
// to the keys and the aggregated columns) are cut by key range into one spill file, a piece per
// range. Each range is then one fragment: a worker reads its pieces in partition order,
// aggregates them (by sorting, for many groups: PartialAggregator) and finalises them. Every
// group's rows are added in input order, and the ranges come out in key order, so no merge
// follows and the bytes are those of a single pass; which ranges there are changes nothing but
// the work per task.

import { join } from 'node:path';
import { columnLength, concatBatches, emptyBatch, takeBatch, type Batch, type Column, type Schema } from '../batch.js';
import { readParquetChunk } from '../io/parquet.js';
import { aggregateOutputSchema, chooseSplitters, PartialAggregator, rangeOfKeys, type AggregateSpec } from '../ops/aggregate/index.js';
import { rowsByBucket } from '../ops/sort.js';
import { decodeBatchSpill, encodeBatchSpill } from './batch-spill.js';
import type { Fragment, SpillRange, Terminal } from './fragment.js';
import { groupShareOf, keySample, readKeyColumns, SAMPLE_BYTES } from './group-cardinality.js';
import { readSpillRange, writeSpillFile } from './spill-file.js';

/** Share of a partition's rows that must be groups (by the key sample) for the rows to be exchanged. */
export const EXCHANGE_GROUP_SHARE = 1 / 2;
/** Partitions the splitters' keys are read from (the first SPLITTER_SAMPLE_BYTES of each). */
const SPLITTER_SAMPLES = 8;
const SPLITTER_SAMPLE_BYTES = 1 << 17;
/** Sampled keys a range's splitter is chosen from, at most. */
const KEYS_PER_RANGE = 64;
/** Rows a Parquet key sample reads at most (about what SAMPLE_BYTES of CSV holds). */
const PARQUET_SAMPLE_ROWS = 1 << 15;
/** Most key ranges. */
const MAX_RANGES = 4096;

export type RangePartitionTerminal = Extract<Terminal, { kind: 'range-partition' }>;
export type RowsRangeSource = Extract<Fragment['source'], { kind: 'rows-range' }>;

/**
 * The splitters of an exchange of rows for a group-by over `fragments`, or null when the rows
 * stay put: the input is neither CSV nor Parquet (no key sample), the sample predicts fewer groups
 * than EXCHANGE_GROUP_SHARE of a partition's rows, or the keys read do not allow `ranges` ranges.
 */
export async function exchangeSplitters(fragments: readonly Fragment[], input: Schema, keys: readonly string[], ranges: number): Promise<Column[] | null> {
  const first = fragments[0];
  if (first === undefined || keys.length === 0) return null;
  // Splitters must have the types the partitions' rows have (a sample read on its own could differ).
  const schema: Schema = keys.map((name) => ({ name, type: input.find((f) => f.name === name)?.type ?? 'string' }));
  const head = await readKeyRows(first, keys, SAMPLE_BYTES);
  if (head === null || head.columns.some((c, i) => c.type !== schema[i].type)) return null;
  if (groupShareOf(keySample(head.columns, head.rows, head.bytes), first.bytes) <= EXCHANGE_GROUP_SHARE) return null;
  const picks = Math.min(SPLITTER_SAMPLES, fragments.length);
  const samples: Batch[] = [];
  for (let s = 0; s < picks; s++) {
    const read = await readKeyRows(fragments[Math.floor((s * fragments.length) / picks)], keys, SPLITTER_SAMPLE_BYTES);
    if (read === null || read.columns.some((c, i) => c.type !== schema[i].type)) return null;
    samples.push({ schema, length: read.rows, columns: read.columns });
  }
  const sample = concatBatches(schema, samples);
  if (sample.length < 2 * ranges) return null;
  // Every k-th key, at most KEYS_PER_RANGE a range: enough for ranges of even size (sorting the
  // 30-60k keys read took a parent, its code still cold, 60-140 ms).
  const step = Math.max(1, Math.floor(sample.length / (KEYS_PER_RANGE * ranges)));
  const kept = step === 1 ? sample : takeBatch(sample, Int32Array.from({ length: Math.floor(sample.length / step) }, (_, i) => i * step));
  return chooseSplitters(kept.columns, kept.length, ranges);
}

/**
 * The key columns of about the first `bytes` of a fragment straight over a CSV or Parquet chunk
 * (only projections between; Parquet bytes as the footer counts them, uncompressed), and the
 * bytes they stand for; null for other fragments, or when they do not read cleanly.
 */
async function readKeyRows(fragment: Fragment, keys: readonly string[], bytes: number): Promise<{ columns: Column[]; rows: number; bytes: number } | null> {
  const { source } = fragment;
  if (source.kind !== 'parquet') return readKeyColumns(fragment, keys, bytes);
  if (!fragment.ops.every((op) => op.kind === 'project') || !keys.every((k) => source.columns.includes(k))) return null;
  const { chunk } = source;
  const limit = Math.max(1, Math.min(chunk.rows, PARQUET_SAMPLE_ROWS, Math.ceil((bytes * chunk.rows) / Math.max(1, chunk.bytes))));
  try {
    const batch = await readParquetChunk(chunk, keys, limit);
    return { columns: batch.columns, rows: batch.length, bytes: (batch.length * chunk.bytes) / Math.max(1, chunk.rows) };
  } catch {
    return null;
  }
}

/** Key ranges that splitters cut: one more than there are splitters. */
export function rangeCount(splitters: readonly Column[]): number {
  return (splitters.length === 0 ? 0 : columnLength(splitters[0])) + 1;
}

/** Ranges for an exchange: a few per worker, and about one partition's input bytes each. */
export function exchangeRanges(inputBytes: number, blocksize: number, workers: number): number {
  return Math.min(MAX_RANGES, Math.max(4 * workers, Math.ceil(inputBytes / blocksize)));
}

/** In a worker: the fragment's rows cut by key range into one spill file; each range's piece (null: no rows). */
export function rangePartitionToFile(batches: Batch[], terminal: RangePartitionTerminal, fragmentIndex: number): (SpillRange | null)[] {
  const ranges = rangeCount(terminal.splitters);
  const schema = batches[0]?.schema ?? [];
  const batch = concatBatches(schema, batches);
  const keyAt = terminal.keys.map((k) => schema.findIndex((f) => f.name === k));
  const rangeOfRow = rangeOfKeys(keyAt.map((i) => batch.columns[i]), batch.length, terminal.splitters);
  const { order, starts } = rowsByBucket(rangeOfRow, ranges); // each range's rows in input order
  const file = join(terminal.dir, `${terminal.prefix}-f${fragmentIndex}.bin`);
  const parts: Uint8Array[] = [];
  const pieces: (SpillRange | null)[] = [];
  let offset = 0;
  for (let r = 0; r < ranges; r++) {
    if (starts[r + 1] === starts[r]) { pieces.push(null); continue; }
    const encoded = encodeBatchSpill({ batch: takeBatch(batch, order.subarray(starts[r], starts[r + 1])), pos: new Int32Array(0) });
    const length = encoded.reduce((n, part) => n + part.byteLength, 0);
    parts.push(...encoded);
    pieces.push({ file, offset, length });
    offset += length;
  }
  writeSpillFile(file, parts);
  return pieces;
}

/** The fragments of the exchange's second step: range r reads piece r of every partition, in partition order. */
export function rowsRangeFragments(schema: Schema, spec: AggregateSpec, piecesByFragment: readonly (SpillRange | null)[][], ranges: number): Fragment[] {
  return Array.from({ length: ranges }, (_, index) => {
    const pieces = piecesByFragment.flatMap((p) => (p[index] ? [p[index]] : []));
    const source: RowsRangeSource = { kind: 'rows-range', schema, spec, pieces };
    return { index, source, ops: [], bytes: pieces.reduce((n, p) => n + p.length, 0) };
  });
}

/** In a worker: one range's rows from every partition, in order, aggregated and finalised. */
export function aggregateRowsRange(source: RowsRangeSource): Batch {
  const parts = source.pieces.map((piece) => decodeBatchSpill(readSpillRange(piece)).batch);
  if (parts.length === 0) return emptyBatch(aggregateOutputSchema(source.schema, source.spec));
  // Sorted without a sample: the exchange runs only where the rows hold about a group each.
  const agg = new PartialAggregator(source.schema, source.spec, true);
  agg.add(concatBatches(source.schema, parts));
  return agg.result();
}
