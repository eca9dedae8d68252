// Everything a run needs besides the plan: resources, limits, and where to report.

import type { Progress } from './progress.js';
import type { TaskRunner } from './pool.js';
import type { Tracer } from './trace.js';

/**
 * The largest partition when GPU workers run: a CSV chunk must fit one storage binding (at most
 * 1 GiB, gpu-csv-aggregate.ts), and a larger one goes to the GPU worker's CPU reader, one thread
 * (10 GB group-by by origin,dest on one H200, --workers 0: --blocksize 512MB 3.4-4.6 s, 1GB 114-120 s).
 */
export const GPU_MAX_BLOCKSIZE = 512 << 20;

export interface RunContext {
  runner: TaskRunner;
  /** Target bytes per input partition (--blocksize). */
  blocksize: number;
  /**
   * Target bytes per partition of work GPU workers take (gpu-partitions.ts): beside CPU workers
   * larger than blocksize, with GPU workers alone the same; absent with --blocksize or without GPUs.
   */
  gpuBlocksize?: number;
  /** Host memory the run may hold (--memory-limit). */
  memoryLimit: number;
  /** Private temp dir of this run (spills, decompressed inputs); removed when the run ends. */
  tmpDir: string;
  progress: Progress;
  tracer?: Tracer;
  /** Plan large CSV inputs' chunks from guessed cuts (Stream.confirm). */
  guessCsvCuts?: boolean;
  warn(message: string): void;
}
