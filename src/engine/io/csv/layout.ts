// Reads the start of a CSV file: skips the BOM and `skipRows`, reads the header, and infers each
// column's type from a sample of records.
import { closeSync, fstatSync, type Stats } from 'node:fs';
import { DTYPES, type DType, type Schema } from '../../batch.js';
import { DataError, UsageError, requireColumns } from '../../errors.js';
import { dialectOf, type CsvDialect, type CsvOptions } from './options.js';
import { tokenize, type FieldTable, type TokenizeProblems, countLineBreaks } from './tokenizer.js';
import { fieldText } from './columns.js';
import { openInput, readBytes, Locator } from './input-file.js';
import { inferColumnType } from './infer-type.js';
import { columnNames } from '../column-names.js';

export interface CsvLayout {
  /** The plain (not gzip) file the chunks read. */
  path: string;
  /** What error messages call it (the user's path, e.g. data.csv.gz). */
  displayName: string;
  schema: Schema;
  /** Byte offset of the first data record (after BOM, skipped rows and header). */
  dataStart: number;
  /** 1-based physical line number at dataStart. */
  dataStartLine: number;
  fileSize: number;
}

const SAMPLE_BYTES = 4 << 20;
const SAMPLE_RECORDS = 20_000;

export async function inferCsvLayout(path: string, displayName: string, opts: CsvOptions): Promise<CsvLayout> {
  const d = dialectOf(opts);
  const { fd, size } = openInput(path, displayName);
  try {
    if (size === 0) throw new DataError('empty file', { file: displayName, line: 1 });
    const key = layoutKey(path, displayName, opts, fstatSync(fd));
    const again = lastInferred?.key === key ? withAllTypesGiven(lastInferred.layout, opts.dtypes) : undefined;
    if (again !== undefined) return again;
    // The header and the first record must fit in the sample: grow it until they do.
    for (let want = SAMPLE_BYTES; ; want *= 4) {
      const sample = readBytes(fd, 0, Math.min(size, want));
      const layout = layoutFromSample(sample, sample.length === size, path, displayName, size, d, opts);
      if (layout !== undefined) {
        lastInferred = { key, layout };
        return layout;
      }
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The last layout this process inferred, and from what. Building a plan infers its first input's
 * layout (for the schema); planning the scan infers it again with every column's type given (the
 * plan freezes them as --dtypes), which needs nothing of the sample but that it held a record: that
 * second look reuses the first instead of tokenizing the sample again (up to 4 MB), while the
 * file is the same (device, inode, size, modification time) and read with the same dialect.
 */
let lastInferred: { key: string; layout: CsvLayout } | null = null;

function layoutKey(path: string, displayName: string, opts: CsvOptions, st: Stats): string {
  return JSON.stringify([path, displayName, st.dev, st.ino, st.size, st.mtimeMs, opts.delimiter, opts.quote, opts.header, opts.skipRows]);
}

/** `layout` with the types `dtypes` gives, when it gives every column's (undefined otherwise). */
function withAllTypesGiven(layout: CsvLayout, dtypes: Record<string, DType>): CsvLayout | undefined {
  const names = layout.schema.map((f) => f.name);
  const overrides = checkedOverrides(names, dtypes);
  if (!names.every((name) => overrides.has(name))) return undefined;
  return { ...layout, schema: names.map((name) => ({ name, type: overrides.get(name)! })) };
}

/** The layout, or undefined when the sample ends before the header and a first record are complete. */
function layoutFromSample(buf: Buffer, wholeFile: boolean, path: string, displayName: string, fileSize: number,
                          d: CsvDialect, opts: CsvOptions): CsvLayout | undefined {
  const loc = new Locator(displayName, buf, 0, 1);
  const strict: TokenizeProblems = {
    fail(message, pos, column) { throw loc.error(message, pos, column); },
    ragged() { /* rows of any width are fine here */ },
  };
  const oneRecord = (from: number, skipBlankLines: boolean): FieldTable =>
    tokenize(buf, from, buf.length, d, { fieldsPerRecord: -1, maxRecords: 1, toIsRecordEnd: wholeFile, skipBlankLines }, strict);

  let pos = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  for (let i = 0; i < opts.skipRows; i++) {
    const skipped = oneRecord(pos, false);
    if (skipped.records === 0 && !wholeFile) return undefined;
    pos = skipped.consumed;
  }
  const first = oneRecord(pos, true);
  if (first.records === 0) {
    if (!wholeFile) return undefined;
    throw new DataError(opts.skipRows > 0 ? `no records after skipping ${opts.skipRows} rows` : 'empty file (no records)', { file: displayName });
  }
  const width = first.lastRecordWidth;
  const headerLine = loc.line(first.recordStarts[0]);
  // An empty name (every name without a header) becomes column<i>; a name given twice is an error.
  const names = columnNames(Array.from({ length: width }, (_, c) => (opts.header ? fieldText(buf, first, c, 0) : '')), displayName, headerLine);
  const dataStart = opts.header ? first.consumed : first.recordStarts[0];

  const sample = tokenize(buf, dataStart, buf.length, d,
    { fieldsPerRecord: width, maxRecords: SAMPLE_RECORDS, toIsRecordEnd: wholeFile, skipBlankLines: true }, strict);
  if (sample.records === 0 && !wholeFile) return undefined;
  const overrides = checkedOverrides(names, opts.dtypes);
  return {
    path, displayName, fileSize, dataStart,
    dataStartLine: 1 + countLineBreaks(buf, 0, dataStart),
    schema: names.map((name, c) => ({ name, type: overrides.get(name) ?? inferColumnType(buf, sample, c, d) })),
  };
}

/** The --dtypes overrides, each naming an existing column and a known type. */
function checkedOverrides(names: string[], dtypes: Record<string, DType>): Map<string, DType> {
  const given = Object.entries(dtypes);
  requireColumns(given.map(([name]) => name), names, 'column in --dtypes');
  for (const [name, type] of given) {
    if (!DTYPES.includes(type)) throw new UsageError(`unknown type '${type}' for column '${name}' in --dtypes; use one of ${DTYPES.join(', ')}`);
  }
  return new Map(given);
}
