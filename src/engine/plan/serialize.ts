// Plans travel between pipeline stages as one line of versioned JSON on stdout.

import { UsageError } from '../errors.js';
import type { PlanNode } from './nodes.js';

export const PLAN_FORMAT_VERSION = 1;
export const PLAN_MAGIC = 'gpuframe-plan';

export interface PlanEnvelope {
  format: typeof PLAN_MAGIC;
  version: number;
  hint: string;
  plan: PlanNode;
}

export function serializePlan(plan: PlanNode): string {
  const envelope: PlanEnvelope = {
    format: PLAN_MAGIC,
    version: PLAN_FORMAT_VERSION,
    hint: 'a gpuframe plan, not rows: pipe it into another gpuframe stage, or add `--format csv` (or -o FILE) to run it',
    plan,
  };
  return JSON.stringify(envelope) + '\n';
}

/** True when the first bytes of a stream look like a serialised plan. */
export function looksLikePlan(head: Buffer): boolean {
  return head.subarray(0, 64).toString('utf8').replace(/^\s+/, '').startsWith(`{"format":"${PLAN_MAGIC}"`);
}

export function parsePlan(text: string): PlanNode {
  let envelope: PlanEnvelope;
  try {
    envelope = JSON.parse(text);
  } catch {
    throw new UsageError('stdin holds something that starts like a gpuframe plan but is not valid JSON');
  }
  if (envelope.format !== PLAN_MAGIC) throw new UsageError('stdin does not hold a gpuframe plan');
  if (envelope.version !== PLAN_FORMAT_VERSION) {
    throw new UsageError(`the plan on stdin has format version ${envelope.version}; this gpuframe reads version ${PLAN_FORMAT_VERSION}: use the same gpuframe version in every stage`);
  }
  return envelope.plan;
}
