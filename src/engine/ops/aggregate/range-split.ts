// Range partitioning of groups by key, for aggregations whose groups do not fit in memory:
// parts cover consecutive key ranges, so finalising the parts one by one, in order, yields the
// globally sorted result without a merge of sorted runs.

import { columnLength, concatBatches, takeColumn, type Batch, type Column } from '../../batch.js';
import { sortIndicesByKeys } from '../sort.js';
import type { PartialAggregate } from './partial.js';

/** Up to `parts - 1` splitter keys taken evenly from the sorted keys of `sample`. */
export function chooseSplitters(sample: PartialAggregate, parts: number): Column[] {
  const order = sortIndicesByKeys(sample.keys, sample.groups);
  const picks: number[] = [];
  for (let i = 1; i < parts; i++) {
    const at = Math.floor((i * sample.groups) / parts);
    if (at > 0 && at < sample.groups) picks.push(order[at]);
  }
  return sample.keys.map((c) => takeColumn(c, Int32Array.from(picks)));
}

/**
 * For each group of `p`, the index of its range: the number of splitters <= its key.
 * Splitters go first in one stable sort with the keys, so a key equal to a splitter sorts after it.
 */
export function rangeOfGroups(p: PartialAggregate, splitters: Column[]): Int32Array {
  const nSplit = splitters.length === 0 ? 0 : columnLength(splitters[0]);
  const schema = p.schema.slice(0, p.keys.length);
  const both: Batch = concatBatches(schema, [
    { schema, length: nSplit, columns: splitters },
    { schema, length: p.groups, columns: p.keys },
  ]);
  const order = sortIndicesByKeys(both.columns, both.length);
  const range = new Int32Array(p.groups);
  let passed = 0;
  for (const row of order) {
    if (row < nSplit) passed++;
    else range[row - nSplit] = passed;
  }
  return range;
}

