// Where a CSV file's chunks are cut. Cut k goes after the first record end (a line break outside
// quotes) at or after byte dataStart + k·blocksize − 1: a fixed grid, so each cut needs only the
// quote parity at its grid point, never the cut before it. That makes planning parallel:
//   1. the file is split at the grid points into spans whose quote bytes are counted (mod 2),
//      in worker threads for large files (a memchr per 8 MB when there are no quotes);
//   2. the parent, now knowing the parity at every grid point, reads forward from each one to
//      its record end (usually a few bytes).
// The cuts are the same whatever the number of threads.

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

/** Quote bytes in each span [starts[i], ends[i]) of the file, mod 2. */
export function quoteParities(req: CutRequest, spans: readonly [number, number][]): number[] {
  const { fd } = openInput(req.path, req.displayName);
  try {
    return spans.map(([start, end]) => {
      let parity = 0;
      for (let at = start; at < end; at += READ_BYTES) {
        const buf = readBytes(fd, at, Math.min(READ_BYTES, end - at));
        for (let q = buf.indexOf(req.quote); q >= 0; q = buf.indexOf(req.quote, q + 1)) parity ^= 1;
      }
      return parity;
    });
  } finally {
    closeSync(fd);
  }
}

/** The offset after the first record end at or after `from`, where `inside` says whether `from` is within quotes; -1 if the file ends first. */
function recordEndFrom(fd: number, req: CutRequest, from: number, inside: number): number {
  for (let at = from; at < req.fileSize; at += PROBE_BYTES) {
    const buf = readBytes(fd, at, Math.min(PROBE_BYTES, req.fileSize - at));
    for (let pos = 0; ;) {
      const nl = buf.indexOf(LF, pos);
      const q = req.quote >= 0 ? buf.indexOf(req.quote, pos) : -1;
      if (q >= 0 && (nl < 0 || q < nl)) { inside ^= 1; pos = q + 1; continue; }
      if (nl < 0) break;
      if (inside === 0) return at + nl + 1;
      pos = nl + 1;
    }
  }
  return -1;
}

/**
 * The cut offsets (ascending, distinct, each < fileSize) of the data in [dataStart, fileSize).
 * `threads` only changes how the work is shared, never the result.
 */
export async function findCuts(req: CutRequest, dataStart: number, blocksize: number, threads = defaultThreads(req.fileSize - dataStart)): Promise<number[]> {
  const searchFrom: number[] = [];
  for (let g = dataStart + blocksize; g < req.fileSize; g += blocksize) searchFrom.push(g - 1);
  const bounds = [dataStart, ...searchFrom];
  const spans = searchFrom.map((s, i): [number, number] => [bounds[i], s]);
  const parities = req.quote < 0 ? spans.map(() => 0) : threads > 1 && spans.length > 1 ? await parallelParities(req, spans, threads) : quoteParities(req, spans);
  const cuts: number[] = [];
  const { fd } = openInput(req.path, req.displayName);
  try {
    let inside = 0; // the data starts at a record start, outside quotes
    searchFrom.forEach((from, i) => {
      inside ^= parities[i];
      if (cuts.length > 0 && cuts[cuts.length - 1] > from) return; // this record end was found already
      const at = recordEndFrom(fd, req, from, inside);
      if (at >= 0 && at < req.fileSize && (cuts.length === 0 || at > cuts[cuts.length - 1])) cuts.push(at);
    });
  } finally {
    closeSync(fd);
  }
  return cuts;
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
