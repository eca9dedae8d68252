// Prediction for every model kind on a row-major block of feature values (columns in the
// model's featureNames order).

import { nearestCenter } from './kmeans-tasks.js';
import type { ForestModel, Model } from './model.js';

export interface Prediction {
  /** Cluster ids (k-means, Int32Array), class labels or regression values (Float64Array). */
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

const LEAF_BLOCK_ROWS = 256;

/** The leaf each row reaches in each tree: leaves[r × trees + t], relative to the tree's first node. */
export function forestLeaves(model: ForestModel, x: Float64Array, rows: number, d: number): Int32Array {
  const { treeOffsets, feature, threshold, left, right } = model.trees;
  const nTrees = treeOffsets.length - 1;
  const leaves = new Int32Array(rows * nTrees);
  // Blocks of rows walk one tree at a time: the tree's nodes and the block's rows stay in cache
  // (row by row through every tree, each step missed the cache).
  for (let r0 = 0; r0 < rows; r0 += LEAF_BLOCK_ROWS) {
    const r1 = Math.min(rows, r0 + LEAF_BLOCK_ROWS);
    for (let t = 0; t < nTrees; t++) {
      const base = treeOffsets[t];
      for (let r = r0; r < r1; r++) {
        let node = 0;
        while (feature[base + node] >= 0) {
          const i = base + node;
          node = x[r * d + feature[i]] <= threshold[i] ? left[i] : right[i];
        }
        leaves[r * nTrees + t] = node;
      }
    }
  }
  return leaves;
}

/** The forest's prediction from the leaves its rows reach (forestLeaves, or the GPU's traversal), summed in tree order. */
export function predictFromLeaves(model: ForestModel, leaves: Int32Array, rows: number, wantProba: boolean): Prediction {
  const { treeOffsets, value, valueWidth: w } = model.trees;
  const nTrees = treeOffsets.length - 1;
  const acc = new Float64Array(rows * w);
  for (let r = 0; r < rows; r++) {
    for (let t = 0; t < nTrees; t++) {
      const node = treeOffsets[t] + leaves[r * nTrees + t];
      for (let c = 0; c < w; c++) acc[r * w + c] += value[node * w + c];
    }
  }
  for (let i = 0; i < acc.length; i++) acc[i] /= nTrees;
  if (model.task === 'regression') return { prediction: acc };
  const prediction = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let best = 0;
    for (let c = 1; c < w; c++) if (acc[r * w + c] > acc[r * w + best]) best = c;
    prediction[r] = model.classes[best];
  }
  return wantProba ? { prediction, proba: acc } : { prediction };
}
