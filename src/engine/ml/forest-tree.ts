// Growing one histogram-based decision tree on binned rows. Depth-first; at each node a fresh
// random subset of features (--max-features) is scanned with per-bin histograms; gini or entropy
// for classification, variance for regression. Bootstrap draws become integer row weights.

import { Rng } from './random.js';

export interface TreeSpec {
  task: 'classification' | 'regression';
  criterion: 'gini' | 'entropy';
  maxDepth: number;
  minSamplesLeaf: number;
  maxFeatures: number;
  bootstrap: boolean;
  seed: number;
}

export interface BinnedData {
  rows: number;
  cols: number;
  /** Column-major bins: feature f of row r at f × rows + r. */
  bins: Uint8Array;
  binsPerFeature: Int32Array;
  /** Class index per row (classification) or target value (regression). */
  target: Int32Array | Float64Array;
  nClasses: number;
}

/** Nodes of one tree; thresholds are bin numbers, children relative to the tree's first node. */
export interface GrownTree { feature: number[]; bin: number[]; left: number[]; right: number[]; value: number[] }

export function growTree(data: BinnedData, spec: TreeSpec, treeIndex: number): GrownTree {
  const rng = new Rng(spec.seed, 'rf-tree', treeIndex);
  const weight = rowWeights(data.rows, spec.bootstrap, rng);
  const order: number[] = [];
  for (let r = 0; r < data.rows; r++) if (weight[r] > 0) order.push(r);
  const idx = Int32Array.from(order);
  const width = spec.task === 'classification' ? data.nClasses : 1;
  const tree: GrownTree = { feature: [], bin: [], left: [], right: [], value: [] };
  const features = Int32Array.from({ length: data.cols }, (_, i) => i);
  const stack: { node: number; start: number; end: number; depth: number }[] = [];
  addNode(tree, width);
  stack.push({ node: 0, start: 0, end: idx.length, depth: 0 });
  while (stack.length > 0) {
    const { node, start, end, depth } = stack.pop()!;
    const stats = nodeStats(data, idx, start, end, weight, spec.task, width);
    setValue(tree, node, stats, width, spec.task);
    if (depth >= spec.maxDepth || stats.weight < 2 * spec.minSamplesLeaf || isPure(stats, spec.task)) continue;
    const split = bestSplit(data, idx, start, end, weight, spec, stats, features, rng);
    if (!split) continue;
    const mid = partitionRows(data, idx, start, end, split.feature, split.bin);
    tree.feature[node] = split.feature;
    tree.bin[node] = split.bin;
    tree.left[node] = addNode(tree, width);
    tree.right[node] = addNode(tree, width);
    stack.push({ node: tree.right[node], start: mid, end, depth: depth + 1 });
    stack.push({ node: tree.left[node], start, end: mid, depth: depth + 1 });
  }
  return tree;
}

/** Bootstrap: n draws with replacement become per-row counts; without bootstrap every row counts once. */
function rowWeights(n: number, bootstrap: boolean, rng: Rng): Int32Array {
  const w = new Int32Array(n);
  if (!bootstrap) return w.fill(1);
  for (let i = 0; i < n; i++) w[rng.nextInt(n)]++;
  return w;
}

function addNode(tree: GrownTree, width: number): number {
  tree.feature.push(-1); tree.bin.push(-1); tree.left.push(-1); tree.right.push(-1);
  for (let i = 0; i < width; i++) tree.value.push(0);
  return tree.feature.length - 1;
}

interface NodeStats { weight: number; classWeights: Float64Array; sum: number; sumSq: number }

function nodeStats(data: BinnedData, idx: Int32Array, start: number, end: number, weight: Int32Array, task: TreeSpec['task'], width: number): NodeStats {
  const s: NodeStats = { weight: 0, classWeights: new Float64Array(width), sum: 0, sumSq: 0 };
  for (let i = start; i < end; i++) {
    const r = idx[i], w = weight[r], t = data.target[r];
    s.weight += w;
    if (task === 'classification') s.classWeights[t] += w;
    else { s.sum += w * t; s.sumSq += w * t * t; }
  }
  return s;
}

function setValue(tree: GrownTree, node: number, s: NodeStats, width: number, task: TreeSpec['task']): void {
  if (task === 'classification') for (let c = 0; c < width; c++) tree.value[node * width + c] = s.classWeights[c] / s.weight;
  else tree.value[node] = s.sum / s.weight;
}

function isPure(s: NodeStats, task: TreeSpec['task']): boolean {
  if (task === 'classification') return s.classWeights.some((w) => w === s.weight);
  return s.sumSq - (s.sum * s.sum) / s.weight <= 1e-12 * Math.abs(s.sumSq);
}

/** Score to maximise for one side of a split (the impurity it removes, up to a constant). */
function sideScore(criterion: TreeSpec['criterion'], task: TreeSpec['task'], w: number, classW: Float64Array, off: number, width: number, sum: number): number {
  if (task === 'regression') return (sum * sum) / w; // variance: maximise Σ S²/W
  let s = 0;
  if (criterion === 'gini') {
    for (let c = 0; c < width; c++) s += classW[off + c] * classW[off + c];
    return s / w;
  }
  for (let c = 0; c < width; c++) { const v = classW[off + c]; if (v > 0) s += v * Math.log(v / w); }
  return s; // entropy: maximise Σ c log(c / W)
}

interface Split { feature: number; bin: number; score: number }

function bestSplit(data: BinnedData, idx: Int32Array, start: number, end: number, weight: Int32Array,
  spec: TreeSpec, parent: NodeStats, features: Int32Array, rng: Rng): Split | null {
  const width = spec.task === 'classification' ? data.nClasses : 1;
  const parentScore = sideScore(spec.criterion, spec.task, parent.weight, parent.classWeights, 0, width, parent.sum);
  let best: Split | null = null;
  const left = new Float64Array(width);
  for (let k = 0; k < spec.maxFeatures; k++) {
    // Partial Fisher–Yates: the k-th feature drawn without replacement for this node.
    const pick = k + rng.nextInt(data.cols - k);
    const f = features[pick]; features[pick] = features[k]; features[k] = f;
    const nb = data.binsPerFeature[f];
    if (nb < 2) continue;
    const histW = new Float64Array(nb), histC = new Float64Array(nb * width), histS = new Float64Array(nb);
    const col = data.bins.subarray(f * data.rows, (f + 1) * data.rows);
    for (let i = start; i < end; i++) {
      const r = idx[i], b = col[r], w = weight[r];
      histW[b] += w;
      if (spec.task === 'classification') histC[b * width + data.target[r]] += w;
      else histS[b] += w * data.target[r];
    }
    left.fill(0);
    let wl = 0, sl = 0;
    for (let b = 0; b < nb - 1; b++) {
      wl += histW[b]; sl += histS[b];
      for (let c = 0; c < width && spec.task === 'classification'; c++) left[c] += histC[b * width + c];
      const wr = parent.weight - wl;
      if (wl < spec.minSamplesLeaf) continue;
      if (wr < spec.minSamplesLeaf) break;
      const right = new Float64Array(width);
      for (let c = 0; c < width; c++) right[c] = parent.classWeights[c] - left[c];
      const score = sideScore(spec.criterion, spec.task, wl, left, 0, width, sl)
        + sideScore(spec.criterion, spec.task, wr, right, 0, width, parent.sum - sl);
      if (score > parentScore + 1e-12 * Math.abs(parentScore) && (best === null || score > best.score)) best = { feature: f, bin: b, score };
    }
  }
  return best;
}

/** Reorders idx[start, end) so rows with bin <= `bin` come first; returns the boundary. */
function partitionRows(data: BinnedData, idx: Int32Array, start: number, end: number, feature: number, bin: number): number {
  const col = data.bins.subarray(feature * data.rows, (feature + 1) * data.rows);
  let i = start, j = end - 1;
  while (i <= j) {
    if (col[idx[i]] <= bin) i++;
    else { const t = idx[i]; idx[i] = idx[j]; idx[j] = t; j--; }
  }
  return i;
}
