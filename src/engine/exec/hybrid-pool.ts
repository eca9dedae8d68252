// GPU workers and CPU workers behind one queue. An idle GPU worker takes the next task the GPU
// speeds up; an idle CPU worker takes the next task the GPU does not speed up, or one it does when
// the GPUs' backlog would outlast a CPU task (work stealing, weighed by measured task times, with
// CPU workers joining in gradually), so on a machine with many cores and few GPUs neither kind
// waits for the other. When the queue is empty and a CPU worker is idle while a GPU task is still
// running, longer than a CPU worker takes for one, the CPU worker runs a backup copy of it and the
// first result wins (MapReduce's backup tasks): a slow device cannot hold up the end of a stage; the
// other way round, an idle GPU worker with nothing queued backs up a task it speeds up that a CPU
// worker is still on (10 GB group-by on 2 H200s + 32 cores: such CPU chunks ended it 2 s late). A
// task's result is the same wherever it runs (GPU partial states are converted into the CPU's),
// so which copy wins never changes the output. Tasks marked GPU-only (loading training data GPU
// kernels read, growing a forest's trees: GPU and CPU compute these in different precisions) never
// run on a CPU worker, not even as backups, unless no GPU worker is left.
// The GPU workers may still be opening (a GPU driver takes most of a second to start) when the
// first tasks arrive: CPU workers start at once on tasks the GPU does not speed up (one of them on a
// task it does, to time the CPU side), GPU-only tasks wait for the GPUs, and GPU-preferring tasks
// go to the GPUs as they come up.

import type { FragmentResult, Broadcast, Task, Terminal } from './fragment.js';
import { concurrencyOf, NO_WORKERS, type TaskRunner } from './pool.js';

interface Job {
  task: Task;
  label: string;
  resolve: (r: FragmentResult) => void;
  reject: (e: Error) => void;
  settled: boolean;
  /** Decided once, when queued (the predicates look at the task's plan). */
  prefersGpu: boolean;
  gpuOnly: boolean;
  /** Copies started, and how many of them have failed. */
  copies: number;
  failures: number;
  /** When the first copy started (performance.now()), and on which kind of worker. */
  startedAt: number;
  firstOnGpu: boolean;
}

/**
 * GPU workers still opening: how many are expected, the tasks (ending in `terminal`, or of any
 * kind) each will run at once, and the runner they become (null: none opened).
 */
export interface OpeningGpus { workers: number; tasksPerWorker(terminal?: Terminal): number; runner: Promise<TaskRunner | null> }

export class HybridRunner implements TaskRunner {
  private readonly queue: Job[] = [];
  /** GPU jobs without a backup copy yet, oldest first. */
  private readonly onGpuAlone: Job[] = [];
  /** Jobs the GPU speeds up that run on a CPU worker alone, oldest first. */
  private readonly onCpuAlone: Job[] = [];
  private gpuBusy = 0;
  private cpuBusy = 0;
  /** First copies of tasks the GPU speeds up running on CPU workers, and how many may (cpuWorthIt). */
  private cpuOnGpuTasks = 0;
  private cpuShare = 1;
  private pumpQueued = false;
  /** The GPU workers once open (an empty runner when none opened); null while they open. */
  private gpu: TaskRunner | null = null;
  private readonly opening: OpeningGpus | null;
  /** Why the GPU workers failed to open (--device gpu): every task fails with it. */
  private gpuFailure: Error | null = null;
  private readonly gpuOpened: Promise<void>;
  private readonly broadcasts: Broadcast[] = [];
  private messageDir: string | null = null;
  /** Milliseconds per task the GPU speeds up, on each kind of worker (recordTaskMs); null until one finished. */
  private readonly taskMs: { gpu: number | null; cpu: number | null } = { gpu: null, cpu: null };
  /** A pump due when a GPU job becomes late enough to back up (pumpWhenLate). */
  private lateTimer: NodeJS.Timeout | null = null;

  constructor(
    gpu: TaskRunner | OpeningGpus,
    private readonly cpu: TaskRunner,
    private readonly gpuSpeedsUp: (task: Task) => boolean,
    private readonly gpuOnly: (task: Task) => boolean = () => false,
  ) {
    if (!('runner' in gpu)) {
      this.gpu = gpu;
      this.opening = null;
      this.gpuOpened = Promise.resolve();
      return;
    }
    this.opening = gpu;
    this.gpuOpened = gpu.runner.then(
      (runner) => { this.gpu = runner ?? NO_WORKERS; },
      (err: Error) => { this.gpu = NO_WORKERS; this.gpuFailure = err; },
    ).then(() => {
      if (this.messageDir !== null) this.gpu!.useMessageDir?.(this.messageDir);
      for (const b of this.broadcasts) this.gpu!.broadcast(b);
      if (this.gpuFailure) for (const job of this.queue.splice(0)) this.settle(job, this.gpuFailure);
      this.pump();
    });
  }

  get size(): number {
    return (this.gpu?.size ?? this.opening!.workers) + this.cpu.size;
  }

  get concurrency(): number {
    return this.concurrencyFor();
  }

  concurrencyFor(terminal?: Terminal): number {
    return (this.gpu ? concurrencyOf(this.gpu, terminal) : this.opening!.workers * this.opening!.tasksPerWorker(terminal)) + concurrencyOf(this.cpu, terminal);
  }

  get gpuWorkers(): number {
    return this.gpu ? this.gpu.size : this.opening!.workers;
  }

  get gpuWorkersOnly(): boolean {
    return this.cpu === NO_WORKERS;
  }

  /** Tasks the GPU speeds up, when CPU workers run beside the GPU workers (their inputs may come in GPU-sized partitions). */
  prefersGpu(task: Task): boolean {
    return this.cpu !== NO_WORKERS && this.gpuWorkers > 0 && this.gpuSpeedsUp(task);
  }

  useMessageDir(dir: string): void {
    this.messageDir = dir;
    this.gpu?.useMessageDir?.(dir);
    this.cpu.useMessageDir?.(dir);
  }

  broadcast(b: Broadcast): void {
    if (this.gpu) this.gpu.broadcast(b);
    else this.broadcasts.push(b);
    this.cpu.broadcast(b);
  }

  run(task: Task, label: string): Promise<FragmentResult> {
    return new Promise((resolve, reject) => {
      if (this.gpuFailure) return reject(this.gpuFailure);
      const gpuOnly = this.gpuOnly(task);
      this.queue.push({ task, label, resolve, reject, settled: false, prefersGpu: gpuOnly || this.gpuSpeedsUp(task), gpuOnly, copies: 0, failures: 0, startedAt: 0, firstOnGpu: false });
      // Scheduled once the caller has queued its whole burst of tasks: pumping after the first
      // alone found the queue empty and made idle CPU workers back up the task the GPU just took.
      if (!this.pumpQueued) {
        this.pumpQueued = true;
        queueMicrotask(() => { this.pumpQueued = false; this.pump(); });
      }
    });
  }

  /** GPU workers still opening have run nothing, so they hold nothing: only the CPU workers are asked then. */
  async runOnEach(task: Task, label: string): Promise<FragmentResult[]> {
    if (this.gpuFailure) throw this.gpuFailure;
    const [g, c] = await Promise.all([this.gpu ? this.gpu.runOnEach(task, label) : [], this.cpu.runOnEach(task, label)]);
    return [...g, ...c];
  }

  async close(): Promise<void> {
    if (this.lateTimer !== null) clearTimeout(this.lateTimer);
    this.lateTimer = null;
    await Promise.all([this.gpuOpened.then(() => this.gpu!.close()), this.cpu.close()]);
  }

  /** A moving average of how long first copies of tasks the GPU speeds up took, per kind of worker. */
  private recordTaskMs(side: 'gpu' | 'cpu', ms: number): void {
    const prev = this.taskMs[side];
    this.taskMs[side] = prev === null ? ms : 0.7 * prev + 0.3 * ms;
  }

  private settle(job: Job, err: Error): void {
    if (!job.settled) { job.settled = true; job.reject(err); }
  }

  private pump(): void {
    if (this.gpu && this.gpu.size === 0 && concurrencyOf(this.cpu) === 0) {
      // Every GPU worker is gone and there are no CPU workers: the GPU side's refusal says why.
      for (const job of this.queue.splice(0)) this.start(job, true);
      return;
    }
    for (;;) {
      if (this.gpu) {
        const gpu = this.gpu;
        // Each kind of task up to what the GPU workers take of that kind at once (more ML loads than others).
        const at = this.queue.findIndex((j) => j.prefersGpu && this.gpuBusy < concurrencyOf(gpu, j.task.terminal));
        if (at >= 0) { this.start(this.queue.splice(at, 1)[0], true); continue; }
        // Nothing queued for the GPU: back up a task it speeds up that a CPU worker is still on
        // (CPU workers take such tasks while the GPUs open, and would hold up the end).
        const slow = this.gpuBusy < concurrencyOf(gpu) ? this.onCpuAlone.shift() : undefined;
        if (slow) { if (!slow.settled) this.start(slow, true); continue; }
      }
      if (this.cpuBusy >= concurrencyOf(this.cpu)) return;
      // A CPU worker takes the next task the GPU cannot speed up, else one it can when the GPUs'
      // backlog would keep it waiting longer than a CPU worker needs — the last of them, which the
      // GPUs would reach last.
      const other = this.queue.findIndex((j) => !j.prefersGpu && this.cpuMayRun(j));
      const at = other >= 0 ? other : this.cpuWorthIt() ? this.lastCpuMayRun() : -1;
      if (at >= 0) { this.start(this.queue.splice(at, 1)[0], false); continue; }
      // A GPU task is a straggler only once nothing is queued for the GPUs (backups before that
      // only took cores from the GPU workers: 10 GB group-by, nine 64 MB chunks parsed twice), and
      // once it has run longer than a CPU worker takes for such a task: a copy started earlier
      // cannot win, and it holds its worker after the stage ends (10 GB group-by in 256 MB
      // partitions: CPU copies of GPU tasks that take 0.5 s kept every CPU worker busy for 3 s
      // after the last result, while the next stage's task waited for one).
      if (this.queue.some((j) => j.prefersGpu)) return;
      const i = this.onGpuAlone.findIndex((j) => this.cpuMayRun(j) && this.lateOnGpu(j));
      if (i < 0) { this.pumpWhenLate(); return; }
      const straggler = this.onGpuAlone.splice(i, 1)[0];
      if (!straggler.settled) this.start(straggler, false);
    }
  }

  /**
   * Whether a CPU worker should take a task the GPU speeds up: when no GPU is left; until both
   * kinds of worker have timed one, only one CPU worker at a time (it times the CPU side: while
   * the GPUs open, 32 CPU workers that each took a 64 MB chunk at ~2 s held up a 10 GB group-by
   * that two H200s finish in ~3 s); then when the queue ahead of the GPUs would take them longer
   * than the CPU takes for one task. Until a GPU task has finished, the longest-running one gives
   * a lower bound of the GPU's time (a group per id: the first 14 MB chunks took a GPU worker
   * 1.5 s, and waiting for them kept 15 of 16 CPU workers idle that long).
   * CPU workers join such tasks gradually (cpuShare, as TCP's slow start): one more each time a
   * CPU copy wins, half as many each time the GPU wins a task a CPU worker took. A CPU task timed
   * alone is no guide to many at once (10 GB group-by in 256 MB partitions, one H200 + 16 cores:
   * 1.64 s alone; the 15 that then started together had not finished 4.1 s later, the GPU won
   * every one, and the run took 6.8 s against 4.75 s on the GPU alone).
   */
  private cpuWorthIt(): boolean {
    const { cpu: c } = this.taskMs;
    const g = this.taskMs.gpu ?? this.longestGpuRunMs();
    if (this.gpu?.size === 0) return true;
    if (!this.gpu || g === null || c === null) return this.cpuOnGpuTasks === 0;
    if (this.cpuOnGpuTasks >= this.cpuShare) return false;
    const queued = this.queue.reduce((n, j) => n + (j.prefersGpu ? 1 : 0), 0);
    return (queued / Math.max(1, concurrencyOf(this.gpu))) * g > c;
  }

  /** Whether a job running on a GPU worker alone has taken longer than a CPU worker takes for such a task (always, before one was timed). */
  private lateOnGpu(job: Job): boolean {
    const c = this.taskMs.cpu;
    return c === null || performance.now() - job.startedAt > c;
  }

  /** Pumps again when the first GPU job a CPU worker could back up becomes late (no task may end before then). */
  private pumpWhenLate(): void {
    const c = this.taskMs.cpu;
    const first = oldestStart(this.onGpuAlone.filter((j) => this.cpuMayRun(j) && !j.settled));
    if (c === null || first === Infinity || this.lateTimer !== null) return;
    const at = first + c;
    this.lateTimer = setTimeout(() => { this.lateTimer = null; this.pump(); }, Math.max(1, at - performance.now() + 1));
    this.lateTimer.unref();
  }

  /** How long the oldest first copy still running on a GPU worker has run; null when none runs. */
  private longestGpuRunMs(): number | null {
    const first = oldestStart(this.onGpuAlone);
    return first === Infinity ? null : performance.now() - first;
  }

  private lastCpuMayRun(): number {
    for (let i = this.queue.length - 1; i >= 0; i--) if (this.cpuMayRun(this.queue[i])) return i;
    return -1;
  }

  /** GPU-only jobs wait while the GPUs open; they fall to the CPU workers only when no GPU is left. */
  private cpuMayRun(job: Job): boolean {
    return !job.gpuOnly || this.gpu?.size === 0;
  }

  private start(job: Job, onGpu: boolean): void {
    job.copies++;
    if (job.copies === 1) { job.startedAt = performance.now(); job.firstOnGpu = onGpu; }
    if (onGpu) {
      this.gpuBusy++;
      if (job.copies === 1) this.onGpuAlone.push(job);
    } else {
      this.cpuBusy++;
      if (job.copies === 1 && job.prefersGpu) this.onCpuAlone.push(job);
    }
    const runner = onGpu ? this.gpu! : this.cpu;
    const label = `${job.label}${onGpu ? ' [gpu]' : job.copies > 1 ? ' [backup]' : ''}`;
    const timed = job.copies === 1 && job.prefersGpu, began = job.startedAt;
    if (timed && !onGpu) this.cpuOnGpuTasks++;
    runner.run(job.task, label).then(
      (result) => {
        if (timed) this.recordTaskMs(onGpu ? 'gpu' : 'cpu', performance.now() - began);
        if (!job.settled) {
          if (job.prefersGpu && !job.firstOnGpu) this.cpuShare = onGpu ? Math.max(1, this.cpuShare >> 1) : this.cpuShare + 1;
          job.settled = true;
          job.resolve(result);
        }
      },
      (err: Error) => {
        job.failures++;
        // A failed copy decides only when no other copy can still succeed.
        if (job.failures === job.copies) this.settle(job, err);
      },
    ).finally(() => {
      const alone = onGpu ? this.onGpuAlone : this.onCpuAlone;
      const i = alone.indexOf(job);
      if (i >= 0) alone.splice(i, 1);
      if (onGpu) this.gpuBusy--; else this.cpuBusy--;
      if (timed && !onGpu) this.cpuOnGpuTasks--;
      this.pump();
    });
  }
}

/** When the first of `jobs` started its first copy; Infinity for none. */
function oldestStart(jobs: readonly Job[]): number {
  return jobs.reduce((t, j) => Math.min(t, j.startedAt), Infinity);
}
