// Where encoded output bytes go: an atomically replaced file or a stream such as stdout.
// Both buffer small writes into ~1 MiB pieces so encoders may write per row cheaply.

import { randomBytes } from 'node:crypto';
import { accessSync, constants, statSync, unlinkSync, type Stats } from 'node:fs';
import { type FileHandle, open, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { RuntimeFailure } from '../../errors.js';
import { chargeWrite } from '../../exec/fault-hook.js';
import { removeStaleEntries } from '../../stale-files.js';

export interface ByteSink {
  /** Writes `bytes`; once the promise resolves the sink holds no reference to them, so the caller
   *  may reuse their memory. */
  write(bytes: Uint8Array): Promise<void>;
  /** Flushes and completes the output (for files: fsync and rename into place). */
  close(): Promise<void>;
  /** Drops the output (for files: removes the temporary file). */
  abort(): Promise<void>;
}

const FLUSH_BYTES = 1 << 20;

/** Copies small writes into one buffer and hands them on in large pieces. */
abstract class BufferedSink implements ByteSink {
  private readonly pending = Buffer.allocUnsafe(FLUSH_BYTES);
  private size = 0;

  async write(bytes: Uint8Array): Promise<void> {
    if (this.size + bytes.byteLength > FLUSH_BYTES) await this.flush();
    if (bytes.byteLength >= FLUSH_BYTES) {
      await this.writeOut(bytes);
      return;
    }
    this.pending.set(bytes, this.size);
    this.size += bytes.byteLength;
  }

  protected async flush(): Promise<void> {
    if (this.size === 0) return;
    await this.writeOut(this.pending.subarray(0, this.size));
    this.size = 0;
  }

  /** Writes all of `bytes`, holding no reference to them once it resolves. */
  protected abstract writeOut(bytes: Uint8Array): Promise<void>;
  abstract close(): Promise<void>;
  abstract abort(): Promise<void>;
}

const TEMP_PATTERN = /^\..+\.gpuframe-(\d+)-[0-9a-f]+\.tmp$/;

function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.gpuframe-${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
}

/** Fails now, with the message opening would give, when `path` cannot be written (for an output opened only after long work). */
export function checkWritable(path: string): void {
  const existing = statOrNull(path);
  if (existing?.isDirectory()) throw isADirectory(path);
  try {
    accessSync(existing ? path : dirname(path), constants.W_OK);
  } catch (err) {
    throw cannotWrite(path, err);
  }
}

function isADirectory(path: string): RuntimeFailure {
  return new RuntimeFailure(`cannot write output '${path}': it is a directory`);
}

function statOrNull(path: string): Stats | null {
  try { return statSync(path); } catch { return null; }
}

function cannotWrite(path: string, err: unknown): RuntimeFailure {
  if (err instanceof RuntimeFailure) return err; // already says what and where
  const e = err as NodeJS.ErrnoException;
  const why = e?.code === 'ENOENT' ? 'its directory does not exist'
    : e?.code === 'EACCES' || e?.code === 'EPERM' ? 'permission denied'
    : e?.code === 'ENOSPC' ? 'no space left on device'
    : e?.message ?? String(err);
  return new RuntimeFailure(`cannot write output '${path}': ${why}`);
}

/** Temp files not yet renamed or removed. process.exit (the Ctrl-C handler, a failing command)
 *  gives pending async removals no chance to run, so these go synchronously on 'exit'. */
const liveTempPaths = new Set<string>();
process.on('exit', () => {
  for (const p of liveTempPaths) {
    try { unlinkSync(p); } catch { /* already gone */ }
  }
});

/**
 * Writes `<dir>/.<name>.gpuframe-<pid>-<random>.tmp`; close() fsyncs and renames it onto the
 * destination, so the destination never holds a partial file. A destination that exists and is
 * not a regular file (a FIFO, /dev/stdout, a terminal) is written in place: a rename would
 * replace it with a file nobody reads.
 */
export class AtomicFileSink extends BufferedSink {
  private closed = false;
  private constructor(private readonly path: string, private readonly tempPath: string, private readonly handle: FileHandle, private readonly inPlace: boolean) {
    super();
  }

  static async open(path: string): Promise<AtomicFileSink> {
    cleanStaleTempFiles(dirname(path));
    const existing = await stat(path).catch(() => null);
    if (existing?.isDirectory()) throw isADirectory(path);
    const inPlace = existing !== null && !existing.isFile();
    const tempPath = inPlace ? path : tempPathFor(path);
    try {
      const sink = new AtomicFileSink(path, tempPath, await open(tempPath, inPlace ? 'w' : 'wx'), inPlace);
      if (!inPlace) liveTempPaths.add(tempPath);
      return sink;
    } catch (err) {
      throw cannotWrite(path, err);
    }
  }

  protected async writeOut(bytes: Uint8Array): Promise<void> {
    try {
      chargeWrite(this.tempPath, bytes.byteLength);
      let done = 0;
      while (done < bytes.byteLength) {
        const { bytesWritten } = await this.handle.write(bytes, done, bytes.byteLength - done);
        done += bytesWritten;
      }
    } catch (err) {
      // A FIFO whose reader went away: the run stops as it does when stdout's reader does (exit 141).
      if (this.inPlace && (err as NodeJS.ErrnoException).code === 'EPIPE') throw err;
      throw cannotWrite(this.path, err);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.flush();
      if (!this.inPlace) await this.handle.sync();
      await this.handle.close();
      this.closed = true;
      if (!this.inPlace) await rename(this.tempPath, this.path);
      liveTempPaths.delete(this.tempPath);
    } catch (err) {
      await this.abort();
      throw cannotWrite(this.path, err);
    }
  }

  async abort(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      await this.handle.close().catch(() => {});
    }
    if (this.inPlace) return;
    await unlink(this.tempPath).catch(() => {});
    liveTempPaths.delete(this.tempPath);
  }
}

/** Writes to a Node stream (stdout), one piece at a time: each write waits until the stream has
 *  handed the bytes on, so memory stays bounded and the caller may reuse them. */
export class StreamSink extends BufferedSink {
  constructor(private readonly out: NodeJS.WritableStream) {
    super();
  }

  protected writeOut(bytes: Uint8Array): Promise<void> {
    // The callback also gets the stream's error (e.g. EPIPE, handled in base-command.ts).
    return new Promise((resolve, reject) => { this.out.write(bytes, (err) => (err ? reject(err) : resolve())); });
  }

  async close(): Promise<void> {
    await this.flush();
  }

  async abort(): Promise<void> {}
}

/** Removes temp files left in `dir` by killed runs (their pid is no longer alive). */
export function cleanStaleTempFiles(dir: string): void {
  removeStaleEntries(dir, (name) => {
    const m = TEMP_PATTERN.exec(name);
    return m ? { pid: Number(m[1]), minAgeMs: 0 } : null;
  });
}
