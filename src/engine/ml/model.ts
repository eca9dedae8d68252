// In-memory model objects. Parameters are typed arrays for fast prediction; model-file.ts
// turns them into the JSON contract and back.

import type { DType } from '../batch.js';

/**
 * Version written. 2: a forest's node arrays are packed (little-endian, base64) instead of JSON
 * number lists, so a forest of millions of nodes writes and loads in a fraction of a second.
 * Files of version 1 still load.
 */
export const MODEL_FORMAT_VERSION = 2;
export const READABLE_FORMAT_VERSIONS: readonly number[] = [1, 2];

export type ParamValue = string | number | boolean | null;

/**
 * A classifier's class: the target's value (a number, a string or a boolean). An int64 target's
 * classes are numbers while all are exact as doubles (|v| < 2^53), else all bigints (int64Classes).
 */
export type ClassLabel = number | string | boolean | bigint;

/** An int64 target's classes: numbers when every one is exact as a double (the usual labels), else the bigints themselves. */
export function int64Classes(values: readonly bigint[]): ClassLabel[] {
  return values.every((v) => Number.isSafeInteger(Number(v))) ? values.map(Number) : [...values];
}

interface ModelBase {
  formatVersion: typeof MODEL_FORMAT_VERSION;
  featureNames: string[];
  featureTypes: DType[];
  /** Target column the model was fitted on (null for k-means). */
  target: string | null;
  /** Class labels in output order (classifiers: all numbers, all bigints, all strings or all booleans, as the target was), else empty. */
  classes: ClassLabel[];
  params: Record<string, ParamValue>;
  metrics: Record<string, number>;
}

export interface KMeansModel extends ModelBase {
  kind: 'kmeans';
  k: number;
  /** k × features, row-major. */
  centroids: Float64Array;
}

export interface LinRegModel extends ModelBase {
  kind: 'linreg';
  coefficients: Float64Array;
  intercept: number;
}

/** All trees of a forest as flat node arrays; tree t holds nodes treeOffsets[t] .. treeOffsets[t+1]. */
export interface FlatTrees {
  treeOffsets: Int32Array;
  /** Split feature, or -1 for a leaf. */
  feature: Int32Array;
  /** Rows with x[feature] <= threshold go left. */
  threshold: Float64Array;
  /** Child node numbers, relative to the tree's first node (-1 for leaves). */
  left: Int32Array;
  right: Int32Array;
  /** valueWidth numbers per node: class probabilities (classification) or the mean target (regression). */
  value: Float64Array;
  valueWidth: number;
}

export interface ForestModel extends ModelBase {
  kind: 'random-forest';
  task: 'classification' | 'regression';
  trees: FlatTrees;
}

export type Model = KMeansModel | LinRegModel | ForestModel;

/** A model without its parameters: what planning a predict step needs (its input and output columns). */
export type ModelHeader = ModelBase & ({ kind: 'kmeans' } | { kind: 'linreg' } | { kind: 'random-forest'; task: ForestModel['task'] });
export type ModelKind = Model['kind'];

/** Common fields of a freshly trained model; callers may set featureTypes and target afterwards. */
export function modelBase(featureNames: string[], target: string | null, classes: ClassLabel[],
  params: Record<string, ParamValue>, metrics: Record<string, number>): ModelBase {
  return {
    formatVersion: MODEL_FORMAT_VERSION,
    featureNames: [...featureNames],
    featureTypes: featureNames.map(() => 'float64' as DType),
    target, classes, params, metrics,
  };
}
