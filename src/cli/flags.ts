// Flags shared by the commands: the global flags of the contract (every command that runs a plan),
// the output flags, and the CSV parsing flags (every command that takes a CSV INPUT).

import { Flags } from '@oclif/core';
import { UsageError } from '../engine/errors.js';

/** Bounds of a numeric flag (scikit-learn's, for the generators and trainers). */
export interface NumberRange { min?: number; max?: number }

/** The number `text` stands for, or a usage message naming the flag and what it takes. */
export function parseNumber(text: string, flag: string, range: NumberRange = {}): number {
  // Decimal only: Number() would also take '0x1', '0b1' and ''.
  const v = /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i.test(text) ? Number(text) : Number.NaN;
  const { min, max } = range;
  const wanted = [min === undefined ? '' : `≥ ${min}`, max === undefined ? '' : `≤ ${max}`].filter(Boolean).join(' and ');
  if (!Number.isFinite(v) || (min !== undefined && v < min) || (max !== undefined && v > max)) {
    throw new UsageError(`${flag} expects a number${wanted ? ` ${wanted}` : ''}, got '${text}'`);
  }
  return v;
}

/** A flag holding one number (oclif's integer flags refuse fractions; this takes any finite number in `range`). */
export function numberFlag(options: { description: string; default: number } & NumberRange) {
  const { description, default: byDefault, ...range } = options;
  return Flags.custom<number>({ description, default: byDefault, parse: async (text, _ctx, opts) => parseNumber(text, `--${opts.name}`, range) })();
}

export const outputFlags = {
  output: Flags.string({ char: 'o', description: 'write the result to PATH (.csv, .parquet, .arrow, .jsonl); appears only when complete' }),
  format: Flags.string({ description: 'force the stdout format', options: ['csv', 'jsonl', 'arrow', 'parquet', 'table', 'plan'] }),
  explain: Flags.boolean({ description: 'print the optimised plan instead of running it' }),
  dot: Flags.boolean({ description: 'with --explain: print the plan as Graphviz dot' }),
  json: Flags.boolean({ description: 'print the summary (rows written, file, seconds) as JSON on stdout; needs -o' }),
};

export const runFlags = {
  device: Flags.string({ description: 'where to run: auto (GPUs when WebGPU finds hardware ones, else CPU), gpu, cpu', options: ['auto', 'gpu', 'cpu'], default: 'auto' }),
  gpus: Flags.string({ description: 'which GPUs to use, e.g. 0,1 (default: all)' }),
  workers: Flags.integer({ description: 'CPU worker processes (default: cores; 0 runs in this process)', min: 0 }),
  blocksize: Flags.string({ description: 'chunk size of inputs, e.g. 64MB (default: 64MB, 256MB for work on GPU workers; smaller when that leaves workers idle; at most 512MB with GPU workers, whose CSV chunks must fit a GPU buffer binding)' }),
  'memory-limit': Flags.string({ description: 'host memory the run may hold, e.g. 8GB (default: half the RAM)' }),
  trace: Flags.string({ description: 'write a Chrome trace-event timeline of every task to FILE.json' }),
  progress: Flags.boolean({ description: 'progress bar on stderr (only when stderr is a terminal)', allowNo: true, default: true }),
  quiet: Flags.boolean({ char: 'q', description: 'print errors only' }),
};

export const csvFlags = {
  delimiter: Flags.string({ description: 'field delimiter (one character; \\t for tab)' }),
  header: Flags.boolean({ description: 'the first record is a header', allowNo: true, default: true }),
  columns: Flags.string({ description: 'read only these columns, in this order: a,b,c' }),
  dtypes: Flags.string({ description: 'column types: a=int64,b=float64,c=string,d=bool,e=timestamp' }),
  'null-values': Flags.string({ description: "field texts that mean null, comma-separated (default: ',NA,null,NULL')" }),
  quote: Flags.string({ description: 'quote character (empty for none)', default: '"' }),
  'skip-rows': Flags.integer({ description: 'skip N records before the header', min: 0, default: 0 }),
  'on-bad-lines': Flags.string({ description: 'rows with the wrong number of fields', options: ['error', 'warn', 'skip'], default: 'error' }),
};
