// What a merge produces: key validation, output column names (suffixes, --on key columns once) and types.
import type { Column, DType, Schema } from '../../batch.js';
import { int64Words, type Int64Column } from '../../batch.js';
import { requireColumn, UsageError } from '../../errors.js';

export type JoinHow = 'inner' | 'left' | 'right' | 'outer';
export interface JoinSpec { leftOn: string[]; rightOn: string[]; how: JoinHow; suffixes: [string, string] }

/** Where each output column comes from. */
export interface JoinLayout {
  schema: Schema;
  leftKeys: number[];
  rightKeys: number[];
  /** With `--on` (same key names on both sides) each key column appears once, coalesced. */
  sharedKeys: boolean;
  /** Output columns 0..left.length-1 are the left columns; for a shared key, the right key column index, else -1. */
  coalesceFrom: number[];
  /** Right column indices emitted after the left columns. */
  rightOut: number[];
}

export function joinLayout(left: Schema, right: Schema, spec: JoinSpec): JoinLayout {
  const { leftOn, rightOn } = spec;
  if (leftOn.length === 0 || leftOn.length !== rightOn.length) {
    throw new UsageError(`merge needs the same number of left and right key columns (got ${leftOn.length} and ${rightOn.length})`);
  }
  const leftNames = left.map((f) => f.name), rightNames = right.map((f) => f.name);
  leftOn.forEach((k) => requireColumn(k, leftNames, 'left key column'));
  rightOn.forEach((k) => requireColumn(k, rightNames, 'right key column'));
  const leftKeys = leftOn.map((k) => leftNames.indexOf(k));
  const rightKeys = rightOn.map((k) => rightNames.indexOf(k));
  const keyTypes = leftKeys.map((li, i) => commonKeyType(left[li], right[rightKeys[i]]));

  const sharedKeys = leftOn.every((k, i) => k === rightOn[i]);
  const rightOut = right.map((_, i) => i).filter((i) => !(sharedKeys && rightKeys.includes(i)));
  const coalesceFrom = left.map((_, i) => (sharedKeys && leftKeys.includes(i) ? rightKeys[leftKeys.indexOf(i)] : -1));
  const rightOutNames = new Set(rightOut.map((i) => rightNames[i]));
  const leftOutNames = new Set(leftNames.filter((_, i) => coalesceFrom[i] < 0));
  const schema: Schema = [
    ...left.map((f, i) => {
      if (coalesceFrom[i] >= 0) return { name: f.name, type: keyTypes[leftKeys.indexOf(i)] };
      return { name: rightOutNames.has(f.name) ? f.name + spec.suffixes[0] : f.name, type: f.type };
    }),
    ...rightOut.map((i) => {
      const f = right[i];
      return { name: leftOutNames.has(f.name) ? f.name + spec.suffixes[1] : f.name, type: f.type };
    }),
  ];
  const seen = new Set<string>();
  for (const f of schema) {
    if (seen.has(f.name)) throw new UsageError(`merge output would have two columns named '${f.name}'; choose other --suffixes`);
    seen.add(f.name);
  }
  return { schema, leftKeys, rightKeys, sharedKeys, coalesceFrom, rightOut };
}

/** Key types must match, except int64 with float64, which compare (and come out) as float64. */
function commonKeyType(l: { name: string; type: DType }, r: { name: string; type: DType }): DType {
  if (l.type === r.type) return l.type;
  const numeric = (t: DType) => t === 'int64' || t === 'float64';
  if (numeric(l.type) && numeric(r.type)) return 'float64';
  throw new UsageError(`cannot join left key '${l.name}' (${l.type}) with right key '${r.name}' (${r.type})`);
}

/** Left columns then right columns; see joinLayout. */
export function joinOutputSchema(left: Schema, right: Schema, spec: JoinSpec): Schema {
  return joinLayout(left, right, spec).schema;
}

/** `col` as the given type: only int64 -> float64 ever changes anything (mixed numeric keys). */
export function castKeyColumn(col: Column, type: DType): Column {
  if (col.type !== 'int64' || type !== 'float64') return col;
  const w = int64Words(col as Int64Column);
  const values = new Float64Array(col.values.length);
  for (let i = 0; i < values.length; i++) values[i] = w[2 * i + 1] * 4294967296 + (w[2 * i] >>> 0);
  return { type: 'float64', values, valid: col.valid };
}
