// gzip input: recognised by its magic bytes (not only the .gz extension) and decompressed once,
// so that chunk planning and parallel chunk reads can seek in plain bytes.
import { createReadStream, createWriteStream, closeSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { DataError } from '../../errors.js';
import { openInput, readBytes } from './input-file.js';

/** True when the file starts with gzip's magic bytes (1f 8b), whatever its name. */
export function isGzipFile(path: string, displayName = path): boolean {
  const { fd } = openInput(path, displayName);
  try {
    const magic = readBytes(fd, 0, 2);
    return magic.length === 2 && magic[0] === 0x1f && magic[1] === 0x8b;
  } finally {
    closeSync(fd);
  }
}

/** The plain path to read: `path` itself, or a decompressed copy of it in a new folder under tmpDir; errors name `displayName`. */
export async function materializeCsvInput(path: string, displayName: string, tmpDir: string): Promise<string> {
  if (!isGzipFile(path, displayName)) return path;
  const dir = await mkdtemp(join(tmpDir, 'gpuframe-csv-'));
  const plain = join(dir, basename(path).replace(/\.gz$/i, '') || 'input.csv');
  try {
    await pipeline(createReadStream(path), createGunzip(), createWriteStream(plain));
  } catch (err) {
    throw new DataError(`cannot decompress gzip input: ${(err as Error).message}`, { file: displayName });
  }
  return plain;
}
