// Range partitioning of groups by key: parts cover consecutive key ranges, so finalising the parts
// one by one, in order, yields the globally sorted result without a merge of sorted runs.

import { columnLength, concatBatches, takeColumn, type Column, type Schema } from '../../batch.js';
import { groupRowsByKeys, sortIndicesByKeys } from '../sort.js';

/** Up to `parts - 1` splitter keys taken evenly from the sorted `keys` (`length` rows; a sample of all keys). */
export function chooseSplitters(keys: Column[], length: number, parts: number): Column[] {
  const order = sortIndicesByKeys(keys, length);
  const picks: number[] = [];
  for (let i = 1; i < parts; i++) {
    const at = Math.floor((i * length) / parts);
    if (at > 0 && at < length) picks.push(order[at]);
  }
  return keys.map((c) => takeColumn(c, Int32Array.from(picks)));
}

/**
 * For each of `length` key rows, the index of its range: the number of splitters <= its key.
 * Splitters and keys are grouped together by value (groupRowsByKeys, groups in key order), so each
 * key's range is the count of splitters in its group and the groups before it.
 */
export function rangeOfKeys(keys: Column[], length: number, splitters: Column[]): Int32Array {
  const nSplit = splitters.length === 0 ? 0 : columnLength(splitters[0]);
  const schema: Schema = keys.map((c, i) => ({ name: `k${i}`, type: c.type }));
  const both = concatBatches(schema, [
    { schema, length: nSplit, columns: splitters },
    { schema, length, columns: keys },
  ]);
  const { groups, groupOfRow } = groupRowsByKeys(both.columns, both.length);
  const splittersUpTo = new Int32Array(groups);
  for (let s = 0; s < nSplit; s++) splittersUpTo[groupOfRow[s]]++;
  for (let g = 1; g < groups; g++) splittersUpTo[g] += splittersUpTo[g - 1];
  const range = new Int32Array(length);
  for (let i = 0; i < length; i++) range[i] = splittersUpTo[groupOfRow[nSplit + i]];
  return range;
}
