// Growing histogram-based decision trees on binned rows, level by level, many trees at once.
// `ForestGrowth` holds the trees being grown and decides every split in float64; a split finder
// (CPU: forest-split-cpu.ts, GPU: exec/gpu-forest.ts) knows where the rows are and reports, per
// frontier node, the node's totals and, per candidate feature, its best bin with the left side's
// totals. The decisions go back to the finder, which moves rows to the children.
//
// Why level by level: a GPU finder handles a whole level of every tree in one submission. The
// random choices (bootstrap draws keyed by (seed, tree, draw); per node a fresh feature subset,
// drawn in each tree's level order from the tree's own stream) depend only on the tree, so a tree
// is the same whichever worker grows it and whatever other trees share its batch.

import { bootstrapCounts, Rng, rowKey } from './random.js';

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

/** Nodes of one tree; thresholds are bin numbers, children relative to the tree's first node; -1: none (a leaf). */
export interface GrownTree { feature: Int32Array; bin: Int32Array; left: Int32Array; right: Int32Array; value: Float64Array }

/**
 * Weighted totals of a set of rows, `width` numbers at an offset of a Float64Array: per class
 * weights (classification), or [weight, Σ w·y, Σ w·y²] (regression).
 */
export function totalsWidth(data: BinnedData, task: TreeSpec['task']): number {
  return task === 'classification' ? data.nClasses : 3;
}

/**
 * The nodes of one level that may still split (struct of arrays, `count` nodes). -1 in
 * `features` (count × maxFeatures, draw order) means "no candidate".
 */
export interface Frontier { count: number; tree: Int32Array; node: Int32Array; depth: Int32Array; features: Int32Array }

/**
 * What a finder reports for a level, per node: its totals (count × width) and its best split:
 * the candidate (index k into its features; -1: none), the bin, and the left side's totals there
 * (count × width). A CPU finder compares splits in float64, a GPU finder in f32; either way the
 * totals are exact and the grower checks in float64 that the split improves on its node.
 * Regression totals may carry Σ w·y² as NaN (the GPU's exact sums have no squares): such a node is
 * never taken as pure up front, and a split of a pure node improves nothing, so it is refused.
 */
export interface LevelSearch { totals: Float64Array; candidate: Int32Array; bin: Int32Array; left: Float64Array }

/**
 * Where each node's rows go, 4 words per node: [feature, bin, left, right]; left/right are
 * positions in the next frontier, -1 when that child is already a leaf (its rows are dropped);
 * feature -1 when the node is a leaf.
 */
export type LevelRoute = Int32Array;

export interface SplitFinder {
  search(frontier: Frontier): LevelSearch | Promise<LevelSearch>;
  route(route: LevelRoute): void | Promise<void>;
}

export function totalWeight(t: Float64Array, at: number, width: number, task: TreeSpec['task']): number {
  if (task === 'regression') return t[at];
  let w = 0;
  for (let c = 0; c < width; c++) w += t[at + c];
  return w;
}

/** Score to maximise for one side of a split (the impurity it removes, up to a constant). */
export function sideScore(criterion: TreeSpec['criterion'], task: TreeSpec['task'], t: Float64Array, at: number, width: number): number {
  const w = totalWeight(t, at, width, task);
  if (task === 'regression') return (t[at + 1] * t[at + 1]) / w; // variance: maximise Σ S²/W
  let s = 0;
  if (criterion === 'gini') {
    for (let c = 0; c < width; c++) s += t[at + c] * t[at + c];
    return s / w;
  }
  for (let c = 0; c < width; c++) { const v = t[at + c]; if (v > 0) s += v * Math.log(v / w); }
  return s; // entropy: maximise Σ c log(c / W)
}

/** Key of tree `index`'s bootstrap draws (bootstrapCounts; the GPU makes the same draws). */
export function bootstrapKey(spec: TreeSpec, index: number): number {
  return rowKey(spec.seed, 'rf-bootstrap', index);
}

/** Per-row weights of tree `index`: n draws with replacement as counts, or every row once without bootstrap. */
export function treeWeights(rows: number, spec: TreeSpec, index: number): Int32Array {
  return spec.bootstrap ? bootstrapCounts(bootstrapKey(spec, index), rows) : new Int32Array(rows).fill(1);
}

/** A tree's nodes while it grows: typed columns that double when full. */
class TreeBuilder {
  count = 0;
  feature = new Int32Array(64); bin = new Int32Array(64); left = new Int32Array(64); right = new Int32Array(64);
  value: Float64Array;

  constructor(private readonly valueWidth: number) {
    this.value = new Float64Array(64 * valueWidth);
  }

  /** A new leaf node (no split, value 0). */
  add(): number {
    if (this.count === this.feature.length) {
      const grow = <T extends Int32Array | Float64Array>(a: T): T => { const b = new (a.constructor as new (n: number) => T)(a.length * 2); b.set(a); return b; };
      this.feature = grow(this.feature); this.bin = grow(this.bin); this.left = grow(this.left); this.right = grow(this.right); this.value = grow(this.value);
    }
    const node = this.count++;
    this.feature[node] = -1; this.bin[node] = -1; this.left[node] = -1; this.right[node] = -1;
    return node;
  }

  build(): GrownTree {
    const n = this.count;
    return { feature: this.feature.slice(0, n), bin: this.bin.slice(0, n), left: this.left.slice(0, n), right: this.right.slice(0, n), value: this.value.slice(0, n * this.valueWidth) };
  }
}

interface TreeState { tree: TreeBuilder; rng: Rng; features: Int32Array }

/** A growing array of Int32 columns: the next frontier, built node by node. */
class FrontierBuilder {
  count = 0;
  private tree = new Int32Array(16); private node = new Int32Array(16); private depth = new Int32Array(16);
  /** count × maxFeatures candidates; the caller fills a new node's row. */
  features: Int32Array;

  constructor(private readonly maxFeatures: number) {
    this.features = new Int32Array(16 * maxFeatures);
  }

  /** Appends a node; returns its position (its candidates go to features[at × maxFeatures ...]). */
  add(tree: number, node: number, depth: number): number {
    if (this.count === this.tree.length) {
      const grow = (a: Int32Array) => { const b = new Int32Array(a.length * 2); b.set(a); return b; };
      this.tree = grow(this.tree); this.node = grow(this.node); this.depth = grow(this.depth); this.features = grow(this.features);
    }
    const at = this.count++;
    this.tree[at] = tree; this.node[at] = node; this.depth[at] = depth;
    return at;
  }

  build(): Frontier {
    const n = this.count, m = this.maxFeatures;
    return { count: n, tree: this.tree.slice(0, n), node: this.node.slice(0, n), depth: this.depth.slice(0, n), features: this.features.slice(0, n * m) };
  }
}

/** The trees of one batch while they grow; `frontier` is the level the finder searches next. */
export class ForestGrowth {
  private readonly trees: TreeState[] = [];
  frontier: Frontier;
  /** Numbers per totals record (classes, or 3 for regression) and per leaf value (classes, or 1). */
  readonly width: number;
  private readonly valueWidth: number;

  /** The finder weights each tree's rows by treeWeights(rows, spec, treeIndices[t]). */
  constructor(readonly data: BinnedData, readonly spec: TreeSpec, readonly treeIndices: readonly number[]) {
    this.width = totalsWidth(data, spec.task);
    this.valueWidth = spec.task === 'classification' ? data.nClasses : 1;
    const roots = new FrontierBuilder(spec.maxFeatures);
    treeIndices.forEach((index, t) => {
      const rng = new Rng(spec.seed, 'rf-tree', index);
      const state: TreeState = { tree: new TreeBuilder(this.valueWidth), rng, features: Int32Array.from({ length: data.cols }, (_, i) => i) };
      this.trees.push(state);
      this.drawFeatures(state, roots, roots.add(t, state.tree.add(), 0));
    });
    this.frontier = roots.build();
  }

  /** The trees of the batch, in batch order (complete once `done`). */
  get grown(): GrownTree[] {
    return this.trees.map((t) => t.tree.build());
  }

  get done(): boolean {
    return this.frontier.count === 0;
  }

  /**
   * Sets each frontier node's value and decides its split from the finder's results; the next
   * level becomes the frontier. Children whose fate is already known (too deep, too light, pure)
   * become leaves at once. Returns where each node's rows go.
   */
  decide(search: LevelSearch): LevelRoute {
    const { spec, width } = this;
    const { criterion, task, maxFeatures: m } = spec;
    const f = this.frontier;
    const next = new FrontierBuilder(m);
    const route = new Int32Array(f.count * 4).fill(-1);
    const right = new Float64Array(width);
    for (let i = 0; i < f.count; i++) {
      const state = this.trees[f.tree[i]], { tree } = state, node = f.node[i], depth = f.depth[i];
      const totalsAt = i * width;
      this.setValue(tree, node, search.totals, totalsAt);
      if (this.isLeaf(search.totals, totalsAt, depth)) continue;
      const k = search.candidate[i];
      if (k < 0) continue;
      const leftAt = i * width;
      for (let c = 0; c < width; c++) right[c] = search.totals[totalsAt + c] - search.left[leftAt + c];
      const parentScore = sideScore(criterion, task, search.totals, totalsAt, width);
      const score = sideScore(criterion, task, search.left, leftAt, width) + sideScore(criterion, task, right, 0, width);
      if (!(score > parentScore + 1e-12 * Math.abs(parentScore))) continue;
      const feature = f.features[i * m + k], bin = search.bin[i];
      tree.feature[node] = feature;
      tree.bin[node] = bin;
      // Children numbered left then right; their candidate features drawn in that order.
      // add() may replace the columns: take the new nodes before writing to them.
      const leftNode = tree.add(), rightNode = tree.add();
      tree.left[node] = leftNode;
      tree.right[node] = rightNode;
      route[4 * i] = feature;
      route[4 * i + 1] = bin;
      route[4 * i + 2] = this.child(next, f.tree[i], tree.left[node], depth + 1, search.left, leftAt);
      route[4 * i + 3] = this.child(next, f.tree[i], tree.right[node], depth + 1, right, 0);
    }
    this.frontier = next.build();
    return route;
  }

  /** A new child's position in the next frontier, or -1 when it is a leaf already (its value set from its totals). */
  private child(next: FrontierBuilder, t: number, node: number, depth: number, totals: Float64Array, at: number): number {
    const state = this.trees[t];
    if (this.isLeaf(totals, at, depth)) { this.setValue(state.tree, node, totals, at); return -1; }
    const added = next.add(t, node, depth);
    this.drawFeatures(state, next, added);
    return added;
  }

  /** Partial Fisher–Yates: a node's candidates drawn without replacement from its tree's stream. */
  private drawFeatures({ rng, features }: TreeState, frontier: FrontierBuilder, at: number): void {
    const m = this.spec.maxFeatures, out = frontier.features;
    for (let k = 0; k < m; k++) {
      const pick = k + rng.nextInt(features.length - k);
      const f = features[pick]; features[pick] = features[k]; features[k] = f;
      out[at * m + k] = f;
    }
  }

  private isLeaf(t: Float64Array, at: number, depth: number): boolean {
    const { spec, width } = this;
    const w = totalWeight(t, at, width, spec.task);
    if (depth >= spec.maxDepth || w < 2 * spec.minSamplesLeaf) return true;
    if (spec.task === 'classification') {
      for (let c = 0; c < width; c++) if (t[at + c] === w) return true;
      return false;
    }
    if (Number.isNaN(t[at + 2])) return false; // Σ w·y² unknown (see LevelSearch)
    return t[at + 2] - (t[at + 1] * t[at + 1]) / w <= 1e-12 * Math.abs(t[at + 2]);
  }

  private setValue(tree: TreeBuilder, node: number, t: Float64Array, at: number): void {
    const w = totalWeight(t, at, this.width, this.spec.task);
    if (this.spec.task === 'classification') for (let c = 0; c < this.valueWidth; c++) tree.value[node * this.valueWidth + c] = t[at + c] / w;
    else tree.value[node] = t[at + 1] / w;
  }
}
