// Parses one chunk of a CSV file into a batch of the requested columns. Every field is
// tokenized (to find record ends), but only the requested columns are converted.
import { closeSync } from 'node:fs';
import { columnIndices } from '../../errors.js';
import type { Batch } from '../../batch.js';
import { dialectOf, type CsvOptions } from './options.js';
import type { CsvLayout } from './layout.js';
import { chunkFirstLine, type CsvChunk } from './chunks.js';
import { tokenize } from './tokenizer.js';
import { buildColumn, fieldText, unescapedStart } from './columns.js';
import { openInput, readBytes, Locator, dataProblems } from './input-file.js';

export function readCsvChunk(chunk: CsvChunk, layout: CsvLayout, opts: CsvOptions, columns: readonly string[],
                             onWarning?: (msg: string) => void): Batch {
  const indices = columnIndices(layout.schema.map((f) => f.name), columns);
  const d = dialectOf(opts);
  const { fd } = openInput(chunk.path, chunk.displayName);
  let buf: Buffer;
  try {
    // The chunk's bytes and field table are scratch (io/scratch.ts): the batch built here copies
    // what it keeps out of them.
    buf = readBytes(fd, chunk.start, chunk.end - chunk.start, 'csv chunk');
  } finally {
    closeSync(fd);
  }
  const width = layout.schema.length;
  const loc = new Locator(chunk.displayName, buf, 0, () => chunkFirstLine(chunk));
  const table = tokenize(buf, 0, buf.length, d,
    { fieldsPerRecord: width, maxRecords: Infinity, toIsRecordEnd: true, skipBlankLines: true, scratchTable: true },
    dataProblems(loc, width, opts.onBadLines, onWarning));
  const schema = indices.map((c) => layout.schema[c]);
  const built = indices.map((c) => {
    const { name, type } = layout.schema[c];
    return buildColumn(buf, table, c, type, d, (record) => {
      const text = fieldText(buf, table, c, record);
      throw loc.error(`cannot parse '${text}' as ${type} in column '${name}'; read it as text with --dtypes ${name}=string`,
        unescapedStart(table.starts[table.index(c, record)]), c + 1);
    });
  });
  return { schema, length: table.records, columns: built };
}
