// Every test file, and every process a test starts, writes its temporary files under one fresh
// directory (TMPDIR, which os.tmpdir() reads), removed when the run ends: the suite leaves no
// temp directories behind, however a test ends.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'gpuframe-tests-'));
  process.env.TMPDIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
