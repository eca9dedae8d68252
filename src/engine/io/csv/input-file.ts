// Opening CSV files and turning byte positions into the file:line:column users see.
import { openSync, read, readSync, fstatSync, closeSync } from 'node:fs';
import { promisify } from 'node:util';
import { DataError } from '../../errors.js';
import { reuseBytes } from '../scratch.js';
import type { CsvOptions } from './options.js';
import { countLineBreaks, type TokenizeProblems } from './tokenizer.js';

/** Opens a file for reading; a missing or unreadable file is a DataError naming it. */
export function openInput(path: string, displayName: string): { fd: number; size: number } {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : `cannot open (${code})`;
    throw new DataError(`${why}: ${displayName}`, { file: displayName });
  }
  const stat = fstatSync(fd);
  if (stat.isDirectory()) { closeSync(fd); throw new DataError(`is a directory: ${displayName}`, { file: displayName }); }
  return { fd, size: stat.size };
}

/** Bytes [start, start + length) of an open file (fewer at its end); into the process's scratch
 *  buffer of that name when one is given (io/scratch.ts). */
export function readBytes(fd: number, start: number, length: number, scratch?: string): Buffer {
  const buf = scratch === undefined ? Buffer.allocUnsafe(length) : reuseBytes(scratch, length);
  const got = readInto(fd, buf, start);
  return got === length ? buf : buf.subarray(0, got);
}

/** readInto on libuv's threads: the main thread goes on meanwhile (the view must stay valid until it resolves). */
export async function readIntoAsync(fd: number, view: Uint8Array, position: number): Promise<number> {
  let got = 0;
  while (got < view.length) {
    const { bytesRead } = await readAsync(fd, view, got, view.length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got;
}

const readAsync = promisify(read);

/** Fills `view` from the open file at `position`; how many bytes it got (fewer only at the end of the file). */
export function readInto(fd: number, view: Uint8Array, position: number): number {
  let got = 0;
  while (got < view.length) {
    const n = readSync(fd, view, got, view.length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

/** Maps positions in `buf` (whose byte `from` is on physical line `firstLine`) to locations.
 *  Remembers the last answer so that many warnings in one chunk stay linear. */
export class Locator {
  private lastPos: number;
  private lastLine = 0;

  /** `firstLine` may be a function: it is then asked only when a message needs a line. */
  constructor(readonly file: string, private readonly buf: Uint8Array, from: number, private firstLine: number | (() => number)) {
    this.lastPos = from;
    if (typeof firstLine === 'number') this.lastLine = firstLine;
  }

  line(pos: number): number {
    if (typeof this.firstLine === 'function') { this.lastLine = this.firstLine(); this.firstLine = this.lastLine; }
    if (pos < this.lastPos) return this.lastLine - countLineBreaks(this.buf, pos, this.lastPos);
    this.lastLine += countLineBreaks(this.buf, this.lastPos, pos);
    this.lastPos = pos;
    return this.lastLine;
  }

  error(message: string, pos: number, column?: number): DataError {
    return new DataError(message, { file: this.file, line: this.line(pos), column });
  }
}

/** Tokenizer problem handling for data records: syntax errors throw; ragged rows follow onBadLines. */
export function dataProblems(loc: Locator, expected: number, onBadLines: CsvOptions['onBadLines'],
                             onWarning?: (msg: string) => void): TokenizeProblems {
  return {
    fail(message, pos, column) { throw loc.error(message, pos, column); },
    ragged(recordStart, got) {
      if (onBadLines === 'skip') return;
      const message = `expected ${expected} fields, got ${got}`;
      const err = loc.error(onBadLines === 'warn' ? `${message}; row skipped` : message, recordStart, Math.min(got, expected) + 1);
      if (onBadLines === 'error') throw err;
      onWarning?.(err.message);
    },
  };
}
