// Byte sizes on the command line: 64MB, 8GB, 1.5G, 512k, or plain bytes (powers of 1024).

import { totalmem } from 'node:os';
import { UsageError } from '../engine/errors.js';

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3, t: 1024 ** 4, tb: 1024 ** 4, tib: 1024 ** 4 };

export function parseSize(text: string, flag: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const unit = m ? UNITS[m[2].toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new UsageError(`${flag} expects a size like 64MB or 8GB, got '${text}'`);
  const bytes = Math.floor(Number(m[1]) * unit);
  if (bytes <= 0) throw new UsageError(`${flag} must be positive, got '${text}'`);
  return bytes;
}

/** The run's --memory-limit in bytes: the flag's size, else half the RAM. */
export function memoryLimitOf(flag: string | undefined): number {
  return flag ? parseSize(flag, '--memory-limit') : Math.floor(totalmem() / 2);
}
