// The hybrid runner's scheduling, with fake runners: GPU-capable tasks prefer the GPU, idle CPU
// workers take anything, a slow GPU task gets a CPU backup whose result wins, and a task fails only
// when every copy failed.

import { describe, expect, it, vi } from 'vitest';
import type { FragmentResult, Task } from '../src/engine/exec/fragment.js';
import { HybridRunner } from '../src/engine/exec/hybrid-pool.js';
import { BESIDE_GPU_NICENESS, NO_WORKERS, ProcessPool } from '../src/engine/exec/pool.js';
import { autoBlocksize, boundedForGpus } from '../src/engine/run.js';
import type { PlanNode } from '../src/engine/plan/nodes.js';
import { getPriority } from 'node:os';
import type { TaskRunner } from '../src/engine/exec/pool.js';

function task(index: number, gpu: boolean): Task {
  return {
    fragment: { index, source: { kind: 'none' }, ops: [], bytes: 0 },
    terminal: gpu ? { kind: 'partial-aggregate', spec: { keys: [], aggs: [], dropna: false }, inputSchema: [] } : { kind: 'collect' },
  };
}

/** A runner of `size` workers that answers each task after `delay(task)` ms with `who` in the warnings. */
function fake(who: string, size: number, delay: (t: Task) => number, fail = false): TaskRunner & { ran: number[]; backups: number } {
  const ran: number[] = [];
  const counts = { backups: 0 };
  return {
    size, ran,
    get backups() { return counts.backups; },
    broadcast() {},
    run(t: Task, label: string): Promise<FragmentResult> {
      ran.push(t.fragment.index);
      if (label.endsWith('[backup]')) counts.backups++;
      return new Promise((resolve, reject) => setTimeout(() => (fail ? reject(new Error(`${who} failed`)) : resolve({ rows: t.fragment.index, warnings: [who] })), delay(t)));
    },
    async runOnEach() { return [{ rows: 0, warnings: [who] }]; },
    async close() {},
  };
}

const isGpuTask = (t: Task) => t.terminal.kind === 'partial-aggregate';

describe('HybridRunner', () => {
  it('GPU-capable tasks go to the GPU first; CPU workers take the rest and back up a straggler', async () => {
    const gpu = fake('gpu', 1, () => 200);
    const cpu = fake('cpu', 2, () => 5);
    const hybrid = new HybridRunner(gpu, cpu, isGpuTask);
    const results = await Promise.all([0, 1, 2, 3].map((i) => hybrid.run(task(i, true), `t${i}`)));
    expect(results.map((r) => r.rows)).toEqual([0, 1, 2, 3]);
    expect(gpu.ran).toEqual([0]); // the GPU took the first task and was busy after that
    expect(cpu.ran.sort()).toEqual([0, 1, 2, 3]); // ...whose backup on an idle CPU worker won
    expect(results[0].warnings).toEqual(['cpu']);
  });

  it('an idle GPU backs up a task it speeds up that a slow CPU worker took (while the GPU was opening)', async () => {
    const gpu = fake('gpu', 1, () => 5);
    const cpu = fake('cpu', 2, () => 300);
    const hybrid = new HybridRunner({ workers: 1, tasksPerWorker: () => 1, runner: new Promise((r) => setTimeout(() => r(gpu), 30)) }, cpu, isGpuTask);
    const started = performance.now();
    const results = await Promise.all([0, 1].map((i) => hybrid.run(task(i, true), `t${i}`)));
    expect(results.map((r) => r.warnings[0])).toEqual(['gpu', 'gpu']); // the GPU ran one and backed up the other once it opened
    // One CPU worker took the last task; the other waited (nothing timed yet), then backed up the GPU's.
    expect(cpu.ran[0]).toBe(1);
    expect(cpu.ran.length - cpu.backups).toBe(1);
    expect(performance.now() - started).toBeLessThan(200); // did not wait for the CPU copies
    const slowTask = await hybrid.run(task(2, false), 'c'); // not one the GPU speeds up: no GPU copy
    expect(slowTask.warnings).toEqual(['cpu']);
    expect([...gpu.ran].sort()).toEqual([0, 1]);
  });

  it('once both kinds have timed a task, CPU workers take GPU tasks only while the GPU backlog outlasts a CPU task', async () => {
    // Fake time: the bounds below follow from the task times, which a loaded machine (CI runs test
    // files side by side) stretched on real timers, so that CPU workers rightly took more tasks.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const gpu = fake('gpu', 1, () => 10);
    const cpu = fake('cpu', 2, () => 100);
    const hybrid = new HybridRunner(gpu, cpu, isGpuTask);
    const pending = Promise.all(Array.from({ length: 40 }, (_, i) => hybrid.run(task(i, true), `t${i}`)));
    await vi.runAllTimersAsync();
    const results = await pending;
    vi.useRealTimers();
    expect(results.map((r) => r.rows)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    // At 0 ms one CPU worker takes the last task (nothing timed yet: one times the CPU side); at
    // 100 ms the GPU's backlog (~30 tasks of 10 ms) outlasts a 100 ms CPU task, so both take one;
    // at ~200 ms (~10 left) they may take two more; at ~300 ms nothing is left for them.
    expect(cpu.ran.length - cpu.backups).toBeLessThanOrEqual(5);
    expect(cpu.ran[0]).toBe(39);
    expect(gpu.ran.length).toBeGreaterThanOrEqual(34);
  });

  it('before any GPU task has finished, a long-running one counts as the GPU\'s time: all CPU workers share a slow GPU\'s work', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    // A group per id: each chunk costs the GPU worker 10× what it costs a CPU worker.
    const gpu = fake('gpu', 1, () => 1000);
    const cpu = fake('cpu', 4, () => 100);
    const hybrid = new HybridRunner(gpu, cpu, isGpuTask);
    const pending = Promise.all(Array.from({ length: 40 }, (_, i) => hybrid.run(task(i, true), `t${i}`)));
    await vi.advanceTimersByTimeAsync(999); // the GPU's first task is still running
    const byThen = cpu.ran.length;
    await vi.runAllTimersAsync();
    const results = await pending;
    vi.useRealTimers();
    expect(results.map((r) => r.rows)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    // One CPU worker times the CPU side (0–100 ms); from then on the GPU's first task has run 100 ms
    // with 39 tasks queued behind it, so all four take tasks: ~4 per 100 ms. Waiting for the GPU's
    // first result would have left three of them idle for its whole second: 10 tasks by then.
    expect(byThen).toBeGreaterThanOrEqual(30);
    expect(gpu.ran[0]).toBe(0);
  });

  it('CPU workers do not back up GPU tasks that have run less than a CPU task takes: the next stage finds them free', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    // 256 MB partitions: 0.45 s on the GPU, 2.3 s on a CPU worker; then a task of the next stage.
    const gpu = fake('gpu', 1, () => 450);
    const cpu = fake('cpu', 2, (t) => (isGpuTask(t) ? 2300 : 100));
    const hybrid = new HybridRunner(gpu, cpu, isGpuTask);
    const stage = Promise.all(Array.from({ length: 10 }, (_, i) => hybrid.run(task(i, true), `t${i}`)));
    let stageDone = 0, nextDone = 0;
    const next = stage.then(() => { stageDone = performance.now(); return hybrid.run(task(99, false), 'next'); }).then(() => { nextDone = performance.now(); });
    await vi.runAllTimersAsync();
    await next;
    vi.useRealTimers();
    expect(cpu.backups).toBe(0);
    // The next stage's task starts on a free CPU worker at once (backups of the GPU's last tasks
    // would have held both workers until 2.3 s after they started).
    expect(nextDone - stageDone).toBe(100);
  });

  it('CPU workers join GPU tasks gradually: a CPU task timed alone does not say how long many take at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    // 10 GB group-by in 256 MB partitions on one H200 + 16 cores: 130 ms a task on the GPU; 1.64 s on
    // a CPU worker alone, and a quarter of that more for each other CPU task running beside it.
    const gpu = fake('gpu', 1, () => 130);
    let running = 0;
    const won: string[] = [];
    let cpuCopies = 0;
    const cpu: TaskRunner = {
      size: 15,
      broadcast() {},
      run(t: Task): Promise<FragmentResult> {
        cpuCopies++;
        running++;
        const ms = 1640 * (1 + 0.25 * (running - 1));
        return new Promise((resolve) => setTimeout(() => { running--; resolve({ rows: t.fragment.index, warnings: ['cpu'] }); }, ms));
      },
      async runOnEach() { return []; },
      async close() {},
    };
    const hybrid = new HybridRunner(gpu, cpu, isGpuTask);
    let stageDone = 0;
    const pending = Promise.all(Array.from({ length: 37 }, (_, i) => hybrid.run(task(i, true), `t${i}`).then((r) => { won.push(r.warnings[0]); return r; })))
      .then((r) => { stageDone = performance.now(); return r; });
    await vi.runAllTimersAsync();
    const results = await pending;
    vi.useRealTimers();
    expect(results.map((r) => r.rows)).toEqual(Array.from({ length: 37 }, (_, i) => i));
    // At 1.64 s the GPU's backlog (~24 tasks, 3.1 s) would outlast twelve CPU tasks timed alone;
    // started together, each would take 6.2 s and the GPU would win them all. Joining one more at a
    // time, the CPU workers take only what they finish first.
    const cpuWins = won.filter((w) => w === 'cpu').length;
    expect(cpuCopies - cpuWins).toBeLessThanOrEqual(1);
    expect(cpuWins).toBeGreaterThanOrEqual(2);
    expect(stageDone).toBeLessThan(37 * 130);
  });

  it('a GPU task that runs longer than a CPU task takes is backed up, even when no other task ends meanwhile', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const gpu = fake('gpu', 1, () => 10_000); // a device that hangs
    const cpu = fake('cpu', 1, () => 300);
    const hybrid = new HybridRunner(gpu, cpu, isGpuTask);
    let settledAt = 0;
    const pending = Promise.all([0, 1].map((i) => hybrid.run(task(i, true), `t${i}`))).then((r) => { settledAt = performance.now(); return r; });
    await vi.runAllTimersAsync();
    const results = await pending;
    vi.useRealTimers();
    // The CPU worker times the CPU side on t1 (300 ms); t0 has then run 300 ms on the GPU, late
    // from 301 ms on: its CPU copy starts then, by a timer, and wins at ~600 ms.
    expect(results.map((r) => r.warnings[0])).toEqual(['cpu', 'cpu']);
    expect(cpu.backups).toBe(1);
    expect(settledAt).toBeGreaterThan(600);
    expect(settledAt).toBeLessThan(700);
  });

  it('idle CPU workers back up GPU tasks only once nothing is queued for the GPUs', async () => {
    const gpu = fake('gpu', 1, () => 20);
    const cpu = fake('cpu', 2, () => 200);
    const hybrid = new HybridRunner(gpu, cpu, isGpuTask);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => hybrid.run(task(i, true), `t${i}`)));
    expect(results.map((r) => r.rows)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    // One CPU worker times a task (the last); the other waits while the GPU works through the
    // queue, then backs up what the GPU holds at the end (not the GPU's first tasks).
    expect(cpu.ran[0]).toBe(9);
    expect(cpu.ran.slice(1).every((i) => i >= 7)).toBe(true);
    expect(cpu.backups).toBeLessThanOrEqual(2);
  });

  it('a fast GPU keeps its result; CPU-only tasks never go to the GPU', async () => {
    const gpu = fake('gpu', 1, () => 1);
    const cpu = fake('cpu', 1, () => 50);
    const hybrid = new HybridRunner(gpu, cpu, isGpuTask);
    const [a, b] = await Promise.all([hybrid.run(task(0, true), 'a'), hybrid.run(task(1, false), 'b')]);
    expect(a.warnings).toEqual(['gpu']);
    expect(b.warnings).toEqual(['cpu']);
    expect(gpu.ran).toEqual([0]);
  });

  it('fails only when every copy failed', async () => {
    const gpu = fake('gpu', 1, () => 1, true);
    const cpu = fake('cpu', 1, () => 20, true);
    const hybrid = new HybridRunner(gpu, cpu, isGpuTask);
    await expect(hybrid.run(task(0, true), 'x')).rejects.toThrow(/failed/);
    const gpuFails = fake('gpu', 1, () => 30, true);
    const cpuWorks = fake('cpu', 1, () => 60);
    const backedUp = new HybridRunner(gpuFails, cpuWorks, isGpuTask);
    // The CPU backup starts at once (idle CPU, empty queue) and succeeds after the GPU copy failed.
    expect((await backedUp.run(task(0, true), 'y')).warnings).toEqual(['cpu']);
  });

  it('GPU-only tasks (ML training data) never run on CPU workers, not even as backups of a slow GPU', async () => {
    const load = (index: number): Task => ({
      fragment: { index, source: { kind: 'none' }, ops: [], bytes: 0 },
      terminal: { kind: 'load-matrix', matrixId: 'm', features: ['a'], target: null, kernels: null },
    });
    const gpu = fake('gpu', 1, () => 30);
    const cpu = fake('cpu', 2, () => 1);
    const hybrid = new HybridRunner(gpu, cpu, isGpuTask, (t) => t.terminal.kind === 'load-matrix');
    const results = await Promise.all([hybrid.run(load(0), 'l0'), hybrid.run(task(1, false), 'c'), hybrid.run(load(2), 'l2')]);
    expect(results.map((r) => r.warnings[0])).toEqual(['gpu', 'cpu', 'gpu']);
    expect(gpu.ran).toEqual([0, 2]);
    expect(cpu.ran).toEqual([1]); // idle CPU workers neither took the loads nor backed them up
  });

  describe('while the GPU workers open', () => {
    const load = (index: number): Task => ({
      fragment: { index, source: { kind: 'none' }, ops: [], bytes: 0 },
      terminal: { kind: 'load-matrix', matrixId: 'm', features: ['a'], target: null, kernels: { trainer: 'linreg' } },
    });
    const isLoad = (t: Task) => t.terminal.kind === 'load-matrix';
    const later = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

    it('CPU workers start at once, GPU-only tasks wait for the GPUs, GPU-preferring tasks go to them once open', async () => {
      const gpu = fake('gpu', 1, () => 1);
      const cpu = fake('cpu', 1, () => 5);
      const hybrid = new HybridRunner({ workers: 1, tasksPerWorker: () => 2, runner: later(200, gpu) }, cpu, isGpuTask, isLoad);
      expect(hybrid.gpuWorkers).toBe(1); // expected before the GPU opens
      expect(hybrid.concurrency).toBe(2 + 1);
      expect(hybrid.size).toBe(2);
      const started = performance.now();
      const first = await hybrid.run(task(0, false), 'c0');
      expect(first.warnings).toEqual(['cpu']);
      expect(performance.now() - started).toBeLessThan(100); // did not wait for the GPU
      // Asked while the GPU opens, only the CPU workers answer (the GPU worker holds nothing yet).
      expect((await hybrid.runOnEach(task(9, false), 'each')).map((r) => r.warnings[0])).toEqual(['cpu']);
      expect(performance.now() - started).toBeLessThan(100);
      expect((await hybrid.run(load(1), 'l1')).warnings).toEqual(['gpu']);
      expect(cpu.ran).toEqual([0]); // the GPU-only load waited for the GPU
      await later(1, null); // the load's slot is given back after its result
      expect((await hybrid.run(task(2, true), 'g2')).warnings).toEqual(['gpu']);
      expect(hybrid.gpuWorkers).toBe(1);
      expect(hybrid.concurrency).toBe(1 + 1);
      expect((await hybrid.runOnEach(task(9, false), 'each')).map((r) => r.warnings[0])).toEqual(['gpu', 'cpu']);
      await hybrid.close();
    });

    it('while the GPUs open, the tasks of a kind it may queue count each GPU worker\'s depth for that kind', async () => {
      const loadTerminal: Task['terminal'] = { kind: 'load-matrix', matrixId: 'm', features: ['a'], target: null, kernels: { trainer: 'linreg' } };
      const depth = (t?: Task['terminal']) => (t?.kind === 'load-matrix' ? 9 : 3);
      const hybrid = new HybridRunner({ workers: 2, tasksPerWorker: depth, runner: later(20, null) }, NO_WORKERS, isGpuTask, isLoad);
      expect(hybrid.concurrency).toBe(6);
      expect(hybrid.concurrencyFor(loadTerminal)).toBe(18);
      expect(hybrid.concurrencyFor({ kind: 'collect' })).toBe(6);
      await hybrid.close();
    });

    it('when no GPU opens (--device auto), GPU-only tasks run on the CPU workers', async () => {
      const cpu = fake('cpu', 1, () => 1);
      const hybrid = new HybridRunner({ workers: 2, tasksPerWorker: () => 2, runner: later(20, null) }, cpu, isGpuTask, isLoad);
      expect((await hybrid.run(load(0), 'l0')).warnings).toEqual(['cpu']);
      expect(hybrid.gpuWorkers).toBe(0);
      expect((await hybrid.runOnEach(task(1, false), 'each')).map((r) => r.warnings[0])).toEqual(['cpu']);
    });

    it('when the GPUs fail to open (--device gpu), waiting and later tasks fail with that error', async () => {
      const cpu = fake('cpu', 1, () => 1);
      const failure = new Error('--device gpu: no usable GPU: test');
      const hybrid = new HybridRunner({ workers: 1, tasksPerWorker: () => 2, runner: later(20, null).then(() => { throw failure; }) }, cpu, isGpuTask, isLoad);
      await expect(hybrid.run(load(0), 'l0')).rejects.toThrow(/no usable GPU: test/);
      await expect(hybrid.run(task(1, false), 'c1')).rejects.toThrow(/no usable GPU: test/);
      await expect(hybrid.runOnEach(task(2, false), 'each')).rejects.toThrow(/no usable GPU: test/);
      await hybrid.close();
    });
  });
});

describe('CPU workers beside GPU workers', () => {
  const loadTask: Task = {
    fragment: { index: 0, source: { kind: 'batch', batch: { schema: [{ name: 'a', type: 'float64' }], length: 1, columns: [{ type: 'float64', values: Float64Array.of(1), valid: null }] } }, ops: [], bytes: 0 },
    terminal: { kind: 'load-matrix', matrixId: 'nice', features: ['a'], target: null, kernels: null },
  };
  it('run at a lower priority (the GPU workers keep their cores); alone, at the usual one', async () => {
    for (const [besideGpus, niceness] of [[true, BESIDE_GPU_NICENESS], [false, getPriority()]] as const) {
      const pool = new ProcessPool(2, undefined, Infinity, besideGpus);
      const held = await pool.runOnEach(loadTask, 'load');
      expect(held.length).toBe(2);
      for (const r of held) expect(getPriority(r.holder!)).toBe(niceness);
      await pool.close();
    }
  });
});

describe('partition size for GPU workers alone', () => {
  const planOf = (bytes: number) => ({ kind: 'scan', files: [{ path: 'x.csv', displayName: 'x.csv', bytes }] }) as unknown as PlanNode;
  const GB = 1 << 30, MB = 1 << 20;

  it('GPU workers alone take up to 256 MB; with CPU workers, 64 MB; small inputs still give four per worker', () => {
    const gpu = fake('gpu', 2, () => 1);
    const alone = new HybridRunner(gpu, NO_WORKERS, isGpuTask);
    const beside = new HybridRunner(gpu, fake('cpu', 32, () => 1), isGpuTask);
    expect(alone.gpuWorkersOnly).toBe(true);
    expect(beside.gpuWorkersOnly).toBe(false);
    expect(autoBlocksize(planOf(10 * GB), alone.size, 64 * GB, alone.gpuWorkersOnly)).toBe(256 * MB);
    expect(autoBlocksize(planOf(10 * GB), beside.size, 64 * GB, beside.gpuWorkersOnly)).toBe(64 * MB);
    expect(autoBlocksize(planOf(512 * MB), alone.size, 64 * GB, true)).toBe(64 * MB);
  });

  it('with GPU workers, a --blocksize past what a GPU binding holds comes down to 512 MB; without, it stays', () => {
    expect(boundedForGpus(GB, 1)).toBe(512 * MB);
    expect(boundedForGpus(256 * MB, 2)).toBe(256 * MB);
    expect(boundedForGpus(GB, 0)).toBe(GB);
  });
});
