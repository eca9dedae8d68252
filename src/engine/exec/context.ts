// Everything a run needs besides the plan: resources, limits, and where to report.

import type { Progress } from './progress.js';
import type { TaskRunner } from './pool.js';
import type { Tracer } from './trace.js';

export interface RunContext {
  runner: TaskRunner;
  /** Target bytes per input partition (--blocksize). */
  blocksize: number;
  /** Target bytes per partition of work GPU workers take beside CPU workers (gpu-partitions.ts); absent with --blocksize. */
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
