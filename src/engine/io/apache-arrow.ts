// apache-arrow, loaded through its CommonJS build (Arrow.node.js, the same Node build as the ESM
// one): Node imports its ~150-module ESM tree in ~135 ms, the CommonJS tree in ~65 ms.
// Every gpuframe module takes Arrow from here, never from 'apache-arrow' directly, so that all
// Arrow objects come from one copy of the library (instanceof checks inside it depend on that);
// types come from 'apache-arrow' with `import type`.
// The single-file builds it ships (Arrow.es*.min.js) load in ~20 ms but are the browser build
// with its protected members renamed, which arrow-writer.ts overrides; they cannot be used.

import { createRequire } from 'node:module';
import type * as Arrow from 'apache-arrow';

export const arrow: typeof Arrow = createRequire(import.meta.url)('apache-arrow');
