// Where a CSV file's chunks are cut. Cut k goes after the first record end (a line break outside
// quotes) at or after byte dataStart + k·blocksize − 1: a fixed grid, so each cut needs only the
// quote parity at its grid point, never the cut before it. That makes planning parallel: for a
// large file, worker threads count the quote bytes (mod 2) of the spans between grid points (a
// memchr per 8 MB when there are none); a small one is walked in this thread. Then each grid
// point reads forward to its record end (usually a few bytes); grid points inside a record that
// a cut already ended are skipped. The cuts are the same whatever the number of threads.

import { closeSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { LF } from './options.js';
import { openInput, readBytes } from './input-file.js';

const READ_BYTES = 8 << 20;
const PROBE_BYTES = 64 << 10;
/** Files at least this large are scanned by worker threads (GPUFRAME_PLAN_THREADS forces a count). */
const THREADED_BYTES = 256 << 20;

export interface CutRequest {
  path: string;
  displayName: string;
  /** Quote byte, or -1 when quoting is off. */
  quote: number;
  fileSize: number;
}

/** Reads of a file through one cached window, so that nearby reads cost no system call. */
class FileWindow {
  private buf: Buffer = Buffer.alloc(0);
  private start = 0;

  constructor(private readonly fd: number, private readonly fileSize: number, private readonly windowBytes: number) {}

  /** The file's bytes from `at` on (at most a window of them; empty at the end of the file). */
  from(at: number): Buffer {
    if (at >= this.fileSize) return Buffer.alloc(0);
    if (at < this.start || at >= this.start + this.buf.length) {
      this.buf = readBytes(this.fd, at, Math.max(0, Math.min(this.windowBytes, this.fileSize - at)));
      this.start = at;
    }
    return this.buf.subarray(at - this.start);
  }
}

/** Quote bytes in each span [start, end) of the file, mod 2; the spans are contiguous and in order. */
function spanParities(win: FileWindow, quote: number, spans: readonly [number, number][]): number[] {
  const out: number[] = [];
  if (spans.length === 0) return out;
  const end = spans[spans.length - 1][1];
  let parity = 0;
  let i = 0;
  // One forward pass: each quote flips the parity of the span it falls in.
  for (let at = spans[0][0]; at < end;) {
    const buf = win.from(at).subarray(0, end - at);
    if (buf.length === 0) break;
    for (let q = buf.indexOf(quote); q >= 0; q = buf.indexOf(quote, q + 1)) {
      for (; spans[i][1] <= at + q; i++) { out.push(parity); parity = 0; }
      parity ^= 1;
    }
    at += buf.length;
  }
  for (; i < spans.length; i++) { out.push(parity); parity = 0; }
  return out;
}

/** spanParities over the file of `req` (what a planning thread runs). */
export function quoteParities(req: CutRequest, spans: readonly [number, number][]): number[] {
  const { fd } = openInput(req.path, req.displayName);
  try {
    return spanParities(new FileWindow(fd, req.fileSize, READ_BYTES), req.quote, spans);
  } finally {
    closeSync(fd);
  }
}

/**
 * The offset after the first record end at or after `from`, where `inside` says whether `from` is
 * within quotes; -1 if the file ends first.
 */
function recordEndFrom(win: FileWindow, quote: number, from: number, inside: number): number {
  for (let at = from; ;) {
    const buf = win.from(at);
    if (buf.length === 0) return -1;
    for (let pos = 0; ;) {
      const nl = buf.indexOf(LF, pos);
      const q = quote >= 0 ? buf.indexOf(quote, pos) : -1;
      if (q >= 0 && (nl < 0 || q < nl)) { inside ^= 1; pos = q + 1; continue; }
      if (nl < 0) break;
      if (inside === 0) return at + nl + 1;
      pos = nl + 1;
    }
    at += buf.length;
  }
}

/**
 * The cut offsets (ascending, distinct, each < fileSize) of the data in [dataStart, fileSize).
 * `threads` only changes how the work is shared, never the result.
 */
export async function findCuts(req: CutRequest, dataStart: number, blocksize: number, threads = defaultThreads(req.fileSize - dataStart)): Promise<number[]> {
  const { fd } = openInput(req.path, req.displayName);
  try {
    // A small file is read once; in a large one each cut needs only the bytes near it.
    const win = new FileWindow(fd, req.fileSize, req.fileSize - dataStart <= READ_BYTES ? READ_BYTES : PROBE_BYTES);
    const parityAt = req.quote < 0 ? () => 0
      : threads > 1 ? await threadedParity(req, dataStart, blocksize, threads)
      : walkingParity(win, req.quote, dataStart);
    return cutsFrom(win, req, dataStart, blocksize, parityAt);
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether guessCuts is worth it: quotes are on (else findCuts reads nothing either) and the file is
 * large enough that findCuts scans it in threads (0.5 s for 10 GB on 16 threads of the H200
 * machine; GPUFRAME_PLAN_THREADS forces threads, and so guessing, for small files in tests).
 */
export function worthGuessing(req: CutRequest, dataStart: number): boolean {
  return req.quote >= 0 && defaultThreads(req.fileSize - dataStart) > 1;
}

/**
 * findCuts' answer when no grid point lies inside a quoted field (no quoted line break spans
 * one), from the bytes near each grid point alone: the first line break at or after it. Tasks can
 * start on these at once; the two lists are equal exactly when every guessed cut is a record end
 * (chunks.ts guessCsvChunks says when findCuts checks).
 */
export function guessCuts(req: CutRequest, dataStart: number, blocksize: number): number[] {
  const { fd } = openInput(req.path, req.displayName);
  try {
    return cutsFrom(new FileWindow(fd, req.fileSize, PROBE_BYTES), { ...req, quote: -1 }, dataStart, blocksize, () => 0);
  } finally {
    closeSync(fd);
  }
}

/** The cuts, given whether each grid search start lies inside quotes. */
function cutsFrom(win: FileWindow, req: CutRequest, dataStart: number, blocksize: number, parityAt: (pos: number) => number): number[] {
  const cuts: number[] = [];
  // Grid point g searches from g − 1; one inside the record a cut already ended is skipped.
  for (let g = dataStart + blocksize; g < req.fileSize;) {
    const at = recordEndFrom(win, req.quote, g - 1, parityAt(g - 1));
    // No record end after this point means none after any later one either (an unclosed quote).
    if (at < 0 || at >= req.fileSize) break;
    cuts.push(at);
    g = dataStart + Math.ceil((at + 1 - dataStart) / blocksize) * blocksize;
  }
  return cuts;
}

/** Whether each position (asked in increasing order) is inside quotes, by counting quotes up to it. */
function walkingParity(win: FileWindow, quote: number, dataStart: number): (pos: number) => number {
  let at = dataStart, inside = 0; // the data starts at a record start, outside quotes
  return (pos) => {
    if (pos > at) {
      inside ^= spanParities(win, quote, [[at, pos]])[0];
      at = pos;
    }
    return inside;
  };
}

/** Whether each grid search start lies inside quotes, from quote parities counted in threads per grid span. */
async function threadedParity(req: CutRequest, dataStart: number, blocksize: number, threads: number): Promise<(pos: number) => number> {
  const spans: [number, number][] = [];
  for (let from = dataStart, g = dataStart + blocksize; g < req.fileSize; from = g - 1, g += blocksize) spans.push([from, g - 1]);
  const parities = spans.length > 0 ? await parallelParities(req, spans, threads) : [];
  const inside: number[] = [];
  parities.reduce((acc, p, i) => (inside[i] = acc ^ p), 0);
  return (pos) => inside[Math.round((pos + 1 - dataStart) / blocksize) - 1];
}

function defaultThreads(bytes: number): number {
  const forced = Number(process.env.GPUFRAME_PLAN_THREADS);
  if (Number.isInteger(forced) && forced > 0) return forced;
  return bytes >= THREADED_BYTES ? Math.min(16, availableParallelism()) : 1;
}

/** quoteParities on worker threads, each taking a contiguous run of spans. */
async function parallelParities(req: CutRequest, spans: [number, number][], threads: number): Promise<number[]> {
  const count = Math.min(threads, spans.length);
  const per = Math.ceil(spans.length / count);
  const script = new URL('./cut-points-thread.js', import.meta.url);
  const parts = await Promise.all(Array.from({ length: count }, (_, t) => new Promise<number[]>((resolve, reject) => {
    const worker = new Worker(script, { workerData: { req, spans: spans.slice(t * per, (t + 1) * per) } });
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => { if (code !== 0) reject(new Error(`chunk planning thread exited with code ${code}`)); });
  })));
  return parts.flat();
}
