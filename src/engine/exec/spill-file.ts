// Spill files under the run's temp dir: join shuffles and buckets, aggregate ranges, and the text
// workers encode for the output. A write that fails (full disk, quota) stops the run with a message
// naming the temp dir, not an internal error.

import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { RuntimeFailure } from '../errors.js';
import { reuseBytes } from '../io/scratch.js';
import { chargeWrite } from './fault-hook.js';
import type { SpillRange } from './fragment.js';

/** Writes `bytes` (or its parts, one after another) as the file at `path`. */
export function writeSpillFile(path: string, bytes: Uint8Array | readonly Uint8Array[]): void {
  const parts = bytes instanceof Uint8Array ? [bytes] : bytes;
  try {
    chargeWrite(path, parts.reduce((s, p) => s + p.byteLength, 0));
    const fd = openSync(path, 'w');
    try {
      for (const part of parts) {
        for (let at = 0; at < part.byteLength;) at += writeSync(fd, part, at);
      }
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    throw spillWriteFailure(path, err);
  }
}

/** What a failed write of a file in the run's temp dir (`path`) stops the run with. */
export function spillWriteFailure(path: string, err: unknown): RuntimeFailure {
  const e = err as NodeJS.ErrnoException;
  const why = e.code === 'ENOSPC' ? 'no space left on device' : e.message;
  return new RuntimeFailure(`cannot write spill file in ${dirname(path)}: ${why} (point TMPDIR at a larger disk or raise --memory-limit)`);
}

/** The bytes of one range of a spill file (in a buffer of their own: typed-array views need aligned starts). */
export function readSpillRange({ file, offset, length }: SpillRange): Uint8Array {
  const bytes = Buffer.allocUnsafeSlow(length);
  const fd = openSync(file, 'r');
  try {
    for (let at = 0; at < length;) {
      const got = readSync(fd, bytes, at, length - at, offset + at);
      if (got === 0) throw new Error(`spill file ${file} ends before byte ${offset + length}`);
      at += got;
    }
  } finally {
    closeSync(fd);
  }
  return bytes;
}

const DRAIN_PIECE = 16 << 20;

/** Hands the bytes of a spill file's range to `write` in pieces of at most 16 MB, in order, then
 *  removes the file. The pieces are views of one scratch buffer (io/scratch.ts), read again as
 *  soon as `write` resolves: a sink keeps no reference to what it was given (ByteSink.write). */
export async function drainSpillFile({ file, offset, length }: SpillRange, write: (bytes: Uint8Array) => Promise<void>): Promise<void> {
  const handle = await open(file, 'r');
  try {
    for (let at = 0; at < length;) {
      const piece = reuseBytes('drained spill', Math.min(DRAIN_PIECE, length - at));
      const { bytesRead } = await handle.read(piece, 0, piece.length, offset + at);
      if (bytesRead === 0) throw new Error(`spill file ${file} ends before byte ${offset + length}`);
      await write(piece.subarray(0, bytesRead));
      at += bytesRead;
    }
  } finally {
    await handle.close();
  }
  await rm(file, { force: true });
}

