// Quantile binning for histogram trees: per feature, at most nBins - 1 increasing cut points
// taken from a sample; bin(x) = number of cut points below x, so bin(x) <= b exactly when
// x <= edges[b], and a split "bin <= b" becomes the threshold edges[b] on raw values.

/** Cut points for one feature from its sampled values (sorted in place). */
export function quantileEdges(sample: Float64Array, nBins: number): Float64Array {
  const values = sample.filter((v) => !Number.isNaN(v)).sort();
  const distinct: number[] = [];
  for (let i = 0; i < values.length; i++) if (i === 0 || values[i] !== values[i - 1]) distinct.push(values[i]);
  const edges: number[] = [];
  if (distinct.length <= nBins) {
    // Few values: one bin each, cut half-way between neighbours (as scikit-learn does).
    for (let i = 0; i + 1 < distinct.length; i++) edges.push(distinct[i] + (distinct[i + 1] - distinct[i]) / 2);
  } else {
    for (let j = 1; j < nBins; j++) {
      const v = values[Math.floor((j * values.length) / nBins) - 1];
      if (edges.length === 0 || v > edges[edges.length - 1]) edges.push(v);
    }
    if (edges[edges.length - 1] >= distinct[distinct.length - 1]) edges.pop(); // a cut at the maximum splits nothing
  }
  return Float64Array.from(edges);
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

/** Column-major bins (feature f of row r at f × rows + r) of a row-major matrix. */
export function binMatrix(x: Float64Array, rows: number, cols: number, edges: Float64Array[]): Uint8Array {
  const bins = new Uint8Array(rows * cols);
  for (let f = 0; f < cols; f++) {
    const e = edges[f];
    for (let r = 0; r < rows; r++) bins[f * rows + r] = binOf(e, x[r * cols + f]);
  }
  return bins;
}
