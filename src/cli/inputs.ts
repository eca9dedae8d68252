// Turns a command's INPUT arguments into the plan it extends: paths and globs become a scan
// (schema inferred from a sample now, so later stages can check column names), `-` or no
// argument reads stdin, which holds either a plan from an earlier stage or data.

import { createReadStream, createWriteStream, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { DTYPES, type DType } from '../engine/batch.js';
import { DataError, UsageError, requireColumns } from '../engine/errors.js';
import { DEFAULT_CSV_OPTIONS, inferCsvLayout, isGzipFile, type CsvOptions } from '../engine/io/csv/index.js';
import { planArrowChunks } from '../engine/io/arrow.js';
import { planParquetChunks } from '../engine/io/parquet.js';
import { scansOf, type InputFormat, type PlanNode, type ScanFile, type ScanNode } from '../engine/plan/nodes.js';
import { looksLikePlan, parsePlan } from '../engine/plan/serialize.js';
import { onInterrupt } from '../engine/run.js';
import { SPOOL_PREFIX, sweepTempDir } from '../engine/stale-files.js';

export interface CsvFlagValues {
  delimiter?: string;
  header: boolean;
  columns?: string;
  dtypes?: string;
  'null-values'?: string;
  quote: string;
  'skip-rows': number;
  'on-bad-lines': string;
}

/**
 * The plan of a stage's input: files, or stdin (`args` empty or `-`) holding data or the plan an
 * earlier stage wrote.
 * `csvFlagsUsedElsewhere`: another input of the stage reads CSV flags (merge), so a plan on stdin
 * does not make them pointless.
 */
export async function inputPlan(args: readonly string[], csv: CsvFlagValues, csvFlagsUsedElsewhere = false): Promise<PlanNode> {
  sweepTempDir(); // spools whose owner died before the next stage claimed them
  if (args.length === 0 || (args.length === 1 && args[0] === '-')) return stdinPlan(csv, csvFlagsUsedElsewhere);
  if (args.includes('-')) throw new UsageError("'-' (stdin) cannot be mixed with file inputs");
  return scanPlan(await expandInputs(args), csv);
}

async function expandInputs(args: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const arg of args) {
    if (!/[*?[\]{}]/.test(arg)) { files.push(arg); continue; }
    const matches = (await globMatches(arg)).sort();
    if (matches.length === 0) throw new DataError(`no files match '${arg}'`, { file: arg });
    files.push(...matches);
  }
  return files;
}

/** tinyglobby (~30 ms to import), loaded only when an argument is a glob. */
async function globMatches(pattern: string): Promise<string[]> {
  const { glob } = await import('tinyglobby');
  return glob(pattern, { onlyFiles: true, expandDirectories: false });
}

export function formatOfPath(path: string): InputFormat {
  const lower = path.toLowerCase();
  if (lower.endsWith('.parquet')) return 'parquet';
  if (lower.endsWith('.arrow') || lower.endsWith('.feather') || lower.endsWith('.ipc')) return 'arrow';
  if (lower.endsWith('.arrows')) return 'arrows';
  return 'csv';
}

async function scanPlan(paths: string[], csvFlags: CsvFlagValues, displayNames = paths, temporary = false): Promise<ScanNode> {
  const format = formatOfPath(paths[0]);
  const files: ScanFile[] = paths.map((path, i) => {
    if (formatOfPath(path) !== format) throw new UsageError(`inputs mix formats: ${paths[0]} is ${format}, ${path} is ${formatOfPath(path)}`);
    let bytes: number;
    try {
      const st = statSync(path);
      if (st.isDirectory()) throw new DataError('is a directory, not a file', { file: displayNames[i] });
      bytes = st.size;
    } catch (e) {
      if (e instanceof DataError) throw e;
      throw new DataError('no such file', { file: displayNames[i] });
    }
    // Absolute, so a later stage of the pipe may run in another directory; messages use displayName.
    const file = { path: resolve(path), displayName: displayNames[i], bytes };
    return temporary ? { ...file, temporary } : file;
  });
  const columns = csvFlags.columns ? splitList(csvFlags.columns) : null;
  if (format === 'csv') {
    const options = csvOptionsFrom(csvFlags, paths[0]);
    const schema = await inferCsvSchema(files[0], options);
    const names = schema.map((f) => f.name);
    requireColumns(Object.keys(options.dtypes), names, '--dtypes column');
    if (columns) requireColumns(columns, names, '--columns column');
    // Freeze every column's type so all partitions (and all later stages) agree.
    const frozen: CsvOptions = { ...options, dtypes: Object.fromEntries(schema.map((f) => [f.name, f.type])) };
    return { kind: 'scan', format, files, csv: frozen, schema, columns };
  }
  const { schema } = format === 'parquet' ? await planParquetChunks(files[0], Number.MAX_SAFE_INTEGER) : await planArrowChunks(files[0], format === 'arrow' ? 'file' : 'stream', Number.MAX_SAFE_INTEGER);
  if (columns) requireColumns(columns, schema.map((f) => f.name), '--columns column');
  return { kind: 'scan', format, files, schema, columns };
}

/** Infers from a sample; a gzip file is sampled through a decompressed prefix, not inflated whole. */
async function inferCsvSchema(file: ScanFile, options: CsvOptions) {
  if (!isGzipFile(file.path, file.displayName)) return (await inferCsvLayout(file.path, file.displayName, options)).schema;
  const sample = join(tmpdir(), `gpuframe-sample-${process.pid}-${randomBytes(4).toString('hex')}.csv`);
  try {
    await copyGunzipPrefix(file, sample, 8 << 20);
    return (await inferCsvLayout(sample, file.displayName, options)).schema;
  } finally {
    rmSync(sample, { force: true });
  }
}

/** Decompresses up to `limit` bytes, cut at the last newline so no record is truncated. */
async function copyGunzipPrefix(src: ScanFile, dst: string, limit: number): Promise<void> {
  const chunks: Buffer[] = [];
  let have = 0;
  const gunzip = createGunzip();
  const input = createReadStream(src.path);
  try {
    for await (const chunk of input.pipe(gunzip)) {
      chunks.push(chunk as Buffer);
      have += (chunk as Buffer).length;
      if (have >= limit) break;
    }
  } catch (e) {
    throw new DataError(`not a valid gzip file (${(e as Error).message})`, { file: src.displayName });
  } finally {
    input.destroy();
    gunzip.destroy();
  }
  let data = Buffer.concat(chunks);
  if (have >= limit) data = data.subarray(0, data.lastIndexOf(10) + 1);
  const out = createWriteStream(dst);
  await pipeline(async function* () { yield data; }, out);
}

export function csvOptionsFrom(flags: CsvFlagValues, firstPath: string): CsvOptions {
  const lower = firstPath.toLowerCase();
  const tsv = lower.endsWith('.tsv') || lower.endsWith('.tsv.gz') || lower.endsWith('.tab');
  let delimiter = flags.delimiter ?? (tsv ? '\t' : DEFAULT_CSV_OPTIONS.delimiter);
  if (delimiter === '\\t' || delimiter === 'tab') delimiter = '\t';
  if (Buffer.byteLength(delimiter) !== 1) throw new UsageError(`--delimiter must be one single-byte character, got '${delimiter}'`);
  if (Buffer.byteLength(flags.quote) > 1) throw new UsageError(`--quote must be one single-byte character or empty, got '${flags.quote}'`);
  if (flags.quote === delimiter) throw new UsageError('--quote and --delimiter must differ');
  const onBadLines = flags['on-bad-lines'] as CsvOptions['onBadLines'];
  return {
    ...DEFAULT_CSV_OPTIONS,
    delimiter,
    quote: flags.quote,
    header: flags.header,
    skipRows: flags['skip-rows'],
    nullValues: flags['null-values'] === undefined ? DEFAULT_CSV_OPTIONS.nullValues : flags['null-values'].split(','),
    dtypes: parseDtypes(flags.dtypes),
    onBadLines,
  };
}

function parseDtypes(text: string | undefined): Record<string, DType> {
  const out: Record<string, DType> = {};
  if (!text) return out;
  for (const part of splitList(text)) {
    const eq = part.lastIndexOf('=');
    if (eq <= 0) throw new UsageError(`--dtypes expects name=type pairs, got '${part}'`);
    const name = part.slice(0, eq).trim();
    const type = normaliseType(part.slice(eq + 1).trim());
    out[name] = type;
  }
  return out;
}

const TYPE_ALIASES: Record<string, DType> = {
  int: 'int64', int64: 'int64', integer: 'int64', bigint: 'int64', long: 'int64',
  float: 'float64', float64: 'float64', double: 'float64', number: 'float64',
  string: 'string', str: 'string', utf8: 'string', text: 'string', varchar: 'string',
  bool: 'bool', boolean: 'bool',
  timestamp: 'timestamp', datetime: 'timestamp', date: 'timestamp',
};

function normaliseType(t: string): DType {
  const type = TYPE_ALIASES[t.toLowerCase()];
  if (!type) throw new UsageError(`unknown type '${t}' in --dtypes; use one of ${DTYPES.join(', ')}`);
  return type;
}

export function splitList(text: string): string[] {
  return text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}

// ---- stdin ---------------------------------------------------------------------------------

/**
 * Spooled copies of stdin this process holds (its own, or named by the plan it read): removed when
 * it exits, unless it handed them on down the pipe in its plan. A run removes them itself when it
 * ends; this covers a stage that fails before (a usage error after stdin was read).
 */
const heldSpools = new Set<string>();
process.on('exit', () => { for (const p of heldSpools) rmSync(p, { force: true }); });

/** The plan goes on down the pipe with the spooled inputs it names: the next stage removes them. */
export function handOnSpooledInputs(): void {
  heldSpools.clear();
}

const spoolPath = (ext = '') => join(tmpdir(), `${SPOOL_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}${ext}`);

/** The plan's spooled inputs become this process's (renamed to its pid), so no sweep takes them while it runs. */
function claimSpools(plan: PlanNode): void {
  for (const scan of scansOf(plan)) {
    for (const file of scan.files) {
      if (!file.temporary) continue;
      const claimed = spoolPath(extname(file.path));
      try {
        renameSync(file.path, claimed);
      } catch {
        throw new DataError('the data an earlier stage read from stdin is gone from the temp dir (was that stage\'s plan used twice?)', { file: file.displayName });
      }
      file.path = claimed;
      heldSpools.add(claimed);
    }
  }
}

async function stdinPlan(csv: CsvFlagValues, csvFlagsUsedElsewhere: boolean): Promise<PlanNode> {
  if (process.stdin.isTTY) throw new UsageError('no INPUT given and stdin is a terminal: name a file, or pipe data or a gpuframe plan in');
  const spooled = spoolPath();
  heldSpools.add(spooled);
  const unregister = onInterrupt(() => rmSync(spooled, { force: true })); // exit handlers do not run on signals
  let head: { bytes: Buffer; total: number };
  try {
    head = await spoolStdin(spooled);
  } finally {
    unregister();
  }
  if (looksLikePlan(head.bytes)) {
    const text = readFileSync(spooled, 'utf8');
    rmSync(spooled, { force: true });
    heldSpools.delete(spooled);
    const plan = parsePlan(text);
    claimSpools(plan);
    if (!csvFlagsUsedElsewhere) refuseCsvFlags(csv);
    return plan;
  }
  if (head.total === 0) throw new DataError('stdin is empty: expected CSV/Arrow data or a gpuframe plan', { file: '-' });
  // Arrow IPC stream starts with a 0xFFFFFFFF continuation marker, an Arrow file with ARROW1.
  const b = head.bytes;
  const format: InputFormat = b.subarray(0, 6).toString('latin1') === 'ARROW1' ? 'arrow' : b.length >= 4 && b.readUInt32LE(0) === 0xffffffff ? 'arrows' : 'csv';
  const path = `${spooled}.${format === 'csv' ? 'csv' : format}`;
  renameSync(spooled, path);
  heldSpools.delete(spooled);
  heldSpools.add(path);
  return scanPlan([path], csv, ['-'], true);
}

/** CSV flags given to a stage whose input is an earlier stage's plan would be silently ignored. */
function refuseCsvFlags(csv: CsvFlagValues): void {
  const given = [
    csv.delimiter !== undefined && '--delimiter', !csv.header && '--no-header', csv.columns !== undefined && '--columns',
    csv.dtypes !== undefined && '--dtypes', csv['null-values'] !== undefined && '--null-values', csv.quote !== DEFAULT_CSV_OPTIONS.quote && '--quote',
    csv['skip-rows'] !== 0 && '--skip-rows', csv['on-bad-lines'] !== 'error' && '--on-bad-lines',
  ].filter((f): f is string => f !== false);
  if (given.length > 0) {
    throw new UsageError(`${given.join(', ')}: stdin holds the plan of an earlier stage, which read the CSV; give CSV flags to that stage`);
  }
}

/** Copies stdin to a file (so it can be split into chunks like any file); returns its first bytes. */
async function spoolStdin(path: string): Promise<{ bytes: Buffer; total: number }> {
  let first: Buffer = Buffer.alloc(0);
  let total = 0;
  const out = createWriteStream(path);
  await pipeline(process.stdin, async function* (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) {
      if (first.length < 64) first = Buffer.concat([first, chunk]).subarray(0, 64);
      total += chunk.length;
      yield chunk;
    }
  }, out);
  return { bytes: first, total };
}
