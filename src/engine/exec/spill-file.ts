// Spill files (join buckets, aggregate ranges) under the run's temp dir. A write that fails (full
// disk, quota) stops the run with a message naming the temp dir, not an internal error.

import { writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { RuntimeFailure } from '../errors.js';
import { chargeWrite } from './fault-hook.js';

export function writeSpillFile(path: string, bytes: Uint8Array): void {
  try {
    chargeWrite(path, bytes.byteLength);
    writeFileSync(path, bytes);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOSPC' ? 'no space left on device' : e.message;
    throw new RuntimeFailure(`cannot write spill file in ${dirname(path)}: ${why} (point TMPDIR at a larger disk or raise --memory-limit)`);
  }
}
