// The end of every plan-building command: either hand the plan on (stdout is a pipe), explain
// it, or run it and write the rows where the contract says.

import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { selectColumns, type Batch, type Schema } from '../engine/batch.js';
import { UsageError } from '../engine/errors.js';
import { formatFromPath, openFileWriter, openStreamWriter, type BatchWriter, type OutputFormat, type PartEncoding } from '../engine/io/output/index.js';
import { optimize } from '../engine/optimizer/index.js';
import { explainDot, explainText } from '../engine/plan/explain.js';
import { scansOf, type PlanNode } from '../engine/plan/nodes.js';
import { serializePlan } from '../engine/plan/serialize.js';
import { onInterrupt, runPlan, type RunSettings } from '../engine/run.js';
import type { DeviceMode } from '../engine/exec/gpu-select.js';
import { parseGpuList } from '../engine/gpu/pci.js';
import { stdoutIsPipe } from './early-workers.js';
import { memoryLimitOf, parseSize } from './sizes.js';
import { handOnSpooledInputs } from './inputs.js';

export interface RunFlagValues {
  device: string;
  gpus?: string;
  workers?: number;
  blocksize?: string;
  'memory-limit'?: string;
  trace?: string;
  progress: boolean;
  quiet: boolean;
}

export interface StageFlags extends RunFlagValues {
  output?: string;
  format?: string;
  explain: boolean;
  dot: boolean;
  json: boolean;
}

/** The largest --blocksize: the CSV reader holds a chunk's byte positions in 32-bit integers, and a
 *  chunk runs past its block to the next record end. */
const MAX_BLOCKSIZE = 1024 ** 3;

function parseBlocksize(text: string): number {
  const bytes = parseSize(text, '--blocksize');
  if (bytes > MAX_BLOCKSIZE) throw new UsageError(`--blocksize must be at most 1GB (chunk byte positions are 32-bit), got '${text}'`);
  return bytes;
}

export function runSettings(flags: RunFlagValues): RunSettings {
  return {
    device: flags.device as DeviceMode,
    gpus: flags.gpus === undefined ? undefined : parseGpuList(flags.gpus),
    workers: flags.workers ?? availableParallelism(),
    blocksize: flags.blocksize === undefined ? undefined : parseBlocksize(flags.blocksize),
    memoryLimit: memoryLimitOf(flags['memory-limit']),
    progress: flags.progress && !flags.quiet && process.stderr.isTTY === true,
    tracePath: flags.trace,
    warn: (msg) => { if (!flags.quiet) process.stderr.write(`gpuframe: warning: ${msg}\n`); },
  };
}

type Destination =
  | { kind: 'plan' }
  | { kind: 'file'; path: string; format: OutputFormat }
  | { kind: 'stdout'; format: OutputFormat };

/** Formats a file can hold (the others are views on stdout). */
const FILE_FORMATS: readonly string[] = ['csv', 'jsonl', 'arrow', 'parquet'];

function destination(flags: StageFlags): Destination {
  if (flags.output) {
    // --format names the file's format whatever its extension (-o data.txt --format csv).
    if (flags.format && !FILE_FORMATS.includes(flags.format)) throw new UsageError(`--format ${flags.format} shows rows on stdout; with -o give a file format (${FILE_FORMATS.join(', ')}) or none`);
    return { kind: 'file', path: flags.output, format: (flags.format as OutputFormat | undefined) ?? formatFromPath(flags.output) };
  }
  if (flags.format === 'plan') return { kind: 'plan' };
  if (flags.format) return { kind: 'stdout', format: flags.format as OutputFormat };
  if (process.stdout.isTTY) return { kind: 'stdout', format: 'table' };
  if (stdoutIsPipe()) return { kind: 'plan' };
  return { kind: 'stdout', format: 'csv' };
}

/** Whether the stage runs its plan here (rather than explaining it or handing it on down a pipe). */
export function runsHere(flags: StageFlags): boolean {
  return !flags.explain && !flags.dot && destination(flags).kind !== 'plan';
}

/** Prints the optimised plan (Graphviz with `dot`, the plan's JSON with `json`) instead of running it. */
export function printExplain(plan: PlanNode, flags: RunFlagValues & { dot: boolean; json?: boolean }): void {
  const optimised = optimize(plan, { memoryLimit: runSettings(flags).memoryLimit });
  process.stdout.write(flags.dot ? explainDot(optimised) : flags.json ? `${JSON.stringify(optimised)}\n` : explainText(optimised));
}

/** What a stage's caller watches: every result batch before it is written, columns it sees but are not written, more summary fields. */
export interface StageWatch {
  observe?: (batch: Batch) => void;
  hidden?: readonly string[];
  summary?: () => Record<string, unknown>;
}

/**
 * Runs or hands on the plan; `watch.observe` sees every result batch before it is written (and
 * `watch.hidden` columns, which are not). The summary (rows, file, seconds, and what
 * `watch.summary` adds) goes to stderr, or as JSON to stdout with --json.
 */
export async function finishStage(plan: PlanNode, flags: StageFlags, watch: StageWatch = {}): Promise<void> {
  const { observe, hidden = [], summary } = watch;
  if (flags.explain || flags.dot) return printExplain(plan, flags);
  const dest = destination(flags);
  if (flags.json && dest.kind !== 'file') throw new UsageError('--json prints the summary on stdout, where the rows would go: write them with -o');
  if (dest.kind === 'plan') {
    handOnSpooledInputs();
    process.stdout.write(serializePlan(plan));
    return;
  }
  if (dest.kind === 'file') refuseOverwritingInput(plan, dest.path);
  const settings = runSettings(flags);
  const started = performance.now();
  // Opened once the result's schema is known; a holder, because the callback below sets it.
  const opened: { writer: BatchWriter | null; closed: boolean } = { writer: null, closed: false };
  let rows = 0;
  const unregister = onInterrupt(() => { void opened.writer?.abort(); });
  try {
    await runPlan(plan, settings, async (schema: Schema, parts: PartEncoding) => {
      const written = schema.filter((f) => !hidden.includes(f.name));
      const names = written.map((f) => f.name);
      const w = dest.kind === 'file' ? await openFileWriter(dest.path, dest.format, written, parts) : openStreamWriter(process.stdout, dest.format, written, parts);
      opened.writer = w;
      const textFormat = (dest.format === 'csv' || dest.format === 'jsonl') && !observe && hidden.length === 0 && w.writeEncoded ? dest.format : null;
      return {
        write: async (b) => { rows += b.length; observe?.(b); await w.write(hidden.length === 0 ? b : selectColumns(b, names)); },
        encoded: textFormat === null ? undefined : { format: textFormat, write: async (bytes, n) => { rows += n; await w.writeEncoded!(bytes); } },
        finish: async () => { opened.closed = true; await w.close(); },
      };
    });
    if (!opened.closed) await opened.writer?.close();
  } catch (err) {
    await opened.writer?.abort();
    throw err;
  } finally {
    unregister();
  }
  if (dest.kind === 'file') {
    const seconds = (performance.now() - started) / 1000;
    report(flags, `gpuframe: wrote ${rows} rows to ${dest.path} in ${seconds.toFixed(2)} s`, { rows, output: dest.path, seconds: Number(seconds.toFixed(3)), ...summary?.() });
  }
}

function refuseOverwritingInput(plan: PlanNode, output: string): void {
  const out = resolve(output);
  for (const scan of scansOf(plan)) {
    for (const f of scan.files) {
      if (resolve(f.path) === out) throw new UsageError(`-o ${output} is also an input; write the result to another path`);
    }
  }
}

/** JSON text of a summary; bigints (int64 values: classes beyond 2^53) as JSON numbers with all their digits, as JSONL output writes int64. */
function jsonText(data: Record<string, unknown>): string {
  let big = false;
  const text = JSON.stringify(data, (_key, v: unknown) => {
    if (typeof v !== 'bigint') return v;
    big = true;
    return `${BIGINT_MARK}${v}`;
  });
  return big ? text.replace(new RegExp(`"${BIGINT_MARK}(-?\\d+)"`, 'g'), '$1') : text;
}

/** Stands in for a bigint in JSON.stringify's text (no string the summary holds starts so). */
const BIGINT_MARK = `bigint-${randomUUID()}:`;

/** A one-line summary on stderr, or JSON on stdout with --json. */
export function report(flags: { json?: boolean; quiet?: boolean }, text: string, data: Record<string, unknown>): void {
  if (flags.json) process.stdout.write(jsonText(data) + '\n');
  else if (!flags.quiet) process.stderr.write(text + '\n');
}
