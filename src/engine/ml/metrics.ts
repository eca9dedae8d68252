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

/** Counts of (label a, label b) pairs, built up row by row; enough for the adjusted Rand index. */
export class Contingency {
  private readonly cells = new Map<string, number>();
  private readonly rowsA = new Map<number, number>();
  private readonly rowsB = new Map<number, number>();
  private n = 0;

  add(a: number, b: number): void {
    const key = `${a}\u0000${b}`;
    this.cells.set(key, (this.cells.get(key) ?? 0) + 1);
    this.rowsA.set(a, (this.rowsA.get(a) ?? 0) + 1);
    this.rowsB.set(b, (this.rowsB.get(b) ?? 0) + 1);
    this.n++;
  }

  /** Hubert & Arabie's adjusted Rand index of the two labelings seen so far. */
  adjustedRandIndex(): number {
    let index = 0, sumA = 0, sumB = 0;
    for (const c of this.cells.values()) index += pairs(c);
    for (const c of this.rowsA.values()) sumA += pairs(c);
    for (const c of this.rowsB.values()) sumB += pairs(c);
    const expected = (sumA * sumB) / pairs(this.n);
    const max = (sumA + sumB) / 2;
    if (max === expected) return 1; // both labelings trivial (one cluster, or all singletons)
    return (index - expected) / (max - expected);
  }
}

/** Hubert & Arabie's adjusted Rand index between two labelings of the same rows. */
export function adjustedRandIndex(a: Labels, b: Labels): number {
  const table = new Contingency();
  for (let i = 0; i < a.length; i++) table.add(a[i], b[i]);
  return table.adjustedRandIndex();
}
