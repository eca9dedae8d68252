// Which input columns each output column of a join comes from (pandas.merge naming):
// a key named the same on both sides appears once (filled from both sides), other names present
// on both sides get the suffixes, left columns come first.

import type { Schema } from '../batch.js';
import type { JoinSpec } from '../ops/join/index.js';

export interface JoinColumnSource { output: string; left: string | null; right: string | null }

export function joinColumnSources(left: Schema, right: Schema, spec: JoinSpec): JoinColumnSource[] {
  const shared = new Set(spec.leftOn.filter((l, i) => spec.rightOn[i] === l));
  const leftNames = new Set(left.map((f) => f.name));
  const rightNames = new Set(right.map((f) => f.name));
  const out: JoinColumnSource[] = [];
  for (const { name } of left) {
    if (shared.has(name)) out.push({ output: name, left: name, right: name });
    else out.push({ output: rightNames.has(name) ? name + spec.suffixes[0] : name, left: name, right: null });
  }
  for (const { name } of right) {
    if (shared.has(name)) continue;
    out.push({ output: leftNames.has(name) ? name + spec.suffixes[1] : name, left: null, right: name });
  }
  return out;
}
