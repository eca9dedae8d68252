// What a groupby computes: the aggregate list syntax, its validation and the output schema.
import type { DType, Schema } from '../../batch.js';
import { requireColumn, requireDistinct, UsageError } from '../../errors.js';

export type AggFunc = 'count' | 'sum' | 'mean' | 'min' | 'max' | 'var' | 'std' | 'nunique';
export const AGG_FUNCS: readonly AggFunc[] = ['count', 'sum', 'mean', 'min', 'max', 'var', 'std', 'nunique'];

/** One aggregate: `func(column)` named `name`; count() has column null. */
export interface AggSpec { func: AggFunc; column: string | null; name: string }
export interface AggregateSpec { keys: string[]; aggs: AggSpec[]; dropna: boolean }

/** Parses 'mean(delay),count(),sum(x)' into specs named mean_delay, count, sum_x. */
export function parseAggList(text: string): AggSpec[] {
  const specs: AggSpec[] = [];
  const item = /^\s*([A-Za-z_]+)\s*\(\s*([^()]*?)\s*\)\s*$/;
  for (const part of splitTopLevel(text)) {
    const m = item.exec(part);
    if (!m) throw new UsageError(`bad aggregate '${part.trim()}' in --agg '${text}': expected func(column), e.g. mean(delay) or count()`);
    const func = m[1].toLowerCase() as AggFunc;
    if (!AGG_FUNCS.includes(func)) {
      throw new UsageError(`unknown aggregate function '${m[1]}' in --agg; available: ${AGG_FUNCS.join(', ')}`);
    }
    const column = m[2] === '' ? null : m[2];
    if (column === null && func !== 'count') throw new UsageError(`aggregate ${func}() needs a column, e.g. ${func}(x)`);
    specs.push({ func, column, name: column === null ? func : `${func}_${column}` });
  }
  if (specs.length === 0) throw new UsageError('--agg needs at least one aggregate, e.g. count()');
  const seen = new Set<string>();
  for (const s of specs) {
    if (seen.has(s.name)) throw new UsageError(`aggregate '${s.name}' is listed twice in --agg`);
    seen.add(s.name);
  }
  return specs;
}

/** Splits on commas outside parentheses. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0, start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) { parts.push(text.slice(start, i)); start = i + 1; }
  }
  parts.push(text.slice(start));
  return parts.filter((p) => p.trim() !== '');
}

const NUMERIC_ONLY: readonly AggFunc[] = ['sum', 'mean', 'var', 'std'];

/** The type of an aggregate's result given its input column's type (null for count()). */
export function aggOutputType(func: AggFunc, input: DType | null): DType {
  switch (func) {
    case 'count':
    case 'nunique': return 'int64';
    case 'sum': return input === 'int64' ? 'int64' : 'float64';
    case 'mean':
    case 'var':
    case 'std': return 'float64';
    case 'min':
    case 'max': return input as DType;
  }
}

/** Keys (in order) then one column per aggregate. */
export function aggregateOutputSchema(input: Schema, spec: AggregateSpec): Schema {
  const names = input.map((f) => f.name);
  const typeOf = (name: string): DType => input.find((f) => f.name === name)!.type;
  if (spec.keys.length === 0) throw new UsageError('groupby needs at least one key column (--by)');
  for (const k of spec.keys) requireColumn(k, names, 'key column');
  requireDistinct(spec.keys, 'key column', '--by');
  const out: Schema = spec.keys.map((k) => ({ name: k, type: typeOf(k) }));
  for (const a of spec.aggs) {
    if (a.column !== null) requireColumn(a.column, names);
    const type = a.column === null ? null : typeOf(a.column);
    if (NUMERIC_ONLY.includes(a.func) && type !== 'int64' && type !== 'float64') {
      throw new UsageError(`${a.func}(${a.column}) needs a numeric column; '${a.column}' is ${type}`);
    }
    if (out.some((f) => f.name === a.name)) throw new UsageError(`output column '${a.name}' would appear twice; it is both a key and an aggregate`);
    out.push({ name: a.name, type: aggOutputType(a.func, type) });
  }
  return out;
}
