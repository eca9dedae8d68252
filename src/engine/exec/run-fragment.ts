// Executes one task where it lands (a worker process, or the parent with --workers 0):
// source -> operators -> terminal. Pure data in, plain data out.

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import { concatBatches, emptyBatch, selectColumns, type Batch } from '../batch.js';
import { readArrowChunk } from '../io/arrow.js';
import { readCsvChunk } from '../io/csv/index.js';
import { readParquetChunk } from '../io/parquet.js';
import { appendRows, ByteBuffer, encodeRows } from '../io/output/index.js';
import { reuse } from '../io/scratch.js';
import { PartialAggregator } from '../ops/aggregate/index.js';
import { JoinBuildTable, hashPartition, inPositionOrder, joinBucket, probeJoin, type HashPart, type TaggedRows } from '../ops/join/index.js';
import { designMatrix } from '../ml/design-matrix.js';
import { generateChunk } from '../ml/generate.js';
import { appendPredictions, modelInFile } from '../ml/predict-columns.js';
import { PARTITION_TASKS, type MatrixPartition } from '../ml/partitioned.js';
import { sourceFile, type Broadcast, type Fragment, type FragmentResult, type OpSpec, type ShuffledSide, type SourceSpec, type Task, type Terminal } from './fragment.js';
import { growTreesTask } from './forest-trees.js';
import { aggregateBelowJoin, runAggregateBelowJoin } from './join-aggregate.js';
import { readSpillRange, writeSpillFile } from './spill-file.js';
import { readAggregateRange } from './partial-slices.js';
import { aggregateRowsRange, rangePartitionToFile } from './row-exchange.js';
import { decodeBatchSpill, encodeBatchSpill } from './batch-spill.js';

/** Build tables of broadcast joins, kept for the life of the worker. */
export class BroadcastCache {
  private readonly tables = new Map<string, JoinBuildTable>();
  private readonly rows = new Map<string, number>();
  add(b: Broadcast): void {
    this.tables.set(b.id, new JoinBuildTable(b.batch, b.spec));
    this.rows.set(b.id, b.batch.length);
  }
  get(id: string): { table: JoinBuildTable; rows: number } {
    const table = this.tables.get(id);
    if (!table) throw new Error(`broadcast table ${id} was not sent to this worker`);
    return { table, rows: this.rows.get(id)! };
  }
}

/** ML design-matrix partitions held by this process, by matrix id then partition index. */
const residentMatrices = new Map<string, Map<number, MatrixPartition>>();

export async function runTask(task: Task, cache: BroadcastCache): Promise<FragmentResult> {
  const warnings: string[] = [];
  const { fragment, terminal } = task;
  if (terminal.kind === 'map-matrix') {
    const parts = [...(residentMatrices.get(terminal.matrixId)?.values() ?? [])].sort((a, b) => a.index - b.index);
    const fn = PARTITION_TASKS[terminal.task];
    if (!fn) throw new Error(`unknown partition task '${terminal.task}'`);
    const mapped = parts.map((part) => {
      part.firstRow = terminal.firstRows[part.index];
      return { index: part.index, value: fn(part, terminal.args) };
    });
    return { mapped, rows: 0, warnings };
  }
  if (terminal.kind === 'drop-matrix') {
    residentMatrices.delete(terminal.matrixId);
    return { rows: 0, warnings };
  }
  if (terminal.kind === 'grow-trees') return growTreesTask(terminal);
  if (terminal.kind === 'join-bucket') return joinBucketToFile(fragment, terminal);
  const below = aggregateBelowJoin(task);
  if (below !== null) return runAggregateBelowJoin(below, cache, (t) => runTask(t, cache));
  let batches = await readSource(fragment.source, warnings);
  const matched: Record<string, Uint8Array> = {};
  for (const op of fragment.ops) {
    const out: Batch[] = [];
    for (const b of batches) out.push(await applyOp(op, b, cache, matched));
    batches = out;
  }
  const rows = batches.reduce((s, b) => s + b.length, 0);

  switch (terminal.kind) {
    case 'collect':
      return { batches, matched, rows, warnings };
    case 'encode': {
      if (terminal.dir === null) {
        const parts = batches.map((b) => encodeRows(terminal.format, b));
        return { encoded: parts.length === 1 ? parts[0] : Buffer.concat(parts), matched, rows, warnings };
      }
      // A worker's text goes to its file at once, so it is encoded into the process's scratch buffer.
      const text = reuse('encoded text', () => true, () => new ByteBuffer(0)).clear();
      for (const b of batches) appendRows(terminal.format, text, b);
      const file = joinPath(terminal.dir, `encoded-${fragment.index}-${randomBytes(4).toString('hex')}.txt`);
      writeSpillFile(file, text.view());
      return { encodedFile: { file, offset: 0, length: text.length }, matched, rows, warnings };
    }
    case 'encode-parquet': {
      const { encodeParquetPart } = await import('../io/output/parquet-writer.js');
      return { encoded: encodeParquetPart(batches), matched, rows, warnings };
    }
    case 'load-matrix': {
      const schema = batches[0]?.schema ?? [];
      const m = designMatrix(concatBatches(schema, batches), terminal.features, terminal.target, sourceFile(fragment.source), terminal.targetLabels);
      const held = residentMatrices.get(terminal.matrixId) ?? new Map<number, MatrixPartition>();
      residentMatrices.set(terminal.matrixId, held);
      held.set(fragment.index, { index: fragment.index, firstRow: -1, rows: m.rows, cols: m.cols, x: m.x, y: m.y });
      return { holder: process.pid, matched, rows, warnings };
    }
    case 'partial-aggregate': {
      const agg = new PartialAggregator(terminal.inputSchema, terminal.spec);
      for (const b of batches) agg.add(b);
      return { partial: agg.finish(), matched, rows, warnings };
    }
    case 'range-partition':
      return { ranged: rangePartitionToFile(batches, terminal, fragment.index), matched, rows, warnings };
    case 'hash-partition':
      return { spills: hashPartitionToFiles(batches, terminal, fragment.index), matched, rows, warnings };
  }
}

/** Each bucket's rows of this fragment, with their positions among its rows, in a spill file. */
function hashPartitionToFiles(batches: Batch[], terminal: Extract<Terminal, { kind: 'hash-partition' }>, fragmentIndex: number): FragmentResult['spills'] {
  const perBucket: HashPart[][] = Array.from({ length: terminal.buckets }, () => []);
  let offset = 0;
  for (const b of batches) {
    hashPartition(b, terminal.keys, terminal.buckets).forEach((part, i) => {
      if (part.batch.length > 0) perBucket[i].push({ batch: part.batch, rows: part.rows.map((r) => r + offset) });
    });
    offset += b.length;
  }
  return perBucket.map((parts, i) => {
    if (parts.length === 0) return null;
    const file = joinPath(terminal.dir, `${terminal.prefix}-f${fragmentIndex}-b${i}.bin`);
    const pos = new Int32Array(parts.reduce((s, p) => s + p.rows.length, 0));
    let at = 0;
    for (const p of parts) { pos.set(p.rows, at); at += p.rows.length; }
    const bytes = encodeBatchSpill({ batch: concatBatches(parts[0].batch.schema, parts.map((p) => p.batch)), pos });
    writeSpillFile(file, bytes);
    return { file, bytes: bytes.reduce((s, b) => s + b.byteLength, 0) };
  });
}

/** Joins one bucket pair into one spill file, its pieces one after another. */
function joinBucketToFile(fragment: Fragment, terminal: Extract<Terminal, { kind: 'join-bucket' }>): FragmentResult {
  const { source } = fragment;
  if (source.kind !== 'bucket-pair') throw new Error(`join-bucket task over a ${source.kind} source`);
  const pieces = joinBucket(readShuffled(source.left), readShuffled(source.right), terminal.spec);
  const encoded = pieces.map((p) => encodeBatchSpill(p));
  const file = joinPath(terminal.dir, `${terminal.prefix}-b${fragment.index}.bin`);
  writeSpillFile(file, encoded.flat());
  let offset = 0;
  const joined = pieces.map((p, i) => {
    const range = { file, offset, length: encoded[i].reduce((s, b) => s + b.byteLength, 0) };
    offset += range.length;
    return { side: p.side, seq: p.seq, range };
  });
  return { joined, rows: pieces.reduce((s, p) => s + p.batch.length, 0), warnings: [] };
}

/** A bucket's spilled rows of one side, each tagged with its fragment ordinal and position. */
function readShuffled(side: ShuffledSide): TaggedRows {
  const parts = side.pieces.map(({ file, seq }) => ({ seq, ...decodeBatchSpill(readFileSync(file)) }));
  const n = parts.reduce((s, p) => s + p.batch.length, 0);
  const seq = new Int32Array(n);
  const pos = new Int32Array(n);
  let at = 0;
  for (const p of parts) {
    seq.fill(p.seq, at, at + p.batch.length);
    pos.set(p.pos, at);
    at += p.batch.length;
  }
  const batch = parts.length === 0 ? emptyBatch(side.schema) : concatBatches(side.schema, parts.map((p) => p.batch));
  return { batch, seq, pos };
}

async function readSource(source: SourceSpec, warnings: string[]): Promise<Batch[]> {
  switch (source.kind) {
    case 'csv':
      return [readCsvChunk(source.chunk, source.layout, source.options, source.columns, (w) => warnings.push(w))];
    case 'parquet':
      return [await readParquetChunk(source.chunk, source.columns)];
    case 'arrow':
      return readArrowChunk(source.chunk, source.columns);
    case 'none':
      return [];
    case 'generate': {
      const batch = generateChunk(source.generator, source.params, source.chunkIndex, source.chunkRows);
      return [selectColumns(batch, source.columns)];
    }
    case 'batch':
      return [source.batch];
    case 'aggregate-range':
      return [readAggregateRange(source)];
    case 'rows-range':
      return [aggregateRowsRange(source)];
    case 'bucket-pair':
      throw new Error('a bucket pair is read by its join-bucket terminal only');
    case 'joined':
      return [inPositionOrder(source.schema, source.pieces.map((range) => decodeBatchSpill(readSpillRange(range))))];
  }
}

async function applyOp(op: OpSpec, batch: Batch, cache: BroadcastCache, matched: Record<string, Uint8Array>): Promise<Batch> {
  switch (op.kind) {
    case 'project':
      return selectColumns(batch, op.columns);
    case 'predict':
      return appendPredictions(modelInFile(op), batch, op.keep, op.outputName, op.proba);
    case 'probe': {
      const { table, rows } = cache.get(op.broadcastId);
      const flags = (matched[op.broadcastId] ??= new Uint8Array(rows));
      return probeJoin(table, batch, op.spec, flags);
    }
  }
}
