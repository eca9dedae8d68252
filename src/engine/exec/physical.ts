// From an optimised logical plan to partitioned streams. Pipeline breakers (final aggregation,
// the build side of a broadcast join, the shuffle of a partitioned join) run here, in the parent,
// by executing their inputs' streams; everything else stays a chain of per-fragment operators.

import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { concatBatches, emptyBatch, type Batch, type Schema } from '../batch.js';
import { DataError } from '../errors.js';
import { planArrowChunks } from '../io/arrow.js';
import { guessCsvChunks, inferCsvLayout, materializeCsvInput, planCsvChunks } from '../io/csv/index.js';
import { planParquetChunks } from '../io/parquet.js';
import { saveModelText } from '../ml/model-file.js';
import { modelOf } from '../ml/predict-columns.js';
import { JoinBuildTable, unmatchedRightRows } from '../ops/join/index.js';
import type { GenerateNode, JoinNode, PlanNode, ScanNode } from '../plan/nodes.js';
import { aggregateStream } from './aggregate-stage.js';
import { schemaOf } from '../plan/schema.js';
import type { RunContext } from './context.js';
import type { Fragment, ShuffledSide, SpillRange } from './fragment.js';
import { chargeWrite } from './fault-hook.js';
import { spillWriteFailure } from './spill-file.js';
import { runStream, withOp, type Stream } from './stream.js';
import { traced } from './trace.js';

export async function physical(node: PlanNode, ctx: RunContext): Promise<Stream> {
  switch (node.kind) {
    case 'scan':
      return scanStream(node, ctx);
    case 'generate':
      return generateStream(node);
    case 'project':
      return withOp(await physical(node.input, ctx), { kind: 'project', columns: node.columns }, schemaOf(node));
    case 'final-aggregate':
      return aggregateStream(node, await physical(node.input.input, ctx), ctx);
    case 'join':
      return node.strategy === 'partitioned' ? partitionedJoin(node, ctx) : broadcastJoin(node, ctx);
    case 'aggregate':
    case 'partial-aggregate':
      throw new Error(`${node.kind} must be rewritten by the optimiser before execution`);
    case 'predict': {
      const { modelPath, keep, proba, outputName } = node;
      const modelFile = join(ctx.tmpDir, `model-${randomUUID()}.json`);
      try {
        chargeWrite(modelFile, node.modelText.length);
        saveModelText(modelFile, node.modelText, node.modelStamp);
      } catch (err) {
        throw spillWriteFailure(modelFile, err);
      }
      return withOp(await physical(node.input, ctx), { kind: 'predict', modelFile, modelPath, modelKind: modelOf(node).kind, keep, proba, outputName }, schemaOf(node));
    }
  }
}

/** Runs a stream to the end and returns all its rows as one batch. */
export async function collect(stream: Stream, ctx: RunContext, label: string): Promise<Batch> {
  const parts: Batch[] = [];
  await runStream(ctx, stream, { kind: 'collect' }, label, (r) => { parts.push(...r.batches!); });
  return parts.length === 0 ? emptyBatch(stream.schema) : concatBatches(stream.schema, parts);
}

async function scanStream(scan: ScanNode, ctx: RunContext): Promise<Stream> {
  const columns = scan.columns ?? scan.schema.map((f) => f.name);
  const fragments: Fragment[] = [];
  const confirms: (() => Promise<void>)[] = [];
  const add = (f: Omit<Fragment, 'index' | 'ops'>) => fragments.push({ ...f, index: fragments.length, ops: [] });
  for (const file of scan.files) {
    if (scan.format === 'csv') {
      const options = scan.csv!;
      const plain = await materializeCsvInput(file.path, file.displayName, ctx.tmpDir);
      const layout = await inferCsvLayout(plain, file.displayName, options);
      checkSameColumns(scan, layout.schema, file.displayName);
      const { chunks, confirm } = await traced(ctx.tracer, `plan chunks of ${file.displayName}`, async () => (
        ctx.guessCsvCuts ? guessCsvChunks(layout, options, ctx.blocksize) : { chunks: await planCsvChunks(layout, options, ctx.blocksize), confirm: null }
      ));
      if (confirm) confirms.push(() => traced(ctx.tracer, `confirm chunks of ${file.displayName}`, confirm));
      for (const chunk of chunks) {
        add({ source: { kind: 'csv', chunk, layout, options, columns }, bytes: chunk.end - chunk.start });
      }
    } else if (scan.format === 'parquet') {
      const { schema, chunks } = await planParquetChunks(file, ctx.blocksize);
      checkSameColumns(scan, schema, file.displayName);
      const per = file.bytes / Math.max(1, chunks.length);
      for (const chunk of chunks) add({ source: { kind: 'parquet', chunk, columns }, bytes: per });
    } else {
      const { schema, chunks } = await planArrowChunks(file, scan.format === 'arrow' ? 'file' : 'stream', ctx.blocksize);
      checkSameColumns(scan, schema, file.displayName);
      const per = file.bytes / Math.max(1, chunks.length);
      for (const chunk of chunks) add({ source: { kind: 'arrow', chunk, columns }, bytes: per });
    }
  }
  if (confirms.length === 0) return { schema: schemaOf(scan), fragments };
  let confirmed: Promise<void> | null = null;
  return { schema: schemaOf(scan), fragments, confirm: () => (confirmed ??= Promise.all(confirms.map((c) => c())).then(() => {})) };
}

/** Rows per generated chunk: fixed, so generated data never depends on workers or block size. */
const GENERATE_CHUNK_ROWS = 1 << 16;

function generateStream(node: GenerateNode): Stream {
  const columns = schemaOf(node).map((f) => f.name);
  const chunks = Math.ceil(node.params.nSamples / GENERATE_CHUNK_ROWS);
  const bytesPerRow = 8 * columns.length;
  const fragments: Fragment[] = Array.from({ length: chunks }, (_, chunkIndex) => ({
    index: chunkIndex,
    source: { kind: 'generate', generator: node.generator, params: node.params, chunkIndex, chunkRows: GENERATE_CHUNK_ROWS, columns },
    ops: [],
    bytes: Math.min(GENERATE_CHUNK_ROWS, node.params.nSamples - chunkIndex * GENERATE_CHUNK_ROWS) * bytesPerRow,
  }));
  return { schema: schemaOf(node), fragments };
}

/** Every file of a multi-file scan must hold the columns of the first, with the same types. */
function checkSameColumns(scan: ScanNode, schema: Schema, file: string): void {
  const byName = new Map(schema.map((x) => [x.name, x] as const));
  for (const f of scan.schema) {
    const g = byName.get(f.name);
    if (!g) throw new DataError(`has no column '${f.name}' (the first input has it)`, { file });
    if (g.type !== f.type) throw new DataError(`column '${f.name}' is ${g.type} here but ${f.type} in the first input; pass --dtypes ${f.name}=${f.type === 'string' || g.type === 'string' ? 'string' : 'float64'}`, { file });
  }
}

async function broadcastJoin(node: JoinNode, ctx: RunContext): Promise<Stream> {
  const right = await collect(await physical(node.right, ctx), ctx, 'merge: build side');
  const left = await physical(node.left, ctx);
  const id = randomUUID();
  ctx.runner.broadcast({ id, batch: right, spec: node.spec });
  const stream = withOp(left, { kind: 'probe', broadcastId: id, spec: node.spec, leftSchema: left.schema, rightSchema: right.schema }, schemaOf(node));
  if (node.spec.how !== 'right' && node.spec.how !== 'outer') return stream;
  const leftSchema = left.schema;
  // After the left side's own epilogues (an earlier right/outer join's unmatched rows, probed here too).
  const earlier = stream.epilogues ?? [];
  const unmatched = (matched: Record<string, Uint8Array>): Fragment[] => {
    const table = new JoinBuildTable(right, node.spec);
    const batch = unmatchedRightRows(table, matched[id] ?? new Uint8Array(right.length), leftSchema, node.spec);
    return [{ index: stream.fragments.length + earlier.length, source: { kind: 'batch', batch }, ops: [], bytes: 0 }];
  };
  return { ...stream, epilogues: [...earlier, unmatched] };
}

/**
 * Both sides hash-partitioned into spilled buckets, each bucket pair joined into a spill file, then
 * one fragment per input fragment gathering its rows from every bucket: the broadcast join's row
 * order whatever the bucket count (ops/join/bucket-join.ts).
 */
async function partitionedJoin(node: JoinNode, ctx: RunContext): Promise<Stream> {
  const buckets = node.buckets ?? 16;
  const tag = randomUUID().slice(0, 8);
  const shuffle = async (side: PlanNode, keys: string[], prefix: string): Promise<{ sides: ShuffledSide[]; bytes: number[] }> => {
    const stream = await physical(side, ctx);
    const sides: ShuffledSide[] = Array.from({ length: buckets }, () => ({ schema: stream.schema, pieces: [] }));
    const bytes = new Array<number>(buckets).fill(0);
    let seq = 0; // fragments in the order the stream yields them, epilogues last
    await runStream(ctx, stream, { kind: 'hash-partition', keys, buckets, dir: ctx.tmpDir, prefix }, `merge: partition ${prefix}`, (r) => {
      r.spills!.forEach((spill, b) => {
        if (spill === null) return;
        sides[b].pieces.push({ file: spill.file, seq });
        bytes[b] += spill.bytes;
      });
      seq++;
    });
    return { sides, bytes };
  };
  const left = await shuffle(node.left, node.spec.leftOn, `${tag}-left`);
  const right = await shuffle(node.right, node.spec.rightOn, `${tag}-right`);
  const bucketPairs: Stream = {
    schema: schemaOf(node),
    fragments: left.sides.map((l, b) => ({ index: b, source: { kind: 'bucket-pair', left: l, right: right.sides[b] }, ops: [], bytes: left.bytes[b] + right.bytes[b] })),
  };
  const pieces = { left: new Map<number, SpillRange[]>(), right: new Map<number, SpillRange[]>() };
  await runStream(ctx, bucketPairs, { kind: 'join-bucket', spec: node.spec, dir: ctx.tmpDir, prefix: `${tag}-joined` }, 'merge: join buckets', (r) => {
    for (const { side, seq, range } of r.joined!) {
      const held = pieces[side].get(seq);
      if (held) held.push(range);
      else pieces[side].set(seq, [range]);
    }
  });
  removeSpills([...left.sides, ...right.sides].flatMap((s) => s.pieces.map((p) => p.file)));
  // Left fragments' rows first, then the unmatched right rows; each fragment's in position order.
  const schema = schemaOf(node);
  const fragments: Fragment[] = [];
  for (const side of ['left', 'right'] as const) {
    for (const seq of [...pieces[side].keys()].sort((a, b) => a - b)) {
      const ranges = pieces[side].get(seq)!;
      fragments.push({ index: fragments.length, source: { kind: 'joined', schema, pieces: ranges }, ops: [], bytes: ranges.reduce((s, r) => s + r.length, 0) });
    }
  }
  return { schema, fragments };
}

/** Shuffle files no task reads any more; the run's temp dir goes at its end anyway. */
function removeSpills(files: string[]): void {
  for (const f of files) rmSync(f, { force: true });
}
