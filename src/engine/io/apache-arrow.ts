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

/**
 * Schema.assign, as apache-arrow 21 writes it, but finding each field by a map of names instead of
 * a findIndex over the fields. Every RecordBatch constructor calls it with the batch's own fields
 * (ensureSameLengthData), also inside the library's readers, so each record batch of 10,000
 * columns cost ~0.6 s (50M name comparisons). Same fields, metadata and dictionaries as the
 * library's: a field of a name already present (its first) is replaced by the new one carrying
 * both metadata maps merged; the others are appended.
 */
function assignByName(this: Arrow.Schema, ...args: unknown[]): Arrow.Schema {
  const S = arrow.Schema;
  const other = args[0] instanceof S ? args[0] : new S((Array.isArray(args[0]) ? args[0] : args) as Arrow.Field[]);
  const fields = [...this.fields];
  const at = new Map<string, number>();
  fields.forEach((f, i) => { if (!at.has(f.name)) at.set(f.name, i); });
  const added: Arrow.Field[] = [];
  for (const f of other.fields) {
    const i = at.get(f.name);
    if (i === undefined) added.push(f);
    else fields[i] = f.clone({ metadata: mergeMaps(fields[i].metadata, f.metadata) });
  }
  const dictionaries = new Map([...this.dictionaries, ...new S(added).dictionaries]);
  return new S([...fields, ...added], mergeMaps(this.metadata, other.metadata), dictionaries);
}

function mergeMaps<K, V>(a: Map<K, V> | null | undefined, b: Map<K, V> | null | undefined): Map<K, V> {
  return new Map([...(a ?? []), ...(b ?? [])]);
}

(arrow.Schema.prototype as { assign: unknown }).assign = assignByName;
