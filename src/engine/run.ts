// Running a plan: sets up the run's resources (worker pool, temp dir, trace, progress), makes sure
// they are released however the run ends (success, error, Ctrl-C), and streams the result rows
// into a writer in partition order.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { batchBytes, type Batch, type Schema } from './batch.js';
import type { PartEncoding, TextFormat } from './io/output/index.js';
import { Interrupted } from './errors.js';
import { GPU_MAX_BLOCKSIZE, type RunContext } from './exec/context.js';
import { physical } from './exec/physical.js';
import { GuessedCutsWrong } from './io/csv/index.js';
import { createRunner, type DeviceMode } from './exec/gpu-select.js';
import { silentProgress, terminalProgress } from './exec/progress.js';
import { drainSpillFile } from './exec/spill-file.js';
import { concurrencyOf } from './exec/pool.js';
import { runStream, TASK_MEMORY_FACTOR } from './exec/stream.js';
import { Tracer } from './exec/trace.js';
import { optimize } from './optimizer/index.js';
import { scansOf, type PlanNode } from './plan/nodes.js';
import { schemaOf } from './plan/schema.js';
import { RUN_DIR_PREFIX, sweepTempDir } from './stale-files.js';

export interface RunSettings {
  /** CPU worker processes; 0 runs everything in this process. */
  workers: number;
  /** --device (default cpu) and --gpus (indices; all when absent). */
  device?: DeviceMode;
  gpus?: number[];
  /** Bytes per input partition; undefined chooses (see autoBlocksize). */
  blocksize?: number;
  memoryLimit: number;
  progress: boolean;
  tracePath?: string;
  warn(message: string): void;
}

export interface ResultSink {
  write(batch: Batch): Promise<void>;
  /** Completes the output once every row is written, while the run's workers are still there (they may encode the last of it). */
  finish(): Promise<void>;
  /** When set, workers encode the rows in this text format and the sink receives the bytes. */
  encoded?: { format: TextFormat; write(bytes: Uint8Array, rows: number): Promise<void> };
}

/**
 * Optimises and runs `plan`, handing its rows, in order, to the sink that `open` returns. Large
 * CSV inputs start on guessed chunk cuts (RunContext.guessCsvCuts): rows reach the sink only
 * once the cuts are confirmed, so in the rare file where a quoted line break made a guess wrong
 * the run starts again on exact cuts with nothing written.
 */
export async function runPlan(plan: PlanNode, settings: RunSettings, open: (schema: Schema, parts: PartEncoding) => Promise<ResultSink>): Promise<void> {
  await withRunContext(settings, plan, async (ctx) => {
    const optimised = optimize(plan, { memoryLimit: settings.memoryLimit });
    let sink: ResultSink | null = null;
    const run = async (guessCsvCuts: boolean) => {
      const runCtx = { ...ctx, guessCsvCuts };
      const stream = await physical(optimised, runCtx);
      const out = (sink ??= await open(schemaOf(optimised), partEncoding(ctx)));
      const encoded = out.encoded;
      if (encoded) {
        const dir = ctx.runner.inProcess ? null : ctx.tmpDir;
        await runStream(runCtx, stream, { kind: 'encode', format: encoded.format, dir }, 'run', async (r) => {
          if (r.encoded) return encoded.write(r.encoded, r.rows);
          let rows = r.rows; // counted with the first piece
          await drainSpillFile(r.encodedFile!, async (bytes) => { await encoded.write(bytes, rows); rows = 0; });
        }, true);
      } else {
        await runStream(runCtx, stream, { kind: 'collect' }, 'run', async (r) => {
          for (const b of r.batches!) await out.write(b);
        }, true);
      }
    };
    try {
      await run(true);
    } catch (err) {
      if (!(err instanceof GuessedCutsWrong)) throw err;
      await run(false);
    }
    await (sink as ResultSink | null)?.finish();
  });
}

/** Parent memory a Parquet row group being encoded holds, about (its rows, and their message to a worker). */
const PART_MEMORY = 256 << 20;

/**
 * Parquet row groups encoded by the run's workers, a task each (parquet-writer.ts), as many at
 * once as they run tasks, but at most 8 and as --memory-limit allows: the parent holds each.
 */
function partEncoding(ctx: RunContext): PartEncoding {
  let parts = 0;
  return {
    concurrency: Math.max(1, Math.min(concurrencyOf(ctx.runner), 8, Math.floor(ctx.memoryLimit / PART_MEMORY))),
    encode: async (rows) => {
      const fragment = { index: parts, source: { kind: 'batch' as const, batch: rows }, ops: [], bytes: batchBytes(rows) };
      const result = await ctx.runner.run({ fragment, terminal: { kind: 'encode-parquet' } }, `encode Parquet row group #${parts++}`);
      return result.encoded!;
    },
  };
}

const cleanups = new Set<() => void>();

/** Registers work to undo if the process is interrupted (temp output files, child processes). */
export function onInterrupt(cleanup: () => void): () => void {
  installSignalHandlers();
  cleanups.add(cleanup);
  return () => cleanups.delete(cleanup);
}

let signalsInstalled = false;
function installSignalHandlers(): void {
  if (signalsInstalled) return;
  signalsInstalled = true;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      for (const c of [...cleanups].reverse()) {
        try { c(); } catch { /* keep cleaning */ }
      }
      const err = new Interrupted(signal);
      process.stderr.write(`gpuframe: ${err.message}\n`);
      process.exit(err.exitCode);
    });
  }
}

export async function withRunContext<T>(settings: RunSettings, plan: PlanNode | null, body: (ctx: RunContext) => Promise<T>): Promise<T> {
  installSignalHandlers();
  sweepTempDir(); // run dirs of killed runs (SIGKILL leaves no chance to clean up)
  const tracer = settings.tracePath ? new Tracer() : undefined;
  const runner = await createRunner(settings, tracer);
  const tmpDir = mkdtempSync(join(tmpdir(), `${RUN_DIR_PREFIX}${process.pid}-`));
  runner.useMessageDir?.(tmpDir);
  const temporaryInputs = plan ? scansOf(plan).flatMap((s) => s.files.filter((f) => f.temporary).map((f) => f.path)) : [];
  const removeTemporaries = () => {
    // A worker killed a moment ago (a backup copy that lost its race is still running at the end)
    // may be writing a spill file as the dir goes: retry, and never fail a finished run over its
    // temp dir. What remains, a later run sweeps (the dir's name holds this pid).
    try { rmSync(tmpDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 }); } catch { /* swept later */ }
    for (const f of temporaryInputs) rmSync(f, { force: true });
  };
  const release = () => {
    void runner.close();
    removeTemporaries();
  };
  const unregister = onInterrupt(release);
  const progress = settings.progress ? terminalProgress() : silentProgress;
  try {
    const asked = settings.blocksize ?? autoBlocksize(plan, runner.size, settings.memoryLimit, runner.gpuWorkersOnly === true);
    const blocksize = boundedForGpus(asked, runner.gpuWorkers ?? 0);
    // GPU-sized partitions beside CPU workers: four per GPU worker at least, and within the memory
    // limit were every worker to hold one. GPU workers alone take the block size.
    const gpuBlocksize = settings.blocksize !== undefined || !runner.prefersGpu ? undefined
      : runner.gpuWorkersOnly ? blocksize
      : Math.min(autoBlocksize(plan, runner.gpuWorkers ?? 1, settings.memoryLimit, true), autoBlocksize(null, runner.size, settings.memoryLimit, true));
    return await body({ runner, blocksize, gpuBlocksize, memoryLimit: settings.memoryLimit, tmpDir, progress, tracer, warn: settings.warn });
  } finally {
    progress.stop();
    unregister();
    await runner.close(); // its workers are killed before their temp dir goes
    removeTemporaries();
    if (tracer && settings.tracePath) tracer.write(settings.tracePath);
  }
}

const DEFAULT_BLOCKSIZE = 64 << 20;
/**
 * The same for GPU workers alone (GPUs with --workers 0), and for work they take beside CPU
 * workers (RunContext.gpuBlocksize): a chunk costs a GPU worker a few round trips whatever its
 * size. 10 GB CSV group-by on 2 H200s: 32 MB 2.24-2.32 s, 64 MB 1.81-2.17 s, 128 MB 1.79-1.83 s,
 * 256 MB 1.58-1.61 s. Other work beside CPU workers stays at 64 MB: they need that many chunks to
 * share work the GPUs do not speed up (a 256 MB chunk is ~4 s of parsing on one).
 */
const GPU_ONLY_BLOCKSIZE = 256 << 20;
const MIN_AUTO_BLOCKSIZE = 1 << 20;
/** Resident memory of an idle Node process of ours (measured: ~50 MB a worker, more for the parent). */
const PROCESS_BASELINE = 64 << 20;

/** The partition size of a run: the one asked for, or GPU_MAX_BLOCKSIZE when GPU workers run and it is larger. */
export function boundedForGpus(asked: number, gpuWorkers: number): number {
  return gpuWorkers > 0 ? Math.min(asked, GPU_MAX_BLOCKSIZE) : asked;
}

/**
 * 64 MB partitions (256 MB for GPU workers alone), unless that gives fewer than four per worker,
 * or every worker holding one task at once would pass --memory-limit: then smaller ones (not below
 * 1 MB), so every worker has work, none is left as a long tail, and the data in flight fits the
 * limit. Output bytes never depend on the block size.
 */
export function autoBlocksize(plan: PlanNode | null, workers: number, memoryLimit: number, gpuOnly = false): number {
  const w = Math.max(1, workers);
  const largest = gpuOnly ? GPU_ONLY_BLOCKSIZE : DEFAULT_BLOCKSIZE;
  // Node processes hold their code and heaps whatever the data: only the rest is for partitions.
  const forData = Math.max(memoryLimit / 4, memoryLimit - PROCESS_BASELINE * (w + 1));
  const byMemory = Math.floor(forData / (w * TASK_MEMORY_FACTOR));
  if (plan === null) return Math.max(MIN_AUTO_BLOCKSIZE, Math.min(largest, byMemory));
  const bytes = inputBytes(plan);
  const even = Math.floor(bytes / (4 * w));
  return Math.max(MIN_AUTO_BLOCKSIZE, Math.min(largest, even, byMemory));
}

/**
 * Partitions of training data that GPU kernels read (k-means, linreg), without --blocksize: the
 * input in a multiple of eight equal parts of at most 512 MB (1 MB at least), never sized from the
 * workers or GPUs. The GPU sums a partition's rows in double-float per block, so differently
 * partitioned rows round differently in the last bits; sized this way, a model is the same
 * whatever --gpus and --workers are. (CPU training sums in double-double and does not depend on
 * partitions at all.) Large partitions make a round cheaper (k-means, 10^7 × 32 on one H200:
 * 7.8-8.1 ms per iteration at 512 MB, 9.5-11.3 ms at 256 MB, 11.6-13.2 ms at 163 MB); a multiple of
 * eight spreads evenly over 1, 2, 4 or 8 GPUs (every pass waits for the GPU holding the most).
 */
export function gpuTrainingBlocksize(plan: PlanNode, memoryLimit: number): number {
  const bytes = inputBytes(plan);
  const parts = 8 * Math.max(1, Math.ceil(bytes / (8 * GPU_MAX_BLOCKSIZE)));
  return Math.max(MIN_AUTO_BLOCKSIZE, Math.min(Math.ceil(bytes / parts), Math.floor(memoryLimit / 64)));
}

/** Bytes of every file the plan scans. */
function inputBytes(plan: PlanNode): number {
  return scansOf(plan).reduce((s, scan) => s + scan.files.reduce((t, f) => t + f.bytes, 0), 0);
}

