// A partitioned stream: the physical form of a plan node. Its fragments run in parallel, and
// their results are consumed strictly in fragment order, which fixes every reduction order.

import type { Schema } from '../batch.js';
import type { RunContext } from './context.js';
import { concurrencyOf } from './pool.js';
import type { Fragment, FragmentResult, OpSpec, Task, Terminal } from './fragment.js';

export interface Stream {
  schema: Schema;
  fragments: Fragment[];
  /**
   * Fragments that can only be built after all others ran (the unmatched build rows of a
   * right/outer broadcast join), given the build rows every fragment so far matched, by broadcast
   * id; in order, each after the fragments of the one before (joins chained: the first join's
   * unmatched rows go through the second join's probe before the second's are known).
   */
  epilogues?: ((matched: Record<string, Uint8Array>) => Fragment[])[];
  /** Fragments cut at guessed CSV record ends (guessCsvChunks): resolves when the guesses are
   *  known right, rejects with GuessedCutsWrong when not. Results consumed in fragment order are
   *  right without it; a task error counts only after it. */
  confirm?: () => Promise<void>;
}

export function withOp(stream: Stream, op: OpSpec, schema: Schema): Stream {
  const add = (f: Fragment): Fragment => ({ ...f, ops: [...f.ops, op] });
  return {
    schema,
    fragments: stream.fragments.map(add),
    epilogues: stream.epilogues?.map((epilogue) => (matched: Record<string, Uint8Array>) => epilogue(matched).map(add)),
    confirm: stream.confirm,
  };
}

/**
 * Runs every fragment of `stream` with `terminal` and hands each result to `consume` in fragment
 * order. At most `window` results are in flight or waiting, which bounds memory (backpressure).
 * `confirmFirst`: no result is consumed before the stream's fragments are confirmed (results
 * that leave the run, which a rerun could not take back).
 */
export async function runStream(
  ctx: RunContext,
  stream: Stream,
  terminal: Terminal,
  label: string,
  consume: (result: FragmentResult, fragment: Fragment) => Promise<void> | void,
  confirmFirst = false,
): Promise<void> {
  const matched: Record<string, Uint8Array> = {};
  const markMatched = (result: FragmentResult) => { for (const [id, flags] of Object.entries(result.matched ?? {})) orInto(matched, id, flags); };
  const totalBytes = stream.fragments.reduce((s, f) => s + f.bytes, 0);
  // Streams built in the parent (aggregate results) cover no input bytes: nothing to show.
  if (totalBytes > 0) ctx.progress.start(totalBytes, label);
  try {
    const confirm = stream.confirm ?? null;
    if (confirmFirst) void confirm?.().catch(() => {}); // starts it now; awaited before the first result
    await runOrdered(ctx, stream.fragments, terminal, label, confirm, confirmFirst, async (result, fragment) => {
      markMatched(result);
      for (const w of result.warnings) ctx.warn(w);
      ctx.progress.advance(fragment.bytes, result.rows);
      await consume(result, fragment);
    });
    for (const epilogue of stream.epilogues ?? []) {
      await runOrdered(ctx, epilogue(matched), terminal, `${label} (epilogue)`, null, false, async (result, fragment) => {
        markMatched(result);
        await consume(result, fragment);
      });
    }
  } finally {
    ctx.progress.stop();
  }
}

async function runOrdered(
  ctx: RunContext,
  fragments: Fragment[],
  terminal: Terminal,
  label: string,
  confirm: (() => Promise<void>) | null,
  confirmFirst: boolean,
  consume: (result: FragmentResult, fragment: Fragment) => Promise<void>,
): Promise<void> {
  const window = taskWindow(ctx, terminal);
  const inFlight = new Map<number, Promise<FragmentResult>>();
  let next = 0;
  const launch = () => {
    while (next < fragments.length && inFlight.size < window) {
      const f = fragments[next];
      const task: Task = { fragment: f, terminal };
      const p = ctx.runner.run(task, `${label} #${f.index} (${f.source.kind})`);
      p.catch(() => {}); // awaited in order below; avoid unhandled-rejection noise meanwhile
      inFlight.set(next++, p);
    }
  };
  launch();
  for (let i = 0; i < fragments.length; i++) {
    // A task's error counts only once its fragment is confirmed: a chunk cut inside a quoted field
    // fails for that reason alone (then confirm rejects, and the run plans again).
    const result = await inFlight.get(i)!.catch(async (err) => { await confirm?.(); throw err; });
    if (confirmFirst) await confirm?.();
    inFlight.delete(i);
    launch();
    await consume(result, fragments[i]);
  }
}

/** A task holds its raw chunk, the field table, the parsed columns and its result: measured at
 *  about five times the block size for CSV. */
export const TASK_MEMORY_FACTOR = 6;

/**
 * How many tasks ending in `terminal` may be running or waiting to be consumed at once: two per
 * place a worker has for them (so a worker never idles while the parent consumes), fewer when
 * --memory-limit cannot hold that many. This changes only concurrency, never partitioning, so
 * results stay the same.
 */
export function taskWindow(ctx: RunContext, terminal?: Terminal): number {
  const byMemory = Math.floor(ctx.memoryLimit / (ctx.blocksize * TASK_MEMORY_FACTOR));
  return Math.max(1, Math.min(concurrencyOf(ctx.runner, terminal) * 2, byMemory));
}

function orInto(acc: Record<string, Uint8Array>, id: string, flags: Uint8Array): void {
  const have = acc[id];
  if (!have) { acc[id] = flags.slice(); return; }
  for (let i = 0; i < flags.length; i++) have[i] |= flags[i];
}
