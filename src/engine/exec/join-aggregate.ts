// A partial aggregate over a broadcast join's probe, run as a partial aggregate over the probe's
// left rows followed by a finish step that maps the left groups to build rows
// (ops/join/join-aggregate.ts). The left task is an ordinary partial-aggregate task, so CPU
// workers run it with the CPU aggregator and GPU workers with the GPU CSV path.

import type { PartialAggregate } from '../ops/aggregate/index.js';
import { planJoinAggregate, type JoinBuildTable } from '../ops/join/index.js';
import type { FragmentResult, OpSpec, Task } from './fragment.js';
import type { BroadcastCache } from './run-fragment.js';

export interface AggregateBelowJoin {
  /** The partial aggregate over the left rows (the ops before the probe, then leftSpec). */
  leftTask: Task;
  broadcastId: string;
  finish(left: PartialAggregate, table: JoinBuildTable): PartialAggregate;
}

/** The rewrite, or null: the task must be projections, one probe, projections, then a partial aggregate the plan covers. */
export function aggregateBelowJoin(task: Task): AggregateBelowJoin | null {
  const { fragment, terminal } = task;
  if (terminal.kind !== 'partial-aggregate') return null;
  const at = fragment.ops.findIndex((op) => op.kind === 'probe');
  if (at < 0 || !fragment.ops.every((op, i) => i === at || op.kind === 'project')) return null;
  const probe = fragment.ops[at] as Extract<OpSpec, { kind: 'probe' }>;
  const plan = planJoinAggregate(probe.spec, probe.leftSchema, probe.rightSchema, terminal.spec, terminal.inputSchema);
  if (plan === null) return null;
  const ops: OpSpec[] = [...fragment.ops.slice(0, at), { kind: 'project', columns: plan.leftInput.map((f) => f.name) }];
  return {
    leftTask: { fragment: { ...fragment, ops }, terminal: { kind: 'partial-aggregate', spec: plan.leftSpec, inputSchema: plan.leftInput } },
    broadcastId: probe.broadcastId,
    finish: plan.finish,
  };
}

/** The rewritten task's result: its left task run by `run` (a CPU or GPU worker's runner), then finished. */
export async function runAggregateBelowJoin(below: AggregateBelowJoin, cache: BroadcastCache, run: (task: Task) => Promise<FragmentResult>): Promise<FragmentResult> {
  const left = await run(below.leftTask);
  return { ...left, partial: below.finish(left.partial!, cache.get(below.broadcastId).table) };
}
