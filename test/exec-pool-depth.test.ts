// A worker pool gives a worker as many tasks of a kind at once as that kind's depth: GPU workers
// take more ML partition loads at once than other tasks; and it spreads a matrix's partitions
// evenly over the workers. Checked on a pool of stand-in children that record what they are sent
// and answer when told to.

import { EventEmitter } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { NO_SOURCE, type Task, type Terminal } from '../src/engine/exec/fragment.js';
import { WorkerProcessPool } from '../src/engine/exec/pool.js';
import { cpuProfileFlags } from '../src/engine/exec/cpu-worker-process.js';

class StandInChild extends EventEmitter {
  readonly pid = 1;
  readonly sent: { id: number; kind: string }[] = [];
  /** Every task sent, answered or not. */
  total = 0;
  send(msg: { type: string; id: number; task: Task }): boolean {
    if (msg.type === 'task') { this.sent.push({ id: msg.id, kind: msg.task.terminal.kind }); this.total++; }
    return true;
  }
  kill(): boolean { return true; }
  /** Answers the oldest task sent and not yet answered. */
  answer(): void {
    const job = this.sent.shift()!;
    this.emit('message', { type: 'result', id: job.id, result: { rows: 0, warnings: [] } });
  }
}

/** Two places a worker for most tasks, five for loads. */
class DepthPool extends WorkerProcessPool {
  readonly children: StandInChild[] = [];
  constructor(workers: number) {
    super(undefined, 2);
    for (let i = 0; i < workers; i++) this.startSlot(i);
  }
  protected override depthOf(terminal: Terminal): number { return terminal.kind === 'load-matrix' ? 5 : 2; }
  protected spawnChild(i: number): { child: ChildProcess; name: string } {
    const child = new StandInChild();
    this.children[i] = child;
    return { child: child as unknown as ChildProcess, name: `stand-in-${i}` };
  }
  protected shouldRespawn(): boolean { return false; }
  protected noWorkersLeft(): string { return 'none left'; }
}

const load: Terminal = { kind: 'load-matrix', matrixId: 'm', features: ['a'], target: null, kernels: { trainer: 'linreg' } };
const other: Terminal = { kind: 'drop-matrix', matrixId: 'm' };
const task = (terminal: Terminal): Task => ({ fragment: NO_SOURCE, terminal });

describe('worker pool depth by kind of task', () => {
  it('gives each worker up to five loads at once but two other tasks, spread evenly', async () => {
    const pool = new DepthPool(2);
    const loads = Array.from({ length: 12 }, () => pool.run(task(load), 'load'));
    await Promise.resolve();
    expect(pool.children.map((c) => c.sent.length)).toEqual([5, 5]);
    expect(pool.concurrencyFor(load)).toBe(10);
    expect(pool.concurrencyFor(other)).toBe(4);
    // Two more loads go out as two are answered; then, with every load answered, other tasks two at a time.
    pool.children[0].answer();
    pool.children[1].answer();
    await Promise.resolve();
    expect(pool.children.map((c) => c.sent.length)).toEqual([5, 5]);
    const others = Array.from({ length: 6 }, () => pool.run(task(other), 'other'));
    for (const c of pool.children) while (c.sent.some((s) => s.kind === 'load-matrix')) { c.answer(); await Promise.resolve(); }
    await Promise.all(loads);
    expect(pool.children.map((c) => c.sent.filter((s) => s.kind === 'drop-matrix').length)).toEqual([2, 2]);
    for (const c of pool.children) while (c.sent.length > 0) { c.answer(); await Promise.resolve(); }
    await Promise.all(others);
    await pool.close();
  });

  it('spreads a matrix\'s partitions evenly, however fast a worker loads (each pass waits for the one holding most)', async () => {
    const pool = new DepthPool(2);
    const loads = Array.from({ length: 26 }, () => pool.run(task(load), 'load'));
    await Promise.resolve();
    // Worker 0 answers at once, again and again; worker 1 sits on its five: worker 0 gets one more, no further.
    for (let step = 0; step < 40; step++) {
      if (pool.children[0].sent.length > 0) pool.children[0].answer();
      await Promise.resolve();
      expect(pool.children[0].total).toBeLessThanOrEqual(pool.children[1].total + 1);
    }
    expect(pool.children.map((c) => c.total)).toEqual([6, 5]);
    while (pool.children.some((c) => c.sent.length > 0)) {
      for (const c of pool.children) if (c.sent.length > 0) c.answer();
      await Promise.resolve();
    }
    await Promise.all(loads);
    expect(pool.children.map((c) => c.total)).toEqual([13, 13]);
    await pool.close();
  });
});

describe('cpuProfileFlags', () => {
  it('passes --cpu-prof flags on with their values, and nothing else', () => {
    expect(cpuProfileFlags(['--cpu-prof', '--cpu-prof-dir=/tmp/p', '--cpu-prof-interval', '200', '--expose-gc', '--max-old-space-size=100']))
      .toEqual(['--cpu-prof', '--cpu-prof-dir=/tmp/p', '--cpu-prof-interval', '200']);
    expect(cpuProfileFlags(['--cpu-prof-dir', '/tmp/p', '--cpu-prof'])).toEqual(['--cpu-prof-dir', '/tmp/p', '--cpu-prof']);
    expect(cpuProfileFlags(['--inspect'])).toEqual([]);
  });
});
