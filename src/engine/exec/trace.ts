// --trace FILE.json: a Chrome trace-event timeline (open in Perfetto or chrome://tracing) with one
// row per worker and one slice per task, and a row for the parent's own steps (starting workers,
// planning partitions).

import { writeFileSync } from 'node:fs';

interface Slice { name: string; worker: string; start: number; end: number }

export class Tracer {
  private readonly slices: Slice[] = [];
  private readonly origin = performance.now();

  record(name: string, worker: string, start: number, end: number): void {
    this.slices.push({ name, worker, start: start - this.origin, end: end - this.origin });
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
