// Where a worker process's entry script is, for fork().

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RuntimeFailure } from '../errors.js';

/** A compiled worker entry next to this file; under vitest (running .ts sources) the built copy in dist/. */
export function workerEntry(file: string): string {
  const here = fileURLToPath(new URL(`./${file}`, import.meta.url));
  if (existsSync(here)) return here;
  const built = here.replace(/([/\\])src([/\\])engine/, '$1dist$2engine');
  if (existsSync(built)) return built;
  throw new RuntimeFailure(`cannot find the worker entry (${here}); run \`npm run build\` first`);
}
