// Quantile binning for histogram trees: per feature, at most nBins - 1 increasing cut points
// taken from a sample; bin(x) = number of cut points below x, so bin(x) <= b exactly when
// x <= edges[b], and a split "bin <= b" becomes the threshold edges[b] on raw values.

/** Cut points for one feature from its sampled values (sorted in place). */
export function quantileEdges(sample: Float64Array, nBins: number): Float64Array {
  let n = 0;
  for (let i = 0; i < sample.length; i++) if (!Number.isNaN(sample[i])) sample[n++] = sample[i];
  const values = sample.subarray(0, n).sort();
  const edges: number[] = [];
  const distinct = distinctUpTo(values, nBins);
  if (distinct !== null) {
    // Few values: one bin each, cut half-way between neighbours (as scikit-learn does).
    for (let i = 0; i + 1 < distinct.length; i++) edges.push(distinct[i] + (distinct[i + 1] - distinct[i]) / 2);
  } else {
    for (let j = 1; j < nBins; j++) {
      const v = values[Math.floor((j * values.length) / nBins) - 1];
      if (edges.length === 0 || v > edges[edges.length - 1]) edges.push(v);
    }
    if (edges[edges.length - 1] >= values[values.length - 1]) edges.pop(); // a cut at the maximum splits nothing
  }
  return Float64Array.from(edges);
}

/** The distinct values of a sorted array, or null when there are more than `limit`. */
function distinctUpTo(sorted: Float64Array, limit: number): number[] | null {
  const distinct: number[] = [];
  for (let i = 0; i < sorted.length; i++) {
    if (i > 0 && sorted[i] === sorted[i - 1]) continue;
    if (distinct.length === limit) return null;
    distinct.push(sorted[i]);
  }
  return distinct;
}

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

/** Column-major bins (feature f of row r at f × rows + r) of a row-major matrix. */
export function binMatrix(x: Float64Array, rows: number, cols: number, edges: Float64Array[]): Uint8Array {
  const bins = new Uint8Array(rows * cols);
  const grids = edges.map(gridOf);
  // Rows outer: x is read in order (feature-outer strides through memory once per feature).
  for (let r = 0; r < rows; r++) {
    for (let f = 0; f < cols; f++) bins[f * rows + r] = binOnGrid(grids[f], x[r * cols + f]);
  }
  return bins;
}
