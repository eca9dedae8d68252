// nunique(x): the number of distinct non-null x per group. Keeps the distinct (group, value) pairs in a
// KeyTable (so equality is exact, and -0/0 and NaNs count once); merging re-inserts the other side's pairs.
import { int64Words, type Column, type DType, type Int64Column } from '../../batch.js';
import { hashKeys, KeyTable } from '../keys.js';
import { int64FromCounts, type Accumulator, type AggState } from './state.js';

/** An int64 column holding the group ids (ids are < 2^31: written as (id, 0) words). */
function groupIdColumn(gids: Int32Array, length: number): Int64Column {
  const words = new Int32Array(2 * length);
  for (let i = 0; i < length; i++) words[2 * i] = gids[i];
  return { type: 'int64', values: new BigInt64Array(words.buffer), valid: null };
}

export class NuniqueAccumulator implements Accumulator {
  private pairs: KeyTable;

  constructor(type: DType) {
    this.pairs = new KeyTable(['int64', type]);
  }

  ensure(): void {}

  add(col: Column | null, gids: Int32Array, length: number): void {
    const c = col!;
    let skip: Uint8Array | null = null;
    for (let i = 0; i < length; i++) {
      if (gids[i] < 0 || (c.valid !== null && c.valid[i] === 0)) (skip ??= new Uint8Array(length))[i] = 1;
    }
    const cols = [groupIdColumn(gids, length), c];
    this.pairs.insert(cols, hashKeys(cols, length), length, skip);
  }

  merge(src: AggState, map: Int32Array): void {
    const [srcGroups, values] = src.pairs!;
    const n = values.type === 'string' ? values.offsets.length - 1 : values.values.length;
    const w = int64Words(srcGroups as Int64Column);
    const gids = new Int32Array(n);
    for (let i = 0; i < n; i++) gids[i] = map[w[2 * i]];
    this.add(values, gids, n);
  }

  state(): AggState {
    return { perGroup: [], pairs: this.pairs.keyColumns() };
  }

  pairCount(): number {
    return this.pairs.size;
  }

  finalize(groups: number): Column {
    const counts = new Float64Array(groups);
    const w = int64Words(this.pairs.keyColumns()[0] as Int64Column);
    for (let i = 0; i < this.pairs.size; i++) counts[w[2 * i]]++;
    return int64FromCounts(counts, groups);
  }
}
