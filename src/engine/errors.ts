// Errors users see. Each kind carries the process exit code the contract names:
// 1 runtime failure, 2 usage error, 3 bad input data, 130 interrupted.

export class GpuframeError extends Error {
  constructor(message: string, readonly exitCode: number) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad flag, unknown column, bad expression: exit 2. */
export class UsageError extends GpuframeError {
  constructor(message: string) { super(message, 2); }
}

/** Malformed or mistyped input data: exit 3. The message names file, line and column. */
export class DataError extends GpuframeError {
  constructor(message: string, readonly location?: { file?: string; line?: number; column?: number | string }) {
    super(formatLocated(message, location), 3);
  }
}

/** Anything else that stops a run (unwritable output, lost devices, worker crash): exit 1. */
export class RuntimeFailure extends GpuframeError {
  constructor(message: string) { super(message, 1); }
}

export class Interrupted extends GpuframeError {
  constructor(signal: string) { super(`interrupted by ${signal}`, signal === 'SIGTERM' ? 143 : 130); }
}

function formatLocated(message: string, loc?: { file?: string; line?: number; column?: number | string }): string {
  if (!loc || loc.file === undefined) return message;
  let where = loc.file;
  if (loc.line !== undefined) where += `:${loc.line}`;
  if (loc.column !== undefined) where += typeof loc.column === 'number' ? `:${loc.column}` : ` (column '${loc.column}')`;
  return `${where}: ${message}`;
}

/** Plain-object form for sending an error between processes. */
export interface SerializedError { kind: string; message: string; exitCode: number; stack?: string }

export function serializeError(err: unknown): SerializedError {
  if (err instanceof GpuframeError) return { kind: err.name, message: err.message, exitCode: err.exitCode };
  const e = err as Error;
  return { kind: 'Error', message: e?.message ?? String(err), exitCode: 1, stack: e?.stack };
}

export function deserializeError(s: SerializedError): Error {
  if (s.kind === 'Error') {
    const e = new Error(s.message);
    if (s.stack) e.stack = s.stack;
    return e;
  }
  return new GpuframeError(s.message, s.exitCode);
}

/** Levenshtein distance, for "did you mean" suggestions. */
function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0];
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j];
      prev[j] = Math.min(prev[j] + 1, prev[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length];
}

export function closestName(name: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const d = editDistance(name.toLowerCase(), c.toLowerCase());
    if (d < bestD) { bestD = d; best = c; }
  }
  return best;
}

/** Positions of `wanted` among `schemaNames` (one map, so wide schemas stay linear); a UsageError
 *  naming the closest existing column for a name that is not there. */
export function columnIndices(schemaNames: readonly string[], wanted: readonly string[], what = 'column'): number[] {
  const at = new Map<string, number>();
  schemaNames.forEach((n, i) => { if (!at.has(n)) at.set(n, i); });
  return wanted.map((name) => {
    const i = at.get(name);
    if (i === undefined) requireColumn(name, schemaNames, what);
    return i!;
  });
}

/** Throws a UsageError naming the first column given twice in `names` (the list a flag `flag` gave). */
export function requireDistinct(names: readonly string[], what: string, flag: string): void {
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) throw new UsageError(`${what} '${n}' is given twice in ${flag}`);
    seen.add(n);
  }
}

/** requireColumn for each of `names` in order, looked up in one set (so wide schemas stay linear). */
export function requireColumns(names: Iterable<string>, schemaNames: readonly string[], what = 'column'): void {
  let known: Set<string> | null = null;
  for (const name of names) {
    known ??= new Set(schemaNames);
    if (!known.has(name)) requireColumn(name, schemaNames, what);
  }
}

/** Throws a UsageError naming the closest existing column when `name` is not in `schemaNames`. */
export function requireColumn(name: string, schemaNames: readonly string[], what = 'column'): void {
  if (schemaNames.includes(name)) return;
  const near = closestName(name, schemaNames);
  const hint = near !== undefined ? ` (did you mean '${near}'?)` : '';
  throw new UsageError(`unknown ${what} '${name}'${hint}; available: ${schemaNames.join(', ')}`);
}
