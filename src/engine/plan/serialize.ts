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
  checkNode(envelope.plan, 'plan');
  return envelope.plan;
}

/**
 * Refuses a plan whose nodes lack what the engine reads (a hand-edited or truncated plan), naming
 * where, rather than failing somewhere inside the run. Shapes only: the stage that extends the plan
 * checks columns and types.
 */
function checkNode(node: unknown, at: string): void {
  const bad = (what: string) => new UsageError(`the plan on stdin is malformed at ${at}: ${what}; plans come from gpuframe stages of the same version`);
  if (typeof node !== 'object' || node === null) throw bad('not a plan node');
  const n = node as Record<string, unknown>;
  const isStrings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
  const need = (field: string, ok: (v: unknown) => boolean) => { if (!ok(n[field])) throw bad(`the ${String(n.kind)} node's '${field}' is missing or of the wrong kind`); };
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  switch (n.kind) {
    case 'scan':
      need('format', (v) => ['csv', 'parquet', 'arrow', 'arrows'].includes(v as string));
      need('files', (v) => Array.isArray(v) && v.length > 0 && v.every((f) => isObject(f) && typeof f.path === 'string' && typeof f.displayName === 'string' && typeof f.bytes === 'number'));
      need('schema', (v) => Array.isArray(v) && v.every((f) => isObject(f) && typeof f.name === 'string' && typeof f.type === 'string'));
      need('columns', (v) => v === null || isStrings(v));
      return;
    case 'generate':
      need('generator', (v) => typeof v === 'string');
      need('params', isObject);
      need('columns', (v) => v === null || isStrings(v));
      return;
    case 'project':
      need('columns', isStrings);
      return checkNode(n.input, `${at}.input`);
    case 'aggregate':
    case 'partial-aggregate':
    case 'final-aggregate':
      need('spec', isObject);
      return checkNode(n.input, `${at}.input`);
    case 'join':
      need('spec', isObject);
      checkNode(n.left, `${at}.left`);
      return checkNode(n.right, `${at}.right`);
    case 'predict':
      need('modelText', (v) => typeof v === 'string');
      need('modelPath', (v) => typeof v === 'string');
      need('keep', (v) => v === null || isStrings(v));
      need('proba', (v) => typeof v === 'boolean');
      need('outputName', (v) => typeof v === 'string');
      return checkNode(n.input, `${at}.input`);
    default:
      throw bad(`unknown node kind ${JSON.stringify(n.kind)}`);
  }
}
