// Hash partitioning for partitioned joins: both sides split by the same key hash, so equal keys
// (int64 and float64 alike when equal as numbers) land in the same bucket. Rows keep their order,
// and each part says where its rows were in the batch (bucket-join.ts restores that order).
import { takeBatch, type Batch } from '../../batch.js';
import { requireColumn } from '../../errors.js';
import { bucketOf, hashKeys } from '../keys.js';

/** One bucket's rows of a batch, and their positions in it (ascending). */
export interface HashPart { batch: Batch; rows: Int32Array }

export function hashPartition(batch: Batch, keyColumns: string[], parts: number): HashPart[] {
  const names = batch.schema.map((f) => f.name);
  const keyCols = keyColumns.map((k) => {
    requireColumn(k, names, 'key column');
    return batch.columns[names.indexOf(k)];
  });
  const hashes = hashKeys(keyCols, batch.length);
  const bucket = new Int32Array(batch.length);
  const sizes = new Int32Array(parts);
  for (let i = 0; i < batch.length; i++) sizes[(bucket[i] = bucketOf(hashes[i], parts))]++;
  const rows = Array.from(sizes, (s) => new Int32Array(s));
  const fill = new Int32Array(parts);
  for (let i = 0; i < batch.length; i++) rows[bucket[i]][fill[bucket[i]]++] = i;
  return rows.map((r) => ({ batch: takeBatch(batch, r), rows: r }));
}
