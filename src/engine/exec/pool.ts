// Runs tasks on a pool of worker processes (one task per worker at a time), or in the parent
// process when there are no workers. A worker that dies has its task retried on another worker;
// errors raised by the task itself (bad data) are final and are not retried.
// WorkerProcessPool holds the queue, dispatch and retry logic; ProcessPool (CPU workers, here) and
// GpuProcessPool (one worker per GPU, gpu-pool.ts) say how to start a worker and what a death means.

import type { ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { deserializeError, RuntimeFailure, type SerializedError } from '../errors.js';
import type { Broadcast, FragmentResult, Task, Terminal } from './fragment.js';
import { BroadcastCache, runTask } from './run-fragment.js';
import { messageFile, receiveMessage, sendMessage } from './messages.js';
import type { Tracer } from './trace.js';
import { cpuProfileFlags, cpuWorkerFor, cpuWorkerMemoryShare } from './cpu-worker-process.js';
import { holdChild } from './worker-entry.js';

export interface TaskRunner {
  /** Workers. */
  readonly size: number;
  /** Whether tasks run in this process (results then need no copying between processes). */
  readonly inProcess?: boolean;
  /** Tasks it runs at once (default: size). */
  readonly concurrency?: number;
  /** GPU worker processes (0 or absent: none). */
  readonly gpuWorkers?: number;
  /** Whether GPU workers alone run its tasks (GPUs with --workers 0): they take larger partitions. */
  readonly gpuWorkersOnly?: boolean;
  /** Whether GPU workers with CPU workers beside them would take a task like this (its inputs may come in larger partitions). */
  prefersGpu?(task: Task): boolean;
  /** Tasks ending in `terminal` it runs at once, where that differs by kind (GPU workers load more ML partitions at once than they run other tasks). */
  concurrencyFor?(terminal: Terminal): number;
  broadcast(b: Broadcast): void;
  /** Where large messages to and from its workers go from now on (the run's temp dir; messages.ts). */
  useMessageDir?(dir: string): void;
  run(task: Task, label: string): Promise<FragmentResult>;
  /** Runs `task` once on every live worker (for data resident in workers); a worker lost meanwhile rejects with WorkerLost. */
  runOnEach(task: Task, label: string): Promise<FragmentResult[]>;
  close(): Promise<void>;
}

/** Tasks `runner` runs at once (tasks ending in `terminal`, when given). */
export function concurrencyOf(runner: TaskRunner, terminal?: Terminal): number {
  if (terminal && runner.concurrencyFor) return runner.concurrencyFor(terminal);
  return runner.concurrency ?? runner.size;
}

/** No workers at all: the side of a HybridRunner that has none (no GPU opened; GPU workers only). */
export const NO_WORKERS: TaskRunner = {
  size: 0,
  broadcast() {},
  run: () => Promise.reject(new Error('no workers')),
  runOnEach: async () => [],
  close: async () => {},
};

/** A task pinned to one worker could not finish there because the worker is gone (with whatever it held). */
export class WorkerLost extends RuntimeFailure {}

/** --workers 0: everything in this process (tests, debugging, tiny inputs). */
export class InProcessRunner implements TaskRunner {
  readonly size = 1;
  readonly inProcess = true;
  private readonly cache = new BroadcastCache();
  constructor(private readonly tracer?: Tracer) {}
  broadcast(b: Broadcast): void { this.cache.add(b); }
  async run(task: Task, label: string): Promise<FragmentResult> {
    const start = performance.now();
    try {
      return await runTask(task, this.cache);
    } finally {
      this.tracer?.record(label, 'parent', start, performance.now());
    }
  }
  async runOnEach(task: Task, label: string): Promise<FragmentResult[]> {
    return [await this.run(task, label)];
  }
  async close(): Promise<void> {}
}

export interface PendingTask { id: number; task: Task; label: string; attempts: number; lastSlot: number; pinnedSlot?: number; startedAt?: number; resolve: (r: FragmentResult) => void; reject: (e: Error) => void }
/** A worker process and the tasks it is running (at most the pool's tasksPerWorker). */
export interface WorkerSlot { child: ChildProcess; running: PendingTask[]; name: string; retired: boolean }
/** A message from a worker: result/error answer task `id`; other types go to onWorkerMessage. */
export interface WorkerMessage { type: string; id?: number; result?: FragmentResult; error?: SerializedError; [key: string]: unknown }

export const MAX_ATTEMPTS = 3;

/** A task's way there and back (a worker that times its tasks, GPUFRAME_GPU_PHASES=1, sends when it got and answered it). */
function reportMessageLatency(job: PendingTask, received: number, sent: number): void {
  const start = performance.timeOrigin + job.startedAt!, end = performance.timeOrigin + performance.now();
  process.stderr.write(`${job.label}: to the worker ${(received - start).toFixed(2)} ms, in the worker ${(sent - received).toFixed(2)} ms, back ${(end - sent).toFixed(2)} ms\n`);
}

/** Under --cpu-prof the CPU workers profile themselves too (cpu-worker-process.ts), and must exit by themselves to write it. */
const PROFILING = cpuProfileFlags(process.execArgv).length > 0;

export abstract class WorkerProcessPool implements TaskRunner {
  protected readonly slots: WorkerSlot[] = [];
  private readonly queue: PendingTask[] = [];
  /** Each broadcast as sent to a worker: the message, or the file holding it (messages.ts), for workers started later too. */
  private readonly broadcasts: object[] = [];
  /** Where large messages go (useMessageDir); null: all over the channel. */
  private messageDir: string | null = null;
  /** Partitions of each resident matrix given to each worker (load-matrix tasks), by matrix id. */
  private readonly loadsGiven = new Map<string, number[]>();
  private nextId = 0;
  protected closed = false;

  /**
   * Tasks a worker is given at once. More than one lets a worker overlap one task's host work
   * (reading, uploading) with another's waits (GPU workers); results are matched by task id.
   */
  protected constructor(protected readonly tracer?: Tracer, readonly tasksPerWorker = 1) {}

  /** Tasks ending in `terminal` a worker is given at once (tasksPerWorker unless a pool says otherwise). */
  protected depthOf(_terminal: Terminal): number {
    return this.tasksPerWorker;
  }

  concurrencyFor(terminal: Terminal): number {
    return this.size * this.depthOf(terminal);
  }

  /** Workers alive (retired ones do not count). */
  get size(): number {
    return Math.max(1, this.slots.filter((s) => !s.retired).length);
  }

  get concurrency(): number {
    return this.size * this.tasksPerWorker;
  }

  /** Starts the process of worker slot i. */
  protected abstract spawnChild(i: number): { child: ChildProcess; name: string };

  /** After worker i died: true starts a fresh process in its place, false retires the slot. */
  protected abstract shouldRespawn(i: number, code: number | null, signal: NodeJS.Signals | null): boolean;

  /** Why the run cannot go on once every slot is retired. */
  protected abstract noWorkersLeft(): string;

  /** Messages other than result/error (e.g. a GPU worker's ready report). */
  protected onWorkerMessage(_slot: WorkerSlot, _msg: WorkerMessage): void {}

  broadcast(b: Broadcast): void {
    const msg = { type: 'broadcast', broadcast: b };
    const sent = messageFile(msg, this.messageDir, true) ?? msg; // one file that every worker reads
    this.broadcasts.push(sent);
    for (const s of this.slots) if (!s.retired) s.child.send(sent);
  }

  useMessageDir(dir: string): void {
    this.messageDir = dir;
    for (const s of this.slots) if (!s.retired) s.child.send({ type: 'message-dir', dir });
  }

  run(task: Task, label: string): Promise<FragmentResult> {
    return new Promise((resolve, reject) => {
      if (this.slots.every((s) => s.retired)) return reject(new RuntimeFailure(this.noWorkersLeft()));
      this.queue.push({ id: this.nextId++, task, label, attempts: 0, lastSlot: -1, resolve, reject });
      this.dispatch();
    });
  }

  runOnEach(task: Task, label: string): Promise<FragmentResult[]> {
    const live = this.slots.map((s, i) => (s.retired ? -1 : i)).filter((i) => i >= 0);
    if (live.length === 0) return Promise.reject(new RuntimeFailure(this.noWorkersLeft()));
    return Promise.all(live.map((slot) => new Promise<FragmentResult>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, task, label, attempts: 0, lastSlot: -1, pinnedSlot: slot, resolve, reject });
      this.dispatch();
    })));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.slots) {
      if (s.child.exitCode !== null || s.child.signalCode !== null) continue;
      // Under --cpu-prof (passed on to the workers) a worker must exit by itself to write its
      // profile: it does on disconnect, and is killed only if it has not within a second.
      if (PROFILING && s.child.connected) {
        s.child.disconnect();
        setTimeout(() => { if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL'); }, 1000).unref();
      } else {
        s.child.kill('SIGKILL');
        // A killed GPU worker takes ~0.1-0.2 s to die (the driver tears its device down); this
        // process need not wait for that before exiting.
        holdChild(s.child, false);
      }
    }
  }

  /** Starts slot i's worker (replacing a dead one) and wires its messages and exit. */
  protected startSlot(i: number): WorkerSlot {
    const { child, name } = this.spawnChild(i);
    const slot: WorkerSlot = { child, running: [], name, retired: false };
    this.slots[i] = slot;
    child.on('message', (received: WorkerMessage) => {
      if (this.closed) return; // a late result (its file may be gone with the run's temp dir)
      let msg: WorkerMessage;
      try {
        msg = receiveMessage(received);
      } catch (err) {
        // Which task a result file held is inside it: every task of this worker fails.
        const why = new RuntimeFailure(`could not read a result of ${slot.name}: ${err instanceof Error ? err.message : String(err)}`);
        for (const job of slot.running.splice(0)) job.reject(why);
        return;
      }
      if (msg.type !== 'result' && msg.type !== 'error') return this.onWorkerMessage(slot, msg);
      const at = slot.running.findIndex((j) => j.id === msg.id);
      if (at < 0) return;
      const job = slot.running.splice(at, 1)[0];
      this.tracer?.record(job.label, slot.name, job.startedAt!, performance.now());
      if (typeof msg.received === 'number' && typeof msg.sent === 'number') reportMessageLatency(job, msg.received, msg.sent);
      if (msg.type === 'result') job.resolve(msg.result!);
      else job.reject(deserializeError(msg.error!));
      this.dispatch();
    });
    child.on('exit', (code, signal) => this.onExit(i, slot, code, signal));
    // A send to a worker that just died fails with EPIPE: its 'exit' (above) handles the death.
    // Without a listener that 'error' event would crash the parent. A worker that never started
    // is still fatal, as before.
    child.on('error', (err) => { if (child.pid === undefined) throw err; });
    if (this.messageDir !== null) child.send({ type: 'message-dir', dir: this.messageDir });
    for (const b of this.broadcasts) child.send(b);
    return slot;
  }

  /** Takes slot i out of service (its process is killed; its task, if any, is retried elsewhere). */
  protected retire(i: number): void {
    const slot = this.slots[i];
    if (!slot || slot.retired) return;
    slot.retired = true;
    const jobs = slot.running.splice(0);
    if (slot.child.exitCode === null && slot.child.signalCode === null) slot.child.kill('SIGKILL');
    this.dropPinned(i, 'retired');
    for (const job of jobs) this.requeue(job, i, 'retired');
    this.afterLoss();
  }

  private onExit(i: number, slot: WorkerSlot, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.closed || this.slots[i] !== slot || slot.retired) return;
    const jobs = slot.running.splice(0);
    if (this.shouldRespawn(i, code, signal)) this.startSlot(i);
    else slot.retired = true;
    this.dropPinned(i, signal ?? `exit code ${code}`);
    for (const job of jobs) this.requeue(job, i, signal ?? `exit code ${code}`);
    this.afterLoss();
  }

  /** Jobs pinned to worker i can never run once it died: what they needed died with it. */
  private dropPinned(slot: number, how: string): void {
    for (const queued of this.queue.filter((q) => q.pinnedSlot === slot)) {
      this.queue.splice(this.queue.indexOf(queued), 1);
      queued.reject(new WorkerLost(`worker ${this.slots[slot].name} is gone (${how})`));
    }
  }

  /** A job whose worker died: retried elsewhere (bounded), unless it was pinned to that worker. */
  private requeue(job: PendingTask, slot: number, how: string): void {
    if (job.pinnedSlot !== undefined) {
      job.reject(new WorkerLost(`worker ${this.slots[slot].name} died running ${job.label} (${how})`));
    } else if (job.attempts + 1 >= MAX_ATTEMPTS) {
      job.reject(new RuntimeFailure(`worker process died ${MAX_ATTEMPTS} times running ${job.label} (last: ${how}); giving up`));
    } else {
      job.attempts++;
      job.lastSlot = slot;
      this.queue.unshift(job);
    }
  }

  /** Fails everything still queued when no worker is left; otherwise hands out the queue. */
  private afterLoss(): void {
    if (this.slots.every((s) => s.retired)) {
      const why = this.noWorkersLeft();
      for (const job of this.queue.splice(0)) job.reject(new RuntimeFailure(why));
      return;
    }
    this.dispatch();
  }

  /**
   * Whether worker i may take `job`: a partition of a resident matrix only while i holds no more of
   * that matrix than any other live worker. Partitions stay where they are loaded and every pass
   * over them waits for the worker holding the most, so they are spread evenly, not to whichever
   * worker loads fastest (26 partitions on two H200s went 17 and 9).
   */
  private loadKeepsBalance(job: PendingTask, i: number): boolean {
    const { terminal } = job.task;
    if (terminal.kind !== 'load-matrix') return true;
    const given = this.loadsGiven.get(terminal.matrixId) ?? [];
    return this.slots.every((s, j) => j === i || s.retired || (given[i] ?? 0) <= (given[j] ?? 0));
  }

  /** Idle workers pull from the shared queue; a retried task avoids the worker it died on when another is idle. */
  private dispatch(): void {
    if (this.closed) return; // the run is over (finished, failed or interrupted): start nothing new
    // Fill every worker's first place before any worker gets a second task; a task goes to a worker
    // running fewer tasks than its kind's depth.
    const deepest = Math.max(this.tasksPerWorker, ...this.queue.map((job) => this.depthOf(job.task.terminal)));
    for (let depth = 1; depth <= deepest; depth++) this.dispatchUpTo(depth);
  }

  private dispatchUpTo(depth: number): void {
    for (let i = 0; i < this.slots.length && this.queue.length > 0; i++) {
      const slot = this.slots[i];
      if (slot.running.length >= depth || slot.retired) continue;
      const othersAlive = this.slots.some((s, j) => j !== i && !s.retired);
      const mayRun = (job: PendingTask) => (job.pinnedSlot === undefined || job.pinnedSlot === i) && this.depthOf(job.task.terminal) >= depth && this.loadKeepsBalance(job, i);
      let at = this.queue.findIndex((job) => mayRun(job) && (job.lastSlot !== i || !othersAlive));
      if (at < 0) at = this.queue.findIndex(mayRun);
      if (at < 0) continue;
      const job = this.queue.splice(at, 1)[0];
      const { terminal } = job.task;
      if (terminal.kind === 'load-matrix') {
        const given = this.loadsGiven.get(terminal.matrixId) ?? [];
        given[i] = (given[i] ?? 0) + 1;
        this.loadsGiven.set(terminal.matrixId, given);
      } else if (terminal.kind === 'drop-matrix') {
        this.loadsGiven.delete(terminal.matrixId);
      }
      slot.running.push(job);
      job.startedAt = performance.now();
      try {
        sendMessage(slot.child, { type: 'task', id: job.id, task: job.task }, this.messageDir);
      } catch (err) {
        // Writing the task's message file failed (a full disk): the task fails, not the process.
        slot.running.pop();
        job.reject(new RuntimeFailure(`could not send a task to ${slot.name}: ${err instanceof Error ? err.message : String(err)}`));
      }
    }
  }
}

/**
 * The niceness of CPU workers that run beside GPU workers: a GPU worker's main thread feeds its
 * device and bounds its speed (a 10 GB group-by's GPU worker was busy 2.2 of 2.3 s), so CPU
 * workers parsing CSV on every core must not take its core.
 */
export const BESIDE_GPU_NICENESS = 10;

/** CPU workers: `size` processes, each replaced by a fresh one when it dies. */
export class ProcessPool extends WorkerProcessPool {
  /**
   * `memoryLimit`: the run's --memory-limit; each worker keeps its share (see worker-main.ts).
   * `besideGpus`: the workers run at BESIDE_GPU_NICENESS.
   */
  constructor(private readonly count: number, tracer?: Tracer, private readonly memoryLimit = Infinity, private readonly besideGpus = false) {
    super(tracer);
    for (let i = 0; i < count; i++) this.startSlot(i);
  }

  protected spawnChild(i: number): { child: ChildProcess; name: string } {
    // --expose-gc and a share of the memory limit: a worker over its share collects after a task,
    // so finished partitions are given back at once instead of piling up (see worker-main.ts).
    // One started early (bin/run.js) with the same share if there is one.
    const child = cpuWorkerFor(cpuWorkerMemoryShare(this.count, this.memoryLimit));
    if (this.besideGpus && child.pid !== undefined) {
      try { setPriority(child.pid, BESIDE_GPU_NICENESS); } catch { /* not allowed here: they run at the usual priority */ }
    }
    return { child, name: `cpu-worker-${i}` };
  }

  protected shouldRespawn(): boolean { return true; }

  protected noWorkersLeft(): string { return `all ${this.count} worker processes are gone`; }
}
