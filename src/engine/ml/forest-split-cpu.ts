// The CPU split finder: each tree keeps its in-bag rows in one array, every frontier node a
// contiguous range of it; a search builds per-bin histograms of the node's candidate features
// over its range, and routing partitions the range in place (left rows first).

import { ForestGrowth, sideScore, totalsWidth, totalWeight, type BinnedData, type FrontierNode, type GrownTree, type NodeSearch, type NodeTotals, type RouteDecision, type SplitFinder, type TreeSpec } from './forest-tree.js';

/** Grows the given trees (indices into the forest) with the CPU finder. */
export function growTreesOnCpu(data: BinnedData, spec: TreeSpec, treeIndices: readonly number[]): GrownTree[] {
  const growth = new ForestGrowth(data, spec, treeIndices);
  const finder = new CpuSplitFinder(data, spec, growth.weights);
  while (!growth.done) finder.route(growth.decide(finder.search(growth.frontier)));
  return growth.grown;
}

interface Range { tree: number; start: number; end: number }

export class CpuSplitFinder implements SplitFinder {
  /** Per tree, the rows with a positive weight, grouped by frontier node. */
  private readonly rows: Int32Array[];
  /** Per frontier position, its rows' range in its tree's array. */
  private ranges: Range[];
  private readonly width: number;

  constructor(private readonly data: BinnedData, private readonly spec: TreeSpec, private readonly weights: readonly Int32Array[]) {
    this.width = totalsWidth(data, spec.task);
    this.rows = weights.map((w) => {
      const inBag: number[] = [];
      for (let r = 0; r < w.length; r++) if (w[r] > 0) inBag.push(r);
      return Int32Array.from(inBag);
    });
    this.ranges = this.rows.map((rows, tree) => ({ tree, start: 0, end: rows.length }));
  }

  search(frontier: readonly FrontierNode[]): NodeSearch[] {
    return frontier.map((f, i) => {
      const range = this.ranges[i];
      const totals = new Float64Array(this.width);
      this.accumulate(totals, range, null);
      return { totals, best: Array.from(f.features, (feature) => this.bestBin(feature, range, totals)) };
    });
  }

  route(decisions: readonly RouteDecision[]): void {
    const next: Range[] = [];
    decisions.forEach((d, i) => {
      if (d === null) return;
      const { tree, start, end } = this.ranges[i];
      const mid = this.partition(this.ranges[i], d.feature, d.bin);
      if (d.left >= 0) next[d.left] = { tree, start, end: mid };
      if (d.right >= 0) next[d.right] = { tree, start: mid, end };
    });
    this.ranges = next;
  }

  /** Adds each row of the range to hist at bin × width (by `feature`'s bin), or to hist[0..] when feature is null. */
  private accumulate(hist: Float64Array, { tree, start, end }: Range, feature: number | null): void {
    const { data, width } = this;
    const rows = this.rows[tree], weight = this.weights[tree];
    const col = feature === null ? null : data.bins.subarray(feature * data.rows, (feature + 1) * data.rows);
    const classification = this.spec.task === 'classification';
    for (let i = start; i < end; i++) {
      const r = rows[i], w = weight[r], at = col === null ? 0 : col[r] * width;
      if (classification) hist[at + data.target[r]] += w;
      else { const y = data.target[r]; hist[at] += w; hist[at + 1] += w * y; hist[at + 2] += w * y * y; }
    }
  }

  /** The first bin with the largest split score over one feature, and the left side's totals there. */
  private bestBin(feature: number, range: Range, totals: NodeTotals): { bin: number; left: NodeTotals } {
    const { spec, width } = this;
    const nb = this.data.binsPerFeature[feature];
    const none = { bin: -1, left: new Float64Array(width) };
    if (nb < 2) return none;
    const hist = new Float64Array(nb * width);
    this.accumulate(hist, range, feature);
    const all = totalWeight(totals, spec.task);
    const left = new Float64Array(width), right = new Float64Array(width);
    let best = none, bestScore = -Infinity;
    for (let b = 0; b < nb - 1; b++) {
      for (let c = 0; c < width; c++) left[c] += hist[b * width + c];
      const wl = totalWeight(left, spec.task), wr = all - wl;
      if (wl < spec.minSamplesLeaf) continue;
      if (wr < spec.minSamplesLeaf) break;
      for (let c = 0; c < width; c++) right[c] = totals[c] - left[c];
      const score = sideScore(spec.criterion, spec.task, left) + sideScore(spec.criterion, spec.task, right);
      if (score > bestScore) { bestScore = score; best = { bin: b, left: left.slice() }; }
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
