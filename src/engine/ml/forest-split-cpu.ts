// The CPU split finder: each tree keeps its in-bag rows in one array, every frontier node a
// contiguous range of it; a search builds the node's totals and per-bin histograms of all its
// candidate features in one pass over its range, and routing partitions the range in place
// (left rows first).

import { ForestGrowth, sideScore, totalWeight, treeWeights, type BinnedData, type Frontier, type GrownTree, type LevelRoute, type LevelSearch, type SplitFinder, type TreeSpec } from './forest-tree.js';

/**
 * Grows the given trees (indices into the forest) with the CPU finder, one at a time: a tree's
 * rows and weights take 8 bytes per row, and growing several together gains nothing on a CPU.
 */
export function growTreesOnCpu(data: BinnedData, spec: TreeSpec, treeIndices: readonly number[]): GrownTree[] {
  return treeIndices.map((t) => growBatchOnCpu(data, spec, [t])[0]);
}

/** Grows the trees together, as one batch (the way a GPU finder grows them). */
export function growBatchOnCpu(data: BinnedData, spec: TreeSpec, treeIndices: readonly number[]): GrownTree[] {
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
  /** Bins row-major (row r's features at r × cols), shared by every finder on the same data. */
  private readonly rowBins: Uint8Array;
  /** Scratch for one node: its totals, and per candidate a histogram of maxBins × width. */
  private readonly totals: Float64Array;
  private readonly hist: Float64Array;
  private readonly maxBins: number;

  constructor(private readonly data: BinnedData, private readonly spec: TreeSpec, private readonly weights: readonly Int32Array[], private readonly width: number) {
    this.rowBins = rowMajorBins(data);
    this.maxBins = Math.max(1, ...data.binsPerFeature);
    this.totals = new Float64Array(width);
    this.hist = new Float64Array(spec.maxFeatures * this.maxBins * width);
    this.rows = weights.map((w) => {
      const inBag: number[] = [];
      for (let r = 0; r < w.length; r++) if (w[r] > 0) inBag.push(r);
      return Int32Array.from(inBag);
    });
    this.ranges = this.rows.map((rows, tree) => ({ tree, start: 0, end: rows.length }));
  }

  search(frontier: Frontier): LevelSearch {
    const { width, data } = this, m = this.spec.maxFeatures, n = frontier.count;
    const out: LevelSearch = { totals: new Float64Array(n * width), candidate: new Int32Array(n).fill(-1), bin: new Int32Array(n).fill(-1), left: new Float64Array(n * width) };
    const left = new Float64Array(width);
    for (let i = 0; i < n; i++) {
      const features = frontier.features.subarray(i * m, (i + 1) * m);
      this.accumulate(this.ranges[i], features);
      let bestScore = -Infinity;
      for (let k = 0; k < m; k++) {
        if (features[k] < 0) continue;
        const best = this.bestBin(k, data.binsPerFeature[features[k]], left);
        if (best.bin >= 0 && best.score > bestScore) {
          bestScore = best.score;
          out.candidate[i] = k;
          out.bin[i] = best.bin;
          out.left.set(left, i * width);
        }
      }
      out.totals.set(this.totals, i * width);
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

  /**
   * One pass over a node's rows: its totals, and per candidate k a histogram (hist[k × maxBins +
   * bin] × width). Row-major bins put a row's candidates in one cache line (column by column,
   * every candidate of every row was a cache miss).
   */
  private accumulate({ tree, start, end }: Range, features: Int32Array): void {
    const { data, width, hist, totals, maxBins } = this;
    const rows = this.rows[tree], weight = this.weights[tree], bins = this.rowBins, cols = data.cols, target = data.target;
    const m = features.length;
    totals.fill(0);
    hist.fill(0, 0, m * maxBins * width);
    const classification = this.spec.task === 'classification';
    for (let i = start; i < end; i++) {
      const r = rows[i], w = weight[r], base = r * cols;
      if (classification) {
        const c = target[r];
        totals[c] += w;
        for (let k = 0; k < m; k++) if (features[k] >= 0) hist[(k * maxBins + bins[base + features[k]]) * width + c] += w;
      } else {
        const y = target[r], wy = w * y, wyy = w * y * y;
        totals[0] += w; totals[1] += wy; totals[2] += wyy;
        for (let k = 0; k < m; k++) {
          if (features[k] < 0) continue;
          const o = (k * maxBins + bins[base + features[k]]) * width;
          hist[o] += w; hist[o + 1] += wy; hist[o + 2] += wyy;
        }
      }
    }
  }

  /** The first bin with the largest split score over candidate k's histogram (bin -1: none); the left totals there go to `left`. */
  private bestBin(k: number, nb: number, left: Float64Array): { bin: number; score: number } {
    const { spec, width, hist, totals, maxBins } = this;
    const best = { bin: -1, score: -Infinity };
    if (nb < 2) return best;
    const all = totalWeight(totals, 0, width, spec.task);
    const l = new Float64Array(width), r = new Float64Array(width);
    for (let b = 0; b < nb - 1; b++) {
      const at = (k * maxBins + b) * width;
      for (let c = 0; c < width; c++) l[c] += hist[at + c];
      const wl = totalWeight(l, 0, width, spec.task), wr = all - wl;
      if (wl < spec.minSamplesLeaf) continue;
      if (wr < spec.minSamplesLeaf) break;
      for (let c = 0; c < width; c++) r[c] = totals[c] - l[c];
      const score = sideScore(spec.criterion, spec.task, l, 0, width) + sideScore(spec.criterion, spec.task, r, 0, width);
      if (score > best.score) { best.score = score; best.bin = b; left.set(l); }
    }
    return best;
  }

  /** Reorders the range so rows with bin <= `bin` come first; returns the boundary. */
  private partition({ tree, start, end }: Range, feature: number, bin: number): number {
    // One feature per row: its column (rows bytes) is more compact than the row-major copy.
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

const rowMajor = new WeakMap<BinnedData, Uint8Array>();

/** The data's bins row-major, made once per BinnedData (its bins are column-major for the GPU). */
function rowMajorBins(data: BinnedData): Uint8Array {
  let out = rowMajor.get(data);
  if (!out) {
    const { rows, cols, bins } = data;
    out = new Uint8Array(rows * cols);
    for (let f = 0; f < cols; f++) {
      const col = bins.subarray(f * rows, (f + 1) * rows);
      for (let r = 0; r < rows; r++) out[r * cols + f] = col[r];
    }
    rowMajor.set(data, out);
  }
  return out;
}
