// Hash partitioning for partitioned joins: both sides split by the same key hash, so equal keys
// (int64 and float64 alike when equal as numbers) land in the same bucket. Rows keep their order.
import { takeBatch, type Batch } from '../../batch.js';
import { requireColumn } from '../../errors.js';
import { bucketOf, hashKeys } from '../keys.js';

export function hashPartition(batch: Batch, keyColumns: string[], parts: number): Batch[] {
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
  return rows.map((r) => takeBatch(batch, r));
}
