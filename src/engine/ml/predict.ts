// Prediction for every model kind on a row-major block of feature values (columns in the
// model's featureNames order).

import { nearestCenter } from './kmeans-tasks.js';
import type { ForestModel, Model } from './model.js';

export interface Prediction {
  /** Cluster ids (k-means) and classifiers' class indices into model.classes (Int32Array), or regression values (Float64Array). */
  prediction: Float64Array | Int32Array;
  /** rows × classes, row-major, classes in model.classes order (classifiers with wantProba). */
  proba?: Float64Array;
}

export function predictBatch(model: Model, x: Float64Array, rows: number, wantProba = false): Prediction {
  const d = model.featureNames.length;
  switch (model.kind) {
    case 'kmeans': {
      const labels = new Int32Array(rows);
      for (let r = 0; r < rows; r++) labels[r] = nearestCenter(x, r * d, model.centroids, model.k, d)[0];
      return { prediction: labels };
    }
    case 'linreg': {
      const out = new Float64Array(rows);
      for (let r = 0; r < rows; r++) {
        let s = model.intercept;
        for (let j = 0; j < d; j++) s += x[r * d + j] * model.coefficients[j];
        out[r] = s;
      }
      return { prediction: out };
    }
    case 'random-forest':
      return predictForest(model, x, rows, d, wantProba);
  }
}

/** Averages the trees' leaf values (class probabilities, or means); the class is the first most probable. */
function predictForest(model: ForestModel, x: Float64Array, rows: number, d: number, wantProba: boolean): Prediction {
  return predictFromLeaves(model, forestLeaves(model, x, rows, d), rows, wantProba);
}

const LEAF_BLOCK_ROWS = 1024;

/** The leaf each row reaches in each tree: leaves[r × trees + t], relative to the tree's first node. */
export function forestLeaves(model: ForestModel, x: Float64Array, rows: number, d: number): Int32Array {
  const { treeStart, threshold, meta } = packedForest(model);
  const nTrees = treeStart.length - 1;
  const leaves = new Int32Array(rows * nTrees);
  const at = new Int32Array(LEAF_BLOCK_ROWS);
  // Blocks of rows walk one tree at a time (the tree's nodes and the block's rows stay in cache),
  // all rows of the block one level at a time: a row's steps wait on each other's loads, the
  // block's rows do not, so their cache misses overlap.
  for (let r0 = 0; r0 < rows; r0 += LEAF_BLOCK_ROWS) {
    const n = Math.min(rows, r0 + LEAF_BLOCK_ROWS) - r0;
    for (let t = 0; t < nTrees; t++) {
      at.fill(treeStart[t], 0, n);
      for (let walking = n; walking > 0;) {
        walking = 0;
        for (let k = 0; k < n; k++) {
          const i = at[k], f = meta[4 * i + 2];
          if (f < 0) continue;
          // NaN compares false, so it goes right, as in the flat trees.
          at[k] = meta[4 * i + 3] + (x[(r0 + k) * d + f] <= threshold[2 * i] ? 0 : 1);
          walking++;
        }
      }
      for (let k = 0; k < n; k++) leaves[(r0 + k) * nTrees + t] = meta[4 * at[k] + 3];
    }
  }
  return leaves;
}

/**
 * The forest's nodes for traversal: 16 bytes per node (threshold, feature, child) so a step reads
 * one cache line, not four arrays; each tree's nodes in breadth-first order (the levels every row
 * visits lie together) with the two children of a node side by side (right = left + 1). A leaf
 * holds feature -1 and its node number in the flat trees. Built once per model: a 100-tree, 7.5 M
 * node forest's traversal took ~50 ns a step over the flat arrays on the development machine.
 */
interface PackedForest { treeStart: Int32Array; threshold: Float64Array; meta: Int32Array }
const packedForests = new WeakMap<ForestModel, PackedForest>();

function packedForest(model: ForestModel): PackedForest {
  let packed = packedForests.get(model);
  if (packed) return packed;
  const { treeOffsets, feature, threshold: flatThreshold, left, right } = model.trees;
  const nodes = feature.length;
  const buffer = new ArrayBuffer(16 * nodes);
  const threshold = new Float64Array(buffer), meta = new Int32Array(buffer);
  const treeStart = new Int32Array(treeOffsets.length);
  const queue = new Int32Array(nodes); // flat node numbers (relative), in packed order
  for (let t = 0; t + 1 < treeOffsets.length; t++) {
    const base = treeOffsets[t], start = base; // a tree's packed nodes take the same range as its flat ones
    treeStart[t] = start;
    let head = 0, tail = 0;
    queue[tail++] = 0;
    while (head < tail) {
      const node = queue[head], at = start + head++;
      const f = feature[base + node];
      meta[4 * at + 2] = f;
      if (f < 0) { meta[4 * at + 3] = node; continue; }
      threshold[2 * at] = flatThreshold[base + node];
      meta[4 * at + 3] = start + tail;
      queue[tail++] = left[base + node];
      queue[tail++] = right[base + node];
    }
  }
  treeStart[treeOffsets.length - 1] = nodes;
  packed = { treeStart, threshold, meta };
  packedForests.set(model, packed);
  return packed;
}

/** The forest's prediction from the leaves its rows reach (forestLeaves, or the GPU's traversal), summed in tree order. */
export function predictFromLeaves(model: ForestModel, leaves: Int32Array, rows: number, wantProba: boolean): Prediction {
  const { treeOffsets, value, valueWidth: w } = model.trees;
  const nTrees = treeOffsets.length - 1;
  const acc = new Float64Array(rows * w);
  // Tree by tree (each row still adds its trees in order): one tree's values stay in cache.
  for (let t = 0; t < nTrees; t++) {
    const base = treeOffsets[t];
    for (let r = 0; r < rows; r++) {
      const node = base + leaves[r * nTrees + t];
      for (let c = 0; c < w; c++) acc[r * w + c] += value[node * w + c];
    }
  }
  for (let i = 0; i < acc.length; i++) acc[i] /= nTrees;
  if (model.task === 'regression') return { prediction: acc };
  const prediction = new Int32Array(rows);
  for (let r = 0; r < rows; r++) {
    let best = 0;
    for (let c = 1; c < w; c++) if (acc[r * w + c] > acc[r * w + best]) best = c;
    prediction[r] = best;
  }
  return wantProba ? { prediction, proba: acc } : { prediction };
}
