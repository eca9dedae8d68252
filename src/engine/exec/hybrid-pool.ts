// GPU workers and CPU workers behind one queue. An idle GPU worker takes the next task the GPU
// speeds up; an idle CPU worker takes whatever is next (work stealing), so on a machine with many
// cores and few GPUs neither kind waits for the other. A task's result is the same wherever it
// runs (GPU partial states are converted into the CPU's), so output bytes do not change.

import type { FragmentResult, Broadcast, Task } from './fragment.js';
import type { TaskRunner } from './pool.js';

interface Queued { task: Task; label: string; resolve: (r: FragmentResult) => void; reject: (e: Error) => void }

export class HybridRunner implements TaskRunner {
  private readonly queue: Queued[] = [];
  private gpuBusy = 0;
  private cpuBusy = 0;

  constructor(private readonly gpu: TaskRunner, private readonly cpu: TaskRunner, private readonly gpuSpeedsUp: (task: Task) => boolean) {}

  get size(): number {
    return this.gpu.size + this.cpu.size;
  }

  broadcast(b: Broadcast): void {
    this.gpu.broadcast(b);
    this.cpu.broadcast(b);
  }

  run(task: Task, label: string): Promise<FragmentResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ task, label, resolve, reject });
      this.pump();
    });
  }

  async runOnEach(task: Task, label: string): Promise<FragmentResult[]> {
    const [g, c] = await Promise.all([this.gpu.runOnEach(task, label), this.cpu.runOnEach(task, label)]);
    return [...g, ...c];
  }

  async close(): Promise<void> {
    await Promise.all([this.gpu.close(), this.cpu.close()]);
  }

  private pump(): void {
    for (;;) {
      let at = -1;
      let onGpu = false;
      if (this.gpuBusy < this.gpu.size) {
        at = this.queue.findIndex((q) => this.gpuSpeedsUp(q.task));
        onGpu = at >= 0;
      }
      if (at < 0 && this.cpuBusy < this.cpu.size && this.queue.length > 0) at = 0;
      if (at < 0) return;
      const job = this.queue.splice(at, 1)[0];
      const runner = onGpu ? this.gpu : this.cpu;
      if (onGpu) this.gpuBusy++; else this.cpuBusy++;
      runner.run(job.task, `${job.label}${onGpu ? ' [gpu]' : ''}`).then(job.resolve, job.reject).finally(() => {
        if (onGpu) this.gpuBusy--; else this.cpuBusy--;
        this.pump();
      });
    }
  }
}
