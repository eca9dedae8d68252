// Runs tasks on a pool of worker processes (one task per worker at a time), or in the parent
// process when there are no workers. A worker that dies has its task retried on a fresh worker;
// errors raised by the task itself (bad data) are final and are not retried.

import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { deserializeError, RuntimeFailure, type SerializedError } from '../errors.js';
import type { Broadcast, FragmentResult, Task } from './fragment.js';
import { BroadcastCache, runTask } from './run-fragment.js';
import type { Tracer } from './trace.js';

export interface TaskRunner {
  readonly size: number;
  broadcast(b: Broadcast): void;
  run(task: Task, label: string): Promise<FragmentResult>;
  close(): Promise<void>;
}

/** --workers 0: everything in this process (tests, debugging, tiny inputs). */
export class InProcessRunner implements TaskRunner {
  readonly size = 1;
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
  async close(): Promise<void> {}
}

interface Pending { id: number; task: Task; label: string; attempts: number; resolve: (r: FragmentResult) => void; reject: (e: Error) => void }
interface Slot { child: ChildProcess; busy: Pending | null; startedAt: number; name: string }

const MAX_ATTEMPTS = 3;

export class ProcessPool implements TaskRunner {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private readonly broadcasts: Broadcast[] = [];
  private nextId = 0;
  private closed = false;

  constructor(readonly size: number, private readonly tracer?: Tracer) {
    for (let i = 0; i < size; i++) this.slots.push(this.spawn(i));
  }

  broadcast(b: Broadcast): void {
    this.broadcasts.push(b);
    for (const s of this.slots) s.child.send({ type: 'broadcast', broadcast: b });
  }

  run(task: Task, label: string): Promise<FragmentResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, task, label, attempts: 0, resolve, reject });
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.slots) {
      if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    }
  }

  private spawn(i: number): Slot {
    const child = fork(workerEntry(), [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const slot: Slot = { child, busy: null, startedAt: 0, name: `cpu-worker-${i}` };
    child.on('message', (msg: { type: string; id?: number; result?: FragmentResult; error?: SerializedError }) => {
      const job = slot.busy;
      if (!job || job.id !== msg.id) return;
      this.tracer?.record(job.label, slot.name, slot.startedAt, performance.now());
      slot.busy = null;
      if (msg.type === 'result') job.resolve(msg.result!);
      else job.reject(deserializeError(msg.error!));
      this.dispatch();
    });
    child.on('exit', (code, signal) => this.onExit(i, slot, code, signal));
    for (const b of this.broadcasts) child.send({ type: 'broadcast', broadcast: b });
    return slot;
  }

  private onExit(i: number, slot: Slot, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.closed || this.slots[i] !== slot) return;
    const job = slot.busy;
    slot.busy = null;
    this.slots[i] = this.spawn(i);
    if (job) {
      if (job.attempts + 1 >= MAX_ATTEMPTS) {
        job.reject(new RuntimeFailure(`worker process died ${MAX_ATTEMPTS} times running ${job.label} (last: ${signal ?? `exit code ${code}`}); giving up`));
      } else {
        job.attempts++;
        this.queue.unshift(job);
      }
    }
    this.dispatch();
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (this.queue.length === 0) return;
      if (slot.busy) continue;
      const job = this.queue.shift()!;
      slot.busy = job;
      slot.startedAt = performance.now();
      slot.child.send({ type: 'task', id: job.id, task: job.task });
    }
  }
}

/** The compiled worker entry; under vitest (running .ts sources) it is the built copy in dist/. */
function workerEntry(): string {
  const here = fileURLToPath(new URL('./worker-main.js', import.meta.url));
  if (existsSync(here)) return here;
  const built = here.replace(/([/\\])src([/\\])engine/, '$1dist$2engine');
  if (existsSync(built)) return built;
  throw new RuntimeFailure(`cannot find the worker entry (${here}); run \`npm run build\` first`);
}
