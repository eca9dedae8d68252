// Splits a CSV file's data into chunks of about `blocksize` bytes that start at record starts.
// A line break ends a record iff an even number of quote bytes precede it (doubled quotes keep
// the parity; the tokenizer rejects quotes anywhere else), so one pass of Buffer.indexOf over
// line breaks and quotes finds the boundaries and counts physical lines, whatever the blocksize.
import { closeSync } from 'node:fs';
import { UsageError } from '../../errors.js';
import { dialectOf, LF, type CsvOptions } from './options.js';
import type { CsvLayout } from './layout.js';
import { openInput, readBytes } from './input-file.js';

export interface CsvChunk {
  path: string;
  displayName: string;
  start: number;
  end: number;
  /** Physical line number (1-based) at `start`. */
  firstLine: number;
}

const READ_BYTES = 8 << 20;

export async function planCsvChunks(layout: CsvLayout, opts: CsvOptions, blocksize: number): Promise<CsvChunk[]> {
  if (!(blocksize >= 1)) throw new UsageError(`--blocksize must be positive, got ${blocksize}`);
  const quote = dialectOf(opts).quote;
  const { path, displayName, fileSize } = layout;
  const chunks: CsvChunk[] = [];
  let chunkStart = layout.dataStart;
  let chunkLine = layout.dataStartLine;
  let nextCut = chunkStart + blocksize;
  let line = layout.dataStartLine;
  let insideQuotes = false;
  const { fd } = openInput(path, displayName);
  try {
    for (let at = layout.dataStart; at < fileSize; at += READ_BYTES) {
      const buf = readBytes(fd, at, Math.min(READ_BYTES, fileSize - at));
      let q = quote < 0 ? -1 : buf.indexOf(quote);
      for (let nl = buf.indexOf(LF); nl >= 0; nl = buf.indexOf(LF, nl + 1)) {
        for (; q >= 0 && q < nl; q = buf.indexOf(quote, q + 1)) insideQuotes = !insideQuotes;
        line++;
        const after = at + nl + 1;
        if (!insideQuotes && after >= nextCut && after < fileSize) {
          chunks.push({ path, displayName, start: chunkStart, end: after, firstLine: chunkLine });
          chunkStart = after;
          chunkLine = line;
          nextCut = after + blocksize;
        }
      }
      for (; q >= 0; q = buf.indexOf(quote, q + 1)) insideQuotes = !insideQuotes;
    }
  } finally {
    closeSync(fd);
  }
  // The rest (also the one empty chunk of a header-only file, so readers still see the schema).
  if (chunkStart < fileSize || chunks.length === 0) {
    chunks.push({ path, displayName, start: chunkStart, end: fileSize, firstLine: chunkLine });
  }
  return chunks;
}
