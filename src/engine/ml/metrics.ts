// Fitting metrics: accuracy (classification), R² (regression), adjusted Rand index (clustering).

export type Labels = ArrayLike<number>;

export function accuracy(truth: Labels, predicted: Labels): number {
  if (truth.length === 0) return NaN;
  let hits = 0;
  for (let i = 0; i < truth.length; i++) if (truth[i] === predicted[i]) hits++;
  return hits / truth.length;
}

/** Coefficient of determination, scikit-learn's r2_score (1 for a perfectly fitted constant target, else 0). */
export function r2(truth: Labels, predicted: Labels): number {
  const n = truth.length;
  let mean = 0;
  for (let i = 0; i < n; i++) mean += truth[i];
  mean /= n;
  let sse = 0, sst = 0;
  for (let i = 0; i < n; i++) { sse += (truth[i] - predicted[i]) ** 2; sst += (truth[i] - mean) ** 2; }
  if (sst === 0) return sse === 0 ? 1 : 0;
  return 1 - sse / sst;
}

const pairs = (n: number): number => (n * (n - 1)) / 2;

/** Hubert & Arabie's adjusted Rand index between two labelings of the same rows. */
export function adjustedRandIndex(a: Labels, b: Labels): number {
  const n = a.length;
  const cells = new Map<string, number>(), rowsA = new Map<number, number>(), rowsB = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const key = `${a[i]}\u0000${b[i]}`;
    cells.set(key, (cells.get(key) ?? 0) + 1);
    rowsA.set(a[i], (rowsA.get(a[i]) ?? 0) + 1);
    rowsB.set(b[i], (rowsB.get(b[i]) ?? 0) + 1);
  }
  let index = 0, sumA = 0, sumB = 0;
  for (const c of cells.values()) index += pairs(c);
  for (const c of rowsA.values()) sumA += pairs(c);
  for (const c of rowsB.values()) sumB += pairs(c);
  const expected = (sumA * sumB) / pairs(n);
  const max = (sumA + sumB) / 2;
  if (max === expected) return 1; // both labelings trivial (one cluster, or all singletons)
  return (index - expected) / (max - expected);
}
