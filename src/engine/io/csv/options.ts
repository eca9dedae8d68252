// Parsing options for CSV input and their byte-level form (the "dialect") used by the hot loops.
import type { DType } from '../../batch.js';
import { UsageError } from '../../errors.js';

export interface CsvOptions {
  /** One byte; default ','. ('\t' for .tsv: the caller decides.) */
  delimiter: string;
  /** One byte, or '' for no quoting; default '"'. */
  quote: string;
  /** Default true; without a header columns are named column0, column1, ... */
  header: boolean;
  /** Physical records skipped before the header; default 0. */
  skipRows: number;
  /** Exact field texts that mean null. */
  nullValues: string[];
  /** Per-column type overrides; unknown names are a UsageError naming the closest column. */
  dtypes: Record<string, DType>;
  /** Ragged rows (wrong field count): fail, warn and drop, or drop silently. */
  onBadLines: 'error' | 'warn' | 'skip';
}

export const DEFAULT_CSV_OPTIONS: CsvOptions = Object.freeze({
  delimiter: ',',
  quote: '"',
  header: true,
  skipRows: 0,
  nullValues: ['', 'NA', 'null', 'NULL'],
  dtypes: {},
  onBadLines: 'error',
}) as CsvOptions;

/** The options as bytes, checked once so the hot loops compare numbers. */
export interface CsvDialect {
  delimiter: number;
  /** -1 when quoting is off. */
  quote: number;
  /** Null texts grouped by byte length: nullsByLength[n] holds the n-byte ones. */
  nullsByLength: Uint8Array[][];
  /** 1 for each byte some non-empty null text starts with (a field starting otherwise is not null). */
  nullFirstBytes: Uint8Array;
}

export const LF = 0x0a;
export const CR = 0x0d;

export function dialectOf(opts: CsvOptions): CsvDialect {
  const delimiter = singleByte(opts.delimiter, '--delimiter');
  const quote = opts.quote === '' ? -1 : singleByte(opts.quote, '--quote');
  if (delimiter === quote) throw new UsageError(`--delimiter and --quote must differ (both are '${opts.delimiter}')`);
  for (const [b, flag] of [[delimiter, '--delimiter'], [quote, '--quote']] as const) {
    if (b === LF || b === CR) throw new UsageError(`${flag} cannot be a line break`);
  }
  if (!Number.isInteger(opts.skipRows) || opts.skipRows < 0) {
    throw new UsageError(`--skip-rows must be a whole number >= 0, got ${opts.skipRows}`);
  }
  const nullsByLength: Uint8Array[][] = [];
  const nullFirstBytes = new Uint8Array(256);
  for (const text of opts.nullValues) {
    const bytes = Buffer.from(text, 'utf8');
    (nullsByLength[bytes.length] ??= []).push(bytes);
    if (bytes.length > 0) nullFirstBytes[bytes[0]] = 1;
  }
  return { delimiter, quote, nullsByLength, nullFirstBytes };
}

function singleByte(text: string, flag: string): number {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length !== 1) throw new UsageError(`${flag} must be exactly one byte, got '${text}'`);
  return bytes[0];
}
