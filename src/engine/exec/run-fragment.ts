// Executes one task where it lands (a worker process, or the parent with --workers 0):
// source -> operators -> terminal. Pure data in, plain data out.

import { readFileSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { concatBatches, emptyBatch, selectColumns, type Batch } from '../batch.js';
import { readArrowChunk } from '../io/arrow.js';
import { readCsvChunk } from '../io/csv/index.js';
import { readParquetChunk } from '../io/parquet.js';
import { encodeRows } from '../io/output/index.js';
import { PartialAggregator } from '../ops/aggregate/index.js';
import { JoinBuildTable, hashPartition, probeJoin, unmatchedRightRows } from '../ops/join/index.js';
import { designMatrix } from '../ml/design-matrix.js';
import { generateChunk } from '../ml/generate.js';
import { appendPredictions, modelInFile } from '../ml/predict-columns.js';
import { PARTITION_TASKS, type MatrixPartition } from '../ml/partitioned.js';
import { sourceFile, type Broadcast, type FragmentResult, type OpSpec, type SourceSpec, type Task } from './fragment.js';
import { growTreesTask } from './forest-trees.js';
import { aggregateBelowJoin, runAggregateBelowJoin } from './join-aggregate.js';
import { writeSpillFile } from './spill-file.js';

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
      const parts = batches.map((b) => encodeRows(terminal.format, b));
      return { encoded: parts.length === 1 ? parts[0] : Buffer.concat(parts), matched, rows, warnings };
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
    case 'hash-partition': {
      const spills: (string | null)[] = new Array(terminal.buckets).fill(null);
      const perBucket: Batch[][] = Array.from({ length: terminal.buckets }, () => []);
      for (const b of batches) hashPartition(b, terminal.keys, terminal.buckets).forEach((part, i) => perBucket[i].push(part));
      perBucket.forEach((parts, i) => {
        const nonEmpty = parts.filter((p) => p.length > 0);
        if (nonEmpty.length === 0) return;
        const file = joinPath(terminal.dir, `${terminal.prefix}-f${fragment.index}-b${i}.v8`);
        writeSpillFile(file, serialize(concatBatches(nonEmpty[0].schema, nonEmpty)));
        spills[i] = file;
      });
      return { spills, matched, rows, warnings };
    }
  }
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
    case 'spilled':
      return [deserialize(readFileSync(source.file)) as Batch];
    case 'join-bucket': {
      const left = readSpills(source.left.files, source.left.schema);
      const right = readSpills(source.right.files, source.right.schema);
      const table = new JoinBuildTable(right, source.spec);
      const matchedRight = new Uint8Array(right.length);
      const out = [probeJoin(table, left, source.spec, matchedRight)];
      if (source.spec.how === 'right' || source.spec.how === 'outer') {
        out.push(unmatchedRightRows(table, matchedRight, source.left.schema, source.spec));
      }
      return out;
    }
  }
}

function readSpills(files: string[], schema: Batch['schema']): Batch {
  if (files.length === 0) return emptyBatch(schema);
  return concatBatches(schema, files.map((f) => deserialize(readFileSync(f)) as Batch));
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
