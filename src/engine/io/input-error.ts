// How a failure of a format library reading an input file reaches the user.

import { DataError, GpuframeError, UsageError } from '../errors.js';

/** The file a reader opens (`path`) and what messages call it (`displayName`, the user's spelling). */
export interface InputName { path: string; displayName: string }

/** A reader failure as the error users see: a missing file is a usage error; anything else
 *  (corrupt, truncated, not this format) is a DataError naming the file. Named as the user wrote
 *  it, also where the library's own text quotes the path it opened (absolute in plans). */
export function inputError(err: unknown, file: InputName, format: string): Error {
  if (err instanceof GpuframeError) return err;
  if ((err as NodeJS.ErrnoException)?.code === 'ENOENT') return new UsageError(`input file not found: ${file.displayName}`);
  const msg = (err instanceof Error ? err.message : String(err)).replaceAll(file.path, file.displayName);
  return new DataError(`not a readable ${format} file (corrupt or truncated?): ${msg}`, { file: file.displayName });
}
