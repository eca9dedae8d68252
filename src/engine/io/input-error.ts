// How a failure of a format library reading an input file reaches the user.

import { DataError, GpuframeError, UsageError } from '../errors.js';

/** A reader failure as the error users see: a missing file is a usage error; anything else
 *  (corrupt, truncated, not this format) is a DataError naming the file. */
export function inputError(err: unknown, path: string, format: string): Error {
  if (err instanceof GpuframeError) return err;
  if ((err as NodeJS.ErrnoException)?.code === 'ENOENT') return new UsageError(`input file not found: ${path}`);
  const msg = err instanceof Error ? err.message : String(err);
  return new DataError(`not a readable ${format} file (corrupt or truncated?): ${msg}`, { file: path });
}
