// Quantile binning for histogram trees: per feature, at most nBins - 1 increasing cut points
// taken from a sample; bin(x) = number of cut points below x, so bin(x) <= b exactly when
// x <= edges[b], and a split "bin <= b" becomes the threshold edges[b] on raw values.

import type { MatrixPartition } from './partitioned.js';

/** Cut points for one feature from its sampled values (reordered in place). */
export function quantileEdges(sample: Float64Array, nBins: number): Float64Array {
  let n = 0;
  for (let i = 0; i < sample.length; i++) if (!Number.isNaN(sample[i])) sample[n++] = sample[i];
  const values = sample.subarray(0, n);
  const edges: number[] = [];
  const distinct = distinctUpTo(values, nBins);
  if (distinct !== null) {
    // Few values: one bin each, cut half-way between neighbours (as scikit-learn does).
    for (let i = 0; i + 1 < distinct.length; i++) edges.push(distinct[i] + (distinct[i + 1] - distinct[i]) / 2);
  } else {
    // The values at ranks j·n/nBins - 1 of the sorted sample, and the maximum (rank n - 1).
    const ranks = Array.from({ length: nBins }, (_, j) => (j + 1 < nBins ? Math.floor(((j + 1) * n) / nBins) - 1 : n - 1));
    const picked = valuesAtRanks(values, ranks);
    const max = picked.pop()!;
    for (const v of picked) if (edges.length === 0 || v > edges[edges.length - 1]) edges.push(v);
    if (edges[edges.length - 1] >= max) edges.pop(); // a cut at the maximum splits nothing
  }
  return Float64Array.from(edges);
}

/** The distinct values, ascending, or null when there are more than `limit`. */
function distinctUpTo(values: Float64Array, limit: number): number[] | null {
  const seen = new Set<number>();
  for (let i = 0; i < values.length; i++) {
    seen.add(values[i]);
    if (seen.size > limit) return null;
  }
  return [...seen].sort((a, b) => a - b);
}

/**
 * The values the sorted array would hold at `ranks` (ascending), without sorting it: values are
 * counted into equal-width buckets between the minimum and the maximum (a monotone map, so bucket
 * order is value order), and only the buckets holding a wanted rank are sorted. Sorting the whole
 * sample dominated choosing the bins; a column whose values crowd into few buckets (huge
 * outliers) costs at most that sort.
 */
export function valuesAtRanks(a: Float64Array, ranks: readonly number[]): number[] {
  const n = a.length;
  let min = Infinity, max = -Infinity;
  for (let i = 0; i < n; i++) { const v = a[i]; if (v < min) min = v; if (v > max) max = v; }
  const scale = RANK_BUCKETS / (max - min);
  if (!(max > min) || !Number.isFinite(scale)) { a.sort(); return ranks.map((r) => a[r]); }
  const bucketOf = (v: number) => Math.min(RANK_BUCKETS - 1, Math.floor((v - min) * scale));
  const start = new Int32Array(RANK_BUCKETS + 1);
  for (let i = 0; i < n; i++) start[bucketOf(a[i]) + 1]++;
  for (let b = 0; b < RANK_BUCKETS; b++) start[b + 1] += start[b];
  // The buckets holding wanted ranks, and where each one's values go in `picked`.
  const wanted = new Int32Array(RANK_BUCKETS).fill(-1);
  let pickedCount = 0;
  const bucketOfRank = ranks.map((r) => {
    let lo = 0, hi = RANK_BUCKETS - 1; // the bucket b with start[b] <= r < start[b + 1]
    while (lo < hi) { const mid = (lo + hi + 1) >>> 1; if (start[mid] <= r) lo = mid; else hi = mid - 1; }
    if (wanted[lo] < 0) { wanted[lo] = pickedCount; pickedCount += start[lo + 1] - start[lo]; }
    return lo;
  });
  const picked = new Float64Array(pickedCount);
  const fill = Int32Array.from(wanted);
  for (let i = 0; i < n; i++) { const b = bucketOf(a[i]); if (wanted[b] >= 0) picked[fill[b]++] = a[i]; }
  const sorted = new Set<number>();
  return ranks.map((r, j) => {
    const b = bucketOfRank[j], size = start[b + 1] - start[b];
    const values = picked.subarray(wanted[b], wanted[b] + size);
    if (!sorted.has(b)) { values.sort(); sorted.add(b); }
    return values[r - start[b]];
  });
}

const RANK_BUCKETS = 4096;

/** Bin of one value: the first j with x <= edges[j], else edges.length (also for NaN). */
export function binOf(edges: Float64Array, x: number): number {
  let lo = 0, hi = edges.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (x <= edges[mid]) hi = mid; else lo = mid + 1;
  }
  return lo;
}

/**
 * A feature's edges with a uniform grid over [first edge, last edge]: each cell holds the bin of
 * its lower end, so a value's bin is found from its cell in a step or two instead of a binary
 * search whose unpredictable branches cost more than the rest of binning.
 */
interface GridEdges { edges: Float64Array; lo: number; hi: number; scale: number; start: Uint8Array }

const GRID_CELLS = 4096;

function gridOf(edges: Float64Array): GridEdges {
  const m = edges.length;
  const lo = m > 0 ? edges[0] : 0, hi = m > 0 ? edges[m - 1] : 0;
  const span = hi - lo;
  const scale = span > 0 && Number.isFinite(span) ? GRID_CELLS / span : 0;
  const start = new Uint8Array(GRID_CELLS + 1);
  if (scale > 0) for (let c = 0; c <= GRID_CELLS; c++) start[c] = binOf(edges, lo + c / scale);
  return { edges, lo, hi, scale, start };
}

/** binOf(g.edges, x), found from the grid (the walk corrects any rounding of the cell). */
function binOnGrid(g: GridEdges, x: number): number {
  const e = g.edges, m = e.length;
  if (m === 0 || !(x > g.lo)) return m === 0 || Number.isNaN(x) ? m : 0;
  if (x > g.hi) return m;
  let b = g.scale > 0 ? g.start[Math.min(GRID_CELLS, Math.floor((x - g.lo) * g.scale))] : 0;
  while (b > 0 && x <= e[b - 1]) b--;
  while (b < m && x > e[b]) b++;
  return b;
}

/**
 * Column-major bins (feature f of row r at f × rows + r) of a partition's rows: read from its
 * columns where it keeps them (a GPU worker's; no row-major copy is made), else from its row-major x.
 */
export function binMatrix(part: Pick<MatrixPartition, 'rows' | 'cols' | 'x' | 'column'>, edges: Float64Array[]): Uint8Array {
  const { rows, cols } = part;
  const bins = new Uint8Array(rows * cols);
  const grids = edges.map(gridOf);
  if (part.column) {
    for (let f = 0; f < cols; f++) {
      const values = part.column(f), grid = grids[f], at = f * rows;
      for (let r = 0; r < rows; r++) bins[at + r] = binOnGrid(grid, values[r]);
    }
    return bins;
  }
  // Rows outer: x is read in order (feature-outer strides through memory once per feature).
  const x = part.x;
  for (let r = 0; r < rows; r++) {
    for (let f = 0; f < cols; f++) bins[f * rows + r] = binOnGrid(grids[f], x[r * cols + f]);
  }
  return bins;
}
