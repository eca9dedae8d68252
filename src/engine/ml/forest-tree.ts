// Growing histogram-based decision trees on binned rows, level by level, many trees at once.
// `ForestGrowth` holds the trees being grown and decides every split in float64; a split finder
// (CPU: forest-split-cpu.ts, GPU: exec/gpu-forest.ts) knows where the rows are and reports, per
// frontier node, the node's totals and, per candidate feature, its best bin with the left side's
// totals. The decisions go back to the finder, which moves rows to the children.
//
// Why level by level: a GPU finder handles a whole level of every tree in one submission. The
// random choices (bootstrap weights, then per node a fresh feature subset, drawn in each tree's
// level order) come from the tree's own stream (seed, tree), so a tree is the same whichever
// worker grows it and whatever other trees share its batch.

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

/**
 * Weighted totals of a set of rows: per class weights (classification), or
 * [weight, Σ w·y, Σ w·y²] (regression).
 */
export type NodeTotals = Float64Array;

/** A node of the current level that may still split. */
export interface FrontierNode {
  /** Position of the tree in this growth's batch. */
  tree: number;
  /** The node's index in its tree. */
  node: number;
  depth: number;
  /** Candidate features for this node, in draw order. */
  features: Int32Array;
}

/** What a finder reports for one frontier node: its totals, and per candidate its best bin (-1: none) with the left side's totals. */
export interface NodeSearch { totals: NodeTotals; best: { bin: number; left: NodeTotals }[] }

/** Where a frontier node's rows go: to child frontier positions of the next level (-1: a leaf, rows dropped), or nowhere (a leaf). */
export type RouteDecision = { feature: number; bin: number; left: number; right: number } | null;

export interface SplitFinder {
  /** Searches every node of the level; results in frontier order. */
  search(frontier: readonly FrontierNode[]): NodeSearch[] | Promise<NodeSearch[]>;
  /** Moves each frontier node's rows as decided (decisions in frontier order). */
  route(decisions: readonly RouteDecision[]): void | Promise<void>;
}

export function totalsWidth(data: BinnedData, task: TreeSpec['task']): number {
  return task === 'classification' ? data.nClasses : 3;
}

export function totalWeight(t: NodeTotals, task: TreeSpec['task']): number {
  if (task === 'regression') return t[0];
  let w = 0;
  for (let c = 0; c < t.length; c++) w += t[c];
  return w;
}

/** Score to maximise for one side of a split (the impurity it removes, up to a constant). */
export function sideScore(criterion: TreeSpec['criterion'], task: TreeSpec['task'], t: NodeTotals): number {
  const w = totalWeight(t, task);
  if (task === 'regression') return (t[1] * t[1]) / w; // variance: maximise Σ S²/W
  let s = 0;
  if (criterion === 'gini') {
    for (let c = 0; c < t.length; c++) s += t[c] * t[c];
    return s / w;
  }
  for (let c = 0; c < t.length; c++) if (t[c] > 0) s += t[c] * Math.log(t[c] / w);
  return s; // entropy: maximise Σ c log(c / W)
}

function minus(a: NodeTotals, b: NodeTotals): NodeTotals {
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] - b[i];
  return out;
}

/** Bootstrap: n draws with replacement become per-row counts; without bootstrap every row counts once. */
function rowWeights(n: number, bootstrap: boolean, rng: Rng): Int32Array {
  const w = new Int32Array(n);
  if (!bootstrap) return w.fill(1);
  for (let i = 0; i < n; i++) w[rng.nextInt(n)]++;
  return w;
}

interface TreeState { tree: GrownTree; rng: Rng; features: Int32Array }

/** The trees of one batch while they grow; `frontier` is the level the finder searches next. */
export class ForestGrowth {
  private readonly trees: TreeState[];
  /** Bootstrap count per row, per tree of the batch. */
  readonly weights: Int32Array[];
  frontier: FrontierNode[];
  private readonly width: number;

  constructor(readonly data: BinnedData, readonly spec: TreeSpec, treeIndices: readonly number[]) {
    this.width = spec.task === 'classification' ? data.nClasses : 1;
    this.trees = [];
    this.weights = [];
    this.frontier = [];
    treeIndices.forEach((index, t) => {
      const rng = new Rng(spec.seed, 'rf-tree', index);
      this.weights.push(rowWeights(data.rows, spec.bootstrap, rng));
      const state: TreeState = { tree: { feature: [], bin: [], left: [], right: [], value: [] }, rng, features: Int32Array.from({ length: data.cols }, (_, i) => i) };
      this.trees.push(state);
      this.frontier.push(this.frontierNode(t, this.addNode(state), 0));
    });
  }

  /** The trees of the batch, in batch order (complete once `done`). */
  get grown(): GrownTree[] {
    return this.trees.map((t) => t.tree);
  }

  get done(): boolean {
    return this.frontier.length === 0;
  }

  /**
   * Sets each frontier node's value and decides its split from the finder's results; the next
   * level becomes the frontier. Children whose fate is already known (too deep, too light, pure)
   * become leaves at once. Returns where each node's rows go.
   */
  decide(results: readonly NodeSearch[]): RouteDecision[] {
    const { spec } = this;
    const next: FrontierNode[] = [];
    const decisions = this.frontier.map((f, i): RouteDecision => {
      const { totals, best } = results[i];
      const state = this.trees[f.tree];
      this.setValue(state.tree, f.node, totals);
      if (this.isLeaf(totals, f.depth)) return null;
      const parentScore = sideScore(spec.criterion, spec.task, totals);
      let chosen: { feature: number; bin: number; left: NodeTotals; score: number } | null = null;
      best.forEach(({ bin, left }, k) => {
        if (bin < 0) return;
        const score = sideScore(spec.criterion, spec.task, left) + sideScore(spec.criterion, spec.task, minus(totals, left));
        if (score > parentScore + 1e-12 * Math.abs(parentScore) && (chosen === null || score > chosen.score)) chosen = { feature: f.features[k], bin, left, score };
      });
      if (chosen === null) return null;
      const { feature, bin, left } = chosen as { feature: number; bin: number; left: NodeTotals };
      const { tree } = state;
      tree.feature[f.node] = feature;
      tree.bin[f.node] = bin;
      /** Adds a child node; returns its position in the next frontier (-1: a leaf already). */
      const child = (node: number, t: NodeTotals): number => {
        if (this.isLeaf(t, f.depth + 1)) { this.setValue(tree, node, t); return -1; }
        next.push(this.frontierNode(f.tree, node, f.depth + 1));
        return next.length - 1;
      };
      // Children numbered left then right; their candidate features drawn in that order.
      tree.left[f.node] = this.addNode(state);
      tree.right[f.node] = this.addNode(state);
      const leftAt = child(tree.left[f.node], left);
      const rightAt = child(tree.right[f.node], minus(totals, left));
      return { feature, bin, left: leftAt, right: rightAt };
    });
    this.frontier = next;
    return decisions;
  }

  private frontierNode(tree: number, node: number, depth: number): FrontierNode {
    // Partial Fisher–Yates: the node's candidates drawn without replacement from the tree's stream.
    const { rng, features } = this.trees[tree];
    const m = this.spec.maxFeatures;
    for (let k = 0; k < m; k++) {
      const pick = k + rng.nextInt(features.length - k);
      const f = features[pick]; features[pick] = features[k]; features[k] = f;
    }
    return { tree, node, depth, features: features.slice(0, m) };
  }

  private isLeaf(t: NodeTotals, depth: number): boolean {
    const { spec } = this;
    const w = totalWeight(t, spec.task);
    if (depth >= spec.maxDepth || w < 2 * spec.minSamplesLeaf) return true;
    if (spec.task === 'classification') return t.some((c) => c === w);
    return t[2] - (t[1] * t[1]) / w <= 1e-12 * Math.abs(t[2]);
  }

  private addNode(state: TreeState): number {
    const { tree } = state;
    tree.feature.push(-1); tree.bin.push(-1); tree.left.push(-1); tree.right.push(-1);
    for (let i = 0; i < this.width; i++) tree.value.push(0);
    return tree.feature.length - 1;
  }

  private setValue(tree: GrownTree, node: number, t: NodeTotals): void {
    const w = totalWeight(t, this.spec.task);
    if (this.spec.task === 'classification') for (let c = 0; c < this.width; c++) tree.value[node * this.width + c] = t[c] / w;
    else tree.value[node] = t[1] / w;
  }
}
