// --trace FILE.json: a Chrome trace-event timeline (open in Perfetto or chrome://tracing) with one
// row per worker and one slice per task, and a row for the parent's own steps (starting workers,
// planning partitions). Time 0 is the parent process's start, so the first slice ("start
// gpuframe") shows what Node and the CLI cost before the run; GPU workers report their own
// start-up steps (process, device, kernel compilation) in wall-clock time, placed on their rows.

import { writeFileSync } from 'node:fs';

interface Slice { name: string; worker: string; start: number; end: number }

/** A step another process timed, in wall-clock milliseconds (performance.timeOrigin + performance.now()). */
export interface WallSlice { name: string; start: number; end: number }

/** Now, in wall-clock milliseconds with performance.now()'s resolution (comparable across processes). */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Slice [from, now) in wall-clock time, where `from` is in this process's performance.now() time. */
export function wallSlice(name: string, from: number): WallSlice {
  return { name, start: performance.timeOrigin + from, end: wallNow() };
}

export class Tracer {
  private readonly slices: Slice[] = [];

  constructor() {
    this.record('start gpuframe (Node, CLI, plan)', 'parent', 0, performance.now());
  }

  /** A slice in this process's performance.now() time (0 = process start). */
  record(name: string, worker: string, start: number, end: number): void {
    this.slices.push({ name, worker, start, end });
  }

  /** Slices another process timed in wall-clock time. */
  recordWall(worker: string, slices: readonly WallSlice[]): void {
    for (const s of slices) this.record(s.name, worker, s.start - performance.timeOrigin, s.end - performance.timeOrigin);
  }

  /** Times `work` as a slice on the parent's row. */
  async span<T>(name: string, work: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      return await work();
    } finally {
      this.record(name, 'parent', start, performance.now());
    }
  }

  write(path: string): void {
    const workers = [...new Set(this.slices.map((s) => s.worker))];
    const events = [
      ...workers.map((w, tid) => ({ name: 'thread_name', ph: 'M', pid: 1, tid, args: { name: w } })),
      ...this.slices.map((s) => ({
        name: s.name, cat: 'task', ph: 'X', pid: 1, tid: workers.indexOf(s.worker),
        ts: Math.round(s.start * 1000), dur: Math.max(1, Math.round((s.end - s.start) * 1000)),
      })),
    ];
    writeFileSync(path, JSON.stringify({ traceEvents: events, displayTimeUnit: 'ms' }));
  }
}

/** `work`, timed as a parent slice when there is a tracer. */
export function traced<T>(tracer: Tracer | undefined, name: string, work: () => Promise<T>): Promise<T> {
  return tracer ? tracer.span(name, work) : work();
}
