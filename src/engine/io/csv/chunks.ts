// Splits a CSV file's data into chunks of about `blocksize` bytes that start at record starts.
// A line break ends a record iff an even number of quote bytes precede it (doubled quotes keep
// the parity; the tokenizer rejects quotes anywhere else), so quote parity finds the boundaries,
// whatever the blocksize (cut-points.ts).
import { closeSync } from 'node:fs';
import { UsageError } from '../../errors.js';
import { findCuts, guessCuts, worthGuessing, type CutRequest } from './cut-points.js';
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
 * Cut points come from cut-points.ts (a fixed grid of blocksize, each moved to the next record
 * end; quote parity counted in parallel for large files). Line numbers are not counted here: they
 * are only needed for messages, which compute them on demand (chunkFirstLine).
 */
export async function planCsvChunks(layout: CsvLayout, opts: CsvOptions, blocksize: number): Promise<CsvChunk[]> {
  checkBlocksize(blocksize);
  return chunksAt(layout, await findCuts(cutRequest(layout, opts), layout.dataStart, blocksize));
}

/** Thrown (by `confirm` of guessCsvChunks) when guessed cuts were not all record ends. */
export class GuessedCutsWrong extends Error {
  constructor(displayName: string) {
    super(`${displayName}: a quoted field holds a line break at a chunk boundary; the chunks are planned again`);
  }
}

/**
 * planCsvChunks' chunks without its pass over a large file: cut where each grid point's next line
 * break is (cut-points.ts guessCuts). A guess is wrong only where a quoted field's line break spans
 * a grid point, and then the chunk before it ends inside quotes, which every reader refuses (the
 * CPU tokenizer's "unterminated quoted field"; the GPU path sends such a chunk to it). So chunks
 * that all read without error were cut right, and a chunk whose predecessors all read is right.
 * `confirm` (started on first call, once) runs findCuts and rejects with GuessedCutsWrong when
 * the guesses differ: callers use it to tell a wrong guess from an error in the data, and before
 * results leave the run. Small files (or quoting off) get exact chunks and `confirm` null.
 */
export async function guessCsvChunks(layout: CsvLayout, opts: CsvOptions, blocksize: number): Promise<{ chunks: CsvChunk[]; confirm: (() => Promise<void>) | null }> {
  checkBlocksize(blocksize);
  const req = cutRequest(layout, opts);
  if (!worthGuessing(req, layout.dataStart)) return { chunks: await planCsvChunks(layout, opts, blocksize), confirm: null };
  const guessed = guessCuts(req, layout.dataStart, blocksize);
  let confirmed: Promise<void> | null = null;
  const confirm = () => (confirmed ??= findCuts(req, layout.dataStart, blocksize).then((exact) => {
    if (exact.length !== guessed.length || exact.some((c, i) => c !== guessed[i])) throw new GuessedCutsWrong(layout.displayName);
  }));
  return { chunks: chunksAt(layout, guessed), confirm };
}

function checkBlocksize(blocksize: number): void {
  if (!(blocksize >= 1)) throw new UsageError(`--blocksize must be positive, got ${blocksize}`);
}

function cutRequest(layout: CsvLayout, opts: CsvOptions): CutRequest {
  return { path: layout.path, displayName: layout.displayName, quote: dialectOf(opts).quote, fileSize: layout.fileSize };
}

/** Chunks from the data start to each cut and from the last cut to the end of the file. */
function chunksAt(layout: CsvLayout, cuts: readonly number[]): CsvChunk[] {
  const { path, displayName, fileSize } = layout;
  const lineOrigin = { offset: layout.dataStart, line: layout.dataStartLine };
  // The last chunk runs to the end (also the one empty chunk of a header-only file, so readers still see the schema).
  const starts = [layout.dataStart, ...cuts];
  return starts.map((start, i) => ({
    path, displayName, start, end: i + 1 < starts.length ? starts[i + 1] : fileSize,
    firstLine: start === layout.dataStart ? layout.dataStartLine : null, lineOrigin,
  }));
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
