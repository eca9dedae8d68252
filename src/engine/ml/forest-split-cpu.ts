// The CPU split finder: each tree keeps its in-bag rows in one array, every frontier node a
// contiguous range of it; a search builds per-bin histograms of the node's candidate features
// over its range, and routing partitions the range in place (left rows first).

import { ForestGrowth, sideScore, totalWeight, treeWeights, type BinnedData, type Frontier, type GrownTree, type LevelRoute, type LevelSearch, type SplitFinder, type TreeSpec } from './forest-tree.js';

/** Grows the given trees (indices into the forest) with the CPU finder. */
export function growTreesOnCpu(data: BinnedData, spec: TreeSpec, treeIndices: readonly number[]): GrownTree[] {
  const growth = new ForestGrowth(data, spec, treeIndices);
  const finder = new CpuSplitFinder(data, spec, treeIndices.map((t) => treeWeights(data.rows, spec, t)), growth.width);
  while (!growth.done) finder.route(growth.decide(finder.search(growth.frontier)));
  return growth.grown;
}

interface Range { tree: number; start: number; end: number }

export class CpuSplitFinder implements SplitFinder {
  /** Per tree, the rows with a positive weight, grouped by frontier node. */
  private readonly rows: Int32Array[];
  /** Per frontier position, its rows' range in its tree's array. */
  private ranges: Range[];

  constructor(private readonly data: BinnedData, private readonly spec: TreeSpec, private readonly weights: readonly Int32Array[], private readonly width: number) {
    this.rows = weights.map((w) => {
      const inBag: number[] = [];
      for (let r = 0; r < w.length; r++) if (w[r] > 0) inBag.push(r);
      return Int32Array.from(inBag);
    });
    this.ranges = this.rows.map((rows, tree) => ({ tree, start: 0, end: rows.length }));
  }

  search(frontier: Frontier): LevelSearch {
    const { width } = this, m = this.spec.maxFeatures, n = frontier.count;
    const out: LevelSearch = { totals: new Float64Array(n * width), candidate: new Int32Array(n).fill(-1), bin: new Int32Array(n).fill(-1), left: new Float64Array(n * width) };
    const left = new Float64Array(width);
    for (let i = 0; i < n; i++) {
      const range = this.ranges[i];
      this.accumulate(out.totals, i * width, range, null);
      let bestScore = -Infinity;
      for (let k = 0; k < m; k++) {
        const feature = frontier.features[i * m + k];
        if (feature < 0) continue;
        const best = this.bestBin(feature, range, out.totals, i * width, left);
        if (best.bin >= 0 && best.score > bestScore) {
          bestScore = best.score;
          out.candidate[i] = k;
          out.bin[i] = best.bin;
          out.left.set(left, i * width);
        }
      }
    }
    return out;
  }

  route(route: LevelRoute): void {
    const next: Range[] = [];
    this.ranges.forEach((range, i) => {
      const [feature, bin, left, right] = route.subarray(4 * i, 4 * i + 4);
      if (feature < 0) return;
      const mid = this.partition(range, feature, bin);
      if (left >= 0) next[left] = { tree: range.tree, start: range.start, end: mid };
      if (right >= 0) next[right] = { tree: range.tree, start: mid, end: range.end };
    });
    this.ranges = next;
  }

  /** Adds each row of the range to hist at `at` + its bin × width (by `feature`'s bin), or at `at` when feature is null. */
  private accumulate(hist: Float64Array, at: number, { tree, start, end }: Range, feature: number | null): void {
    const { data, width } = this;
    const rows = this.rows[tree], weight = this.weights[tree];
    const col = feature === null ? null : data.bins.subarray(feature * data.rows, (feature + 1) * data.rows);
    const classification = this.spec.task === 'classification';
    for (let i = start; i < end; i++) {
      const r = rows[i], w = weight[r], o = col === null ? at : at + col[r] * width;
      if (classification) hist[o + data.target[r]] += w;
      else { const y = data.target[r]; hist[o] += w; hist[o + 1] += w * y; hist[o + 2] += w * y * y; }
    }
  }

  /** The first bin with the largest split score over one feature (bin -1: none); the left totals there go to `left`. */
  private bestBin(feature: number, range: Range, totals: Float64Array, totalsAt: number, left: Float64Array): { bin: number; score: number } {
    const { spec, width } = this;
    const nb = this.data.binsPerFeature[feature];
    const best = { bin: -1, score: -Infinity };
    if (nb < 2) return best;
    const hist = new Float64Array(nb * width);
    this.accumulate(hist, 0, range, feature);
    const all = totalWeight(totals, totalsAt, width, spec.task);
    const l = new Float64Array(width), r = new Float64Array(width);
    for (let b = 0; b < nb - 1; b++) {
      for (let c = 0; c < width; c++) l[c] += hist[b * width + c];
      const wl = totalWeight(l, 0, width, spec.task), wr = all - wl;
      if (wl < spec.minSamplesLeaf) continue;
      if (wr < spec.minSamplesLeaf) break;
      for (let c = 0; c < width; c++) r[c] = totals[totalsAt + c] - l[c];
      const score = sideScore(spec.criterion, spec.task, l, 0, width) + sideScore(spec.criterion, spec.task, r, 0, width);
      if (score > best.score) { best.score = score; best.bin = b; left.set(l); }
    }
    return best;
  }

  /** Reorders the range so rows with bin <= `bin` come first; returns the boundary. */
  private partition({ tree, start, end }: Range, feature: number, bin: number): number {
    const col = this.data.bins.subarray(feature * this.data.rows, (feature + 1) * this.data.rows);
    const rows = this.rows[tree];
    let i = start, j = end - 1;
    while (i <= j) {
      if (col[rows[i]] <= bin) i++;
      else { const t = rows[i]; rows[i] = rows[j]; rows[j] = t; j--; }
    }
    return i;
  }
}
