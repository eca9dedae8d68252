// The combine step of a groupby, in the parent: partial states arrive in partition order and are
// merged in that order. While the merged state fits in a quarter of --memory-limit it stays in
// memory; past that, groups are range-partitioned by key into parts spilled to the temp dir, and
// each part is merged and finalised on its own, in key order. Every group sees the same sequence
// of merges either way, so spilling never changes the output bytes.

import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { columnLength, type Column, type Schema } from '../batch.js';
import {
  chooseSplitters, finalizeAggregate, PartialAggregator, PartialMerger, partitionPartial, rangeOfGroups, type PartialAggregate,
} from '../ops/aggregate/index.js';
import type { FinalAggregateNode } from '../plan/nodes.js';
import type { RunContext } from './context.js';
import type { Fragment } from './fragment.js';
import { inGpuPartitions } from './gpu-partitions.js';
import { runStream, type Stream } from './stream.js';
import { writeSpillFile } from './spill-file.js';

/** Share of --memory-limit the merged state may hold before it spills. */
const STATE_SHARE = 1 / 4;

export async function aggregateStream(node: FinalAggregateNode, stream: Stream, ctx: RunContext): Promise<Stream> {
  const terminal = { kind: 'partial-aggregate' as const, spec: node.spec, inputSchema: stream.schema };
  const input = inGpuPartitions(stream, terminal, ctx);
  const budget = ctx.memoryLimit * STATE_SHARE;
  const totalBytes = input.fragments.reduce((s, f) => s + f.bytes, 0);
  let merger = new PartialMerger();
  let spill: RangeSpill | null = null;
  let bytesSeen = 0;
  await runStream(ctx, input, terminal, 'groupby', (r, fragment) => {
    bytesSeen += fragment.bytes;
    if (spill !== null) { spill.add(r.partial!); return; }
    merger.add(r.partial!);
    const held = merger.bytes();
    if (held > budget) {
      // Guess the final size from the share of input seen so far, and aim for parts of half the budget.
      const projected = held * Math.max(1, totalBytes / Math.max(1, bytesSeen));
      const parts = Math.min(4096, Math.max(2, Math.ceil((2 * projected) / budget)));
      spill = new RangeSpill(merger.result()!, parts, ctx.tmpDir);
      merger = new PartialMerger(); // the spill holds the groups from here on
    }
  });
  const finished = spill as RangeSpill | null;
  if (finished !== null) return finished.finish();
  const state = merger.result() ?? new PartialAggregator(input.schema, node.spec).finish();
  const batch = finalizeAggregate(state);
  return { schema: batch.schema, fragments: [{ index: 0, source: { kind: 'batch', batch }, ops: [], bytes: 0 }] };
}

class RangeSpill {
  private readonly splitters: Column[];
  /** Spill files of each key range, in arrival (= partition) order. */
  private readonly files: string[][];
  private readonly schema: Schema;
  private seq = 0;

  constructor(first: PartialAggregate, parts: number, private readonly dir: string) {
    this.schema = first.schema;
    this.splitters = chooseSplitters(first, parts);
    this.files = Array.from({ length: columnLength(this.splitters[0]) + 1 }, () => []);
    this.add(first);
  }

  add(p: PartialAggregate): void {
    const pieces = partitionPartial(p, rangeOfGroups(p, this.splitters), this.files.length);
    const seq = this.seq++;
    pieces.forEach((piece, part) => {
      if (piece.groups === 0) return;
      const file = join(this.dir, `agg-r${part}-s${seq}.v8`);
      writeSpillFile(file, serialize(piece));
      this.files[part].push(file);
    });
  }

  /** Merges and finalises each range, in key order, into one spilled batch per range. */
  finish(): Stream {
    const fragments: Fragment[] = [];
    for (const [part, files] of this.files.entries()) {
      if (files.length === 0) continue;
      const merger = new PartialMerger();
      for (const f of files) {
        merger.add(deserialize(readFileSync(f)) as PartialAggregate);
        rmSync(f);
      }
      const batch = finalizeAggregate(merger.result()!);
      const file = join(this.dir, `agg-final-r${part}.v8`);
      writeSpillFile(file, serialize(batch));
      fragments.push({ index: fragments.length, source: { kind: 'spilled', file }, ops: [], bytes: 0 });
    }
    return { schema: this.schema, fragments };
  }
}
