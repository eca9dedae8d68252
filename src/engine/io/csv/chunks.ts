// Splits a CSV file's data into chunks of about `blocksize` bytes that start at record starts.
// A line break ends a record iff an even number of quote bytes precede it (doubled quotes keep
// the parity; the tokenizer rejects quotes anywhere else), so one pass of Buffer.indexOf over the
// quotes finds the boundaries, whatever the blocksize.
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
  /** Physical line number (1-based) at `start`, or null when planning did not count lines
   *  (every chunk but the first): chunkFirstLine() counts them when a message needs one. */
  firstLine: number | null;
  /** A place whose line is known (the first data record), to count from. */
  lineOrigin: { offset: number; line: number };
}

const READ_BYTES = 8 << 20;

/**
 * Only quote bytes are scanned over the whole file (one memchr per block when there are none);
 * line breaks are looked up just at the cut points. Line numbers are not counted here: they are
 * only needed for messages, which compute them on demand (chunkFirstLine).
 */
export async function planCsvChunks(layout: CsvLayout, opts: CsvOptions, blocksize: number): Promise<CsvChunk[]> {
  if (!(blocksize >= 1)) throw new UsageError(`--blocksize must be positive, got ${blocksize}`);
  const quote = dialectOf(opts).quote;
  const { path, displayName, fileSize } = layout;
  const lineOrigin = { offset: layout.dataStart, line: layout.dataStartLine };
  const chunk = (start: number, end: number): CsvChunk =>
    ({ path, displayName, start, end, firstLine: start === layout.dataStart ? layout.dataStartLine : null, lineOrigin });
  const chunks: CsvChunk[] = [];
  let chunkStart = layout.dataStart;
  let nextCut = chunkStart + blocksize;
  let insideQuotes = false;
  const { fd } = openInput(path, displayName);
  try {
    for (let at = layout.dataStart; at < fileSize; at += READ_BYTES) {
      const buf = readBytes(fd, at, Math.min(READ_BYTES, fileSize - at));
      const quotes: number[] = [];
      if (quote >= 0) for (let q = buf.indexOf(quote); q >= 0; q = buf.indexOf(quote, q + 1)) quotes.push(q);
      // A cut goes after the first line break at or past nextCut - 1 that lies outside quotes.
      for (let from = Math.max(0, nextCut - 1 - at); from < buf.length;) {
        const nl = buf.indexOf(LF, from);
        if (nl < 0) break;
        if (insideQuotes !== (quotesBefore(quotes, nl) % 2 === 1)) { from = nl + 1; continue; }
        const after = at + nl + 1;
        if (after >= fileSize) break;
        chunks.push(chunk(chunkStart, after));
        chunkStart = after;
        nextCut = after + blocksize;
        from = Math.max(nl + 1, nextCut - 1 - at);
      }
      if (quotes.length % 2 === 1) insideQuotes = !insideQuotes;
    }
  } finally {
    closeSync(fd);
  }
  // The rest (also the one empty chunk of a header-only file, so readers still see the schema).
  if (chunkStart < fileSize || chunks.length === 0) chunks.push(chunk(chunkStart, fileSize));
  return chunks;
}

/** How many of the sorted positions `quotes` lie before `pos`. */
function quotesBefore(quotes: number[], pos: number): number {
  let lo = 0, hi = quotes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (quotes[mid] < pos) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/** The physical line at the chunk's start, counting line breaks from its line origin if needed. */
export function chunkFirstLine(chunk: CsvChunk): number {
  if (chunk.firstLine !== null) return chunk.firstLine;
  const { fd } = openInput(chunk.path, chunk.displayName);
  let line = chunk.lineOrigin.line;
  try {
    for (let at = chunk.lineOrigin.offset; at < chunk.start; at += READ_BYTES) {
      const buf = readBytes(fd, at, Math.min(READ_BYTES, chunk.start - at));
      for (let nl = buf.indexOf(LF); nl >= 0; nl = buf.indexOf(LF, nl + 1)) line++;
    }
  } finally {
    closeSync(fd);
  }
  chunk.firstLine = line;
  return line;
}
