// Row order by key columns, shared by groupby output and anything else that sorts by keys.
// Order (DuckDB's): ascending; numbers with -0 == 0 and NaN after +Infinity; strings by UTF-8 byte
// order; false < true; nulls last.
import { int64Words, type Column, type StringColumn } from '../batch.js';
import { hashKeys, KeyTable } from './keys.js';

/** Compares row a with row b of one column: negative, 0 or positive. */
type RowCompare = (a: number, b: number) => number;

function compareNumbers(x: number, y: number): number {
  if (x < y) return -1;
  if (x > y) return 1;
  if (x === y) return 0; // also -0 vs 0
  return (x !== x ? 1 : 0) - (y !== y ? 1 : 0); // NaN last among numbers
}

/** Compares UTF-8 byte ranges [a0, a1) and [b0, b1) of two buffers lexicographically. */
export function compareBytes(da: Uint8Array, a0: number, a1: number, db: Uint8Array, b0: number, b1: number): number {
  const n = Math.min(a1 - a0, b1 - b0);
  for (let k = 0; k < n; k++) {
    const d = da[a0 + k] - db[b0 + k];
    if (d !== 0) return d;
  }
  return (a1 - a0) - (b1 - b0);
}

function valueComparer(col: Column): RowCompare {
  switch (col.type) {
    case 'int64':
    case 'timestamp': {
      const w = int64Words(col);
      return (a, b) => {
        const ha = w[2 * a + 1], hb = w[2 * b + 1];
        if (ha !== hb) return ha < hb ? -1 : 1;
        const la = w[2 * a] >>> 0, lb = w[2 * b] >>> 0;
        return la < lb ? -1 : la > lb ? 1 : 0;
      };
    }
    case 'float64': {
      const v = col.values;
      return (a, b) => compareNumbers(v[a], v[b]);
    }
    case 'bool': {
      const v = col.values;
      return (a, b) => v[a] - v[b];
    }
    case 'string': {
      const { offsets: o, data } = col as StringColumn;
      return (a, b) => compareBytes(data, o[a], o[a + 1], data, o[b], o[b + 1]);
    }
  }
}

/** Comparator of rows of one column, nulls last. */
export function columnComparer(col: Column): RowCompare {
  const cmp = valueComparer(col);
  const valid = col.valid;
  if (valid === null) return cmp;
  return (a, b) => {
    const va = valid[a], vb = valid[b];
    if (va === 1 && vb === 1) return cmp(a, b);
    return vb - va; // present (1) before null (0)
  };
}

/** Comparator of rows by several key columns, the first deciding first. */
export function rowComparer(cols: readonly Column[]): RowCompare {
  const cmps = cols.map(columnComparer);
  if (cmps.length === 1) return cmps[0];
  return (a, b) => {
    for (const c of cmps) {
      const d = c(a, b);
      if (d !== 0) return d;
    }
    return 0;
  };
}

/** Row indices 0..length ordered by the key columns (stable: ties keep row order). */
export function sortIndicesByKeys(cols: readonly Column[], length: number): Int32Array {
  if (cols.length === 1) return cols[0].type === 'string' ? comparisonSortIndices(cols, length) : radixSortIndices(cols[0], length);
  // Several columns: each column's values as ranks, then a stable radix sort by the ranks from the
  // last column to the first. A comparison sort of 940k groups by (string, int) took 2.3 s of an
  // 8 s group-by; most key columns of a multi-column key have few distinct values.
  let order: Int32Array | null = null;
  for (let c = cols.length - 1; c >= 0; c--) {
    const { ranks, distinct } = columnRanks(cols[c], length);
    order = radixSortByRank(order, ranks, distinct, length);
  }
  return order!;
}

function comparisonSortIndices(cols: readonly Column[], length: number): Int32Array {
  const idx = new Int32Array(length);
  for (let i = 0; i < length; i++) idx[i] = i;
  const cmp = rowComparer(cols);
  return idx.sort((a, b) => cmp(a, b) || a - b);
}

/**
 * Each row's rank among the column's distinct values in sort order (equal values, such as -0 and
 * 0, or two nulls, share one; nulls last), and how many distinct values there are. Strings: the
 * distinct values are found by hashing, and only those are sorted by comparison.
 */
function columnRanks(col: Column, length: number): { ranks: Uint32Array; distinct: number } {
  if (col.type === 'int64' || col.type === 'timestamp') {
    const counted = smallRangeRanks(col, length);
    if (counted !== null) return counted;
  }
  const ranks = new Uint32Array(length);
  if (col.type !== 'string') {
    const order = radixSortIndices(col, length);
    const same = columnComparer(col);
    let rank = 0;
    for (let j = 0; j < length; j++) {
      if (j > 0 && same(order[j - 1], order[j]) !== 0) rank++;
      ranks[order[j]] = rank;
    }
    return { ranks, distinct: length === 0 ? 0 : rank + 1 };
  }
  const table = new KeyTable(['string']);
  const ids = table.insert([col], hashKeys([col], length), length);
  const values = table.keyColumns();
  const rankOfId = new Uint32Array(table.size);
  comparisonSortIndices(values, table.size).forEach((id, rank) => { rankOfId[id] = rank; });
  for (let i = 0; i < length; i++) ranks[i] = rankOfId[ids[i]];
  return { ranks, distinct: table.size };
}

/**
 * columnRanks of an int64 column whose values span less than max(2^16, 4 × length), by counting
 * the values present (a distance, a year, a code): no sort. Null when the span is larger or a
 * value is past 2^53.
 */
function smallRangeRanks(col: Column & { type: 'int64' | 'timestamp' }, length: number): { ranks: Uint32Array; distinct: number } | null {
  const w = int64Words(col), valid = col.valid;
  let min = Infinity, max = -Infinity;
  for (let i = 0; i < length; i++) {
    if (valid !== null && valid[i] === 0) continue;
    const v = w[2 * i + 1] * 4294967296 + (w[2 * i] >>> 0);
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min === Infinity) { min = 0; max = -1; } // no value: nulls only
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || max - min >= Math.max(1 << 16, 4 * length)) return null;
  const nullSlot = max - min + 1; // nulls last
  const slots = new Uint32Array(length);
  for (let i = 0; i < length; i++) slots[i] = valid !== null && valid[i] === 0 ? nullSlot : w[2 * i + 1] * 4294967296 + (w[2 * i] >>> 0) - min;
  return denseRanks(slots, nullSlot + 1);
}

/** `order` (null: 0..length) stably reordered by rank (below `distinct`): a counting sort, one pass per 16 bits of rank. */
function radixSortByRank(order: Int32Array | null, ranks: Uint32Array, distinct: number, length: number): Int32Array {
  let from: Int32Array, to: Int32Array = new Int32Array(length);
  if (order !== null) from = order;
  else { from = new Int32Array(length); for (let i = 0; i < length; i++) from[i] = i; }
  const counts = new Int32Array(65536);
  for (let shift = 0; shift < (distinct > 65536 ? 32 : 16); shift += 16) {
    counts.fill(0);
    for (let j = 0; j < length; j++) counts[(ranks[from[j]] >>> shift) & 0xffff]++;
    for (let d = 0, sum = 0; d < 65536; d++) { const n = counts[d]; counts[d] = sum; sum += n; }
    for (let j = 0; j < length; j++) { const row = from[j]; to[counts[(ranks[row] >>> shift) & 0xffff]++] = row; }
    [from, to] = [to, from];
  }
  return from;
}

/**
 * Stable LSD radix sort (16-bit digits) of one numeric column, for the common single-key case.
 * Each value becomes an unsigned 64-bit (hi, lo) word pair that orders like the value; nulls go last.
 */
function radixSortIndices(col: Exclude<Column, StringColumn>, length: number): Int32Array {
  const hi = new Uint32Array(length), lo = new Uint32Array(length);
  if (col.type === 'float64') {
    const bits = new Uint32Array(2);
    const f = new Float64Array(bits.buffer);
    for (let i = 0; i < length; i++) {
      const x = col.values[i];
      f[0] = x === 0 ? 0 : x !== x ? NaN : x; // -0 sorts with 0, one NaN after +Infinity
      const neg = bits[1] >>> 31 === 1;
      hi[i] = neg ? ~bits[1] >>> 0 : (bits[1] | 0x80000000) >>> 0;
      lo[i] = neg ? ~bits[0] >>> 0 : bits[0];
    }
  } else if (col.type === 'bool') {
    lo.set(col.values.subarray(0, length));
  } else {
    const w = int64Words(col);
    for (let i = 0; i < length; i++) { hi[i] = (w[2 * i + 1] ^ 0x80000000) >>> 0; lo[i] = w[2 * i] >>> 0; }
  }
  // Keys travel with their row index so that every pass reads sequentially.
  const valid = col.valid;
  let n = 0;
  let idx = new Int32Array(length), kh = new Uint32Array(length), kl = new Uint32Array(length);
  for (let i = 0; i < length; i++) if (valid === null || valid[i] === 1) { idx[n] = i; kh[n] = hi[i]; kl[n++] = lo[i]; }
  const present = n;
  let idx2 = new Int32Array(length), kh2 = new Uint32Array(length), kl2 = new Uint32Array(length);
  const counts = new Int32Array(65536);
  for (const [high, shift] of [[false, 0], [false, 16], [true, 0], [true, 16]] as const) {
    const words = high ? kh : kl;
    counts.fill(0);
    for (let j = 0; j < present; j++) counts[(words[j] >>> shift) & 0xffff]++;
    if (present === 0 || counts[(words[0] >>> shift) & 0xffff] === present) continue; // one digit value: order unchanged
    for (let d = 0, sum = 0; d < 65536; d++) { const c = counts[d]; counts[d] = sum; sum += c; }
    for (let j = 0; j < present; j++) {
      const to = counts[(words[j] >>> shift) & 0xffff]++;
      idx2[to] = idx[j]; kh2[to] = kh[j]; kl2[to] = kl[j];
    }
    [idx, idx2, kh, kh2, kl, kl2] = [idx2, idx, kh2, kh, kl2, kl];
  }
  for (let i = 0; i < length; i++) if (valid !== null && valid[i] === 0) idx[n++] = i;
  return idx;
}

/** Rows grouped by equal keys, the groups numbered in key order (this file's order: nulls last). */
export interface KeyGroups {
  groups: number;
  /** The group of each row. */
  groupOfRow: Int32Array;
  /** The first row (lowest index) of each group. */
  firstRows: Int32Array;
}

/**
 * Groups of equal keys by ranking each key column, no hash table: a group-by's partial with many
 * groups, whose hash table outgrew the caches (775k groups in 1.1M rows: ~270 ns a row to insert,
 * then as long again to sort the partial by key). Equal means what KeyTable means (-0 == 0, NaNs
 * alike, null == null). With several columns their ranks combine into one number, counted
 * directly where the combinations span little more than the rows, else sorted.
 */
export function groupRowsByKeys(cols: readonly Column[], length: number): KeyGroups {
  const ranked = cols.map((c) => columnRanks(c, length));
  let combined = ranked[0] ?? { ranks: new Uint32Array(length), distinct: length === 0 ? 0 : 1 };
  for (let c = 1; c < ranked.length; c++) {
    const next = ranked[c];
    if (combined.distinct * next.distinct <= Math.max(1 << 20, 4 * length)) {
      const ranks = new Uint32Array(length);
      for (let i = 0; i < length; i++) ranks[i] = combined.ranks[i] * next.distinct + next.ranks[i];
      combined = denseRanks(ranks, combined.distinct * next.distinct);
    } else {
      combined = sortedPairRanks(combined, next, length);
    }
  }
  const groupOfRow = new Int32Array(combined.ranks.buffer, combined.ranks.byteOffset, length);
  const firstRows = new Int32Array(combined.distinct).fill(-1);
  for (let i = 0; i < length; i++) if (firstRows[groupOfRow[i]] < 0) firstRows[groupOfRow[i]] = i;
  return { groups: combined.distinct, groupOfRow, firstRows };
}

/**
 * Row indices ordered by bucket (below `buckets`), rows of a bucket in row order (a counting
 * sort), and where each bucket starts in that order (`starts[buckets]` = the row count).
 */
export function rowsByBucket(bucketOfRow: Int32Array | Uint32Array, buckets: number): { order: Int32Array; starts: Int32Array } {
  const starts = new Int32Array(buckets + 1);
  for (let i = 0; i < bucketOfRow.length; i++) starts[bucketOfRow[i] + 1]++;
  for (let b = 0; b < buckets; b++) starts[b + 1] += starts[b];
  const next = starts.slice(0, buckets);
  const order = new Int32Array(bucketOfRow.length);
  for (let i = 0; i < bucketOfRow.length; i++) order[next[bucketOfRow[i]]++] = i;
  return { order, starts };
}

/** Ranks below `span`, some unused, renumbered densely in the same order (in place). */
function denseRanks(ranks: Uint32Array, span: number): { ranks: Uint32Array; distinct: number } {
  const rankAt = new Uint32Array(span);
  for (let i = 0; i < ranks.length; i++) rankAt[ranks[i]] = 1;
  let distinct = 0;
  for (let k = 0; k < span; k++) { const present = rankAt[k]; rankAt[k] = distinct; distinct += present; }
  for (let i = 0; i < ranks.length; i++) ranks[i] = rankAt[ranks[i]];
  return { ranks, distinct };
}

/** Dense ranks of (a, b) rank pairs in lexicographic order, by a radix sort of the rows. */
function sortedPairRanks(a: { ranks: Uint32Array; distinct: number }, b: { ranks: Uint32Array; distinct: number }, length: number): { ranks: Uint32Array; distinct: number } {
  const order = radixSortByRank(radixSortByRank(null, b.ranks, b.distinct, length), a.ranks, a.distinct, length);
  const ranks = new Uint32Array(length);
  let rank = -1;
  for (let j = 0; j < length; j++) {
    const row = order[j], prev = j > 0 ? order[j - 1] : -1;
    if (prev < 0 || a.ranks[row] !== a.ranks[prev] || b.ranks[row] !== b.ranks[prev]) rank++;
    ranks[row] = rank;
  }
  return { ranks, distinct: rank + 1 };
}
