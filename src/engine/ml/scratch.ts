// State a task may keep next to a resident partition between calls of one training run
// (e.g. each row's distance to the nearest centre during k-means++ seeding). Keyed by a run id
// the trainer chooses, so concurrent runs do not collide; the trainer frees it when done.

import type { MatrixPartition } from './partitioned.js';

const scratch = new WeakMap<MatrixPartition, Map<string, unknown>>();

export function getScratch<T>(part: MatrixPartition, key: string, create: () => T): T {
  let m = scratch.get(part);
  if (!m) { m = new Map(); scratch.set(part, m); }
  if (!m.has(key)) m.set(key, create());
  return m.get(key) as T;
}

export function dropScratch(part: MatrixPartition, key: string): void {
  scratch.get(part)?.delete(key);
}
