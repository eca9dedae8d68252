// Random forest driver. Partitions give a row sample for the bin edges and their binned rows;
// then every tree is grown on all binned rows (Uint8 bins, n × d bytes) by one grower, trees
// spread over workers (exec/forest-trees.ts). Chosen over per-node histograms reduced across
// partitions because a tree then needs no round trip per level, and tree i, seeded from
// (seed, i), is the same whichever worker grows it.

import { UsageError } from '../errors.js';
import { concatFloat64 } from './design-matrix.js';
import { quantileEdges } from './forest-bins.js';
import type { BinResult, SampleResult } from './forest-tasks.js';
import { growTreesOnCpu } from './forest-split-cpu.js';
import type { BinnedData, GrownTree, TreeSpec } from './forest-tree.js';
import { modelBase, type FlatTrees, type ForestModel } from './model.js';
import type { PartitionedMatrix } from './partitioned.js';
import { rowKey } from './random.js';

export interface ForestParams {
  task?: 'classification' | 'regression';
  nEstimators?: number;
  maxDepth?: number;
  nBins?: number;
  maxFeatures?: 'sqrt' | 'log2' | 'all' | number;
  minSamplesLeaf?: number;
  bootstrap?: boolean;
  criterion?: 'gini' | 'entropy';
  seed?: number;
  target?: string;
  /** Rows sampled to place the bin edges. */
  binSampleRows?: number;
}

/** Grows trees (indices into the forest) on binned rows; results in the order of `trees`. */
export interface TreeGrower {
  grow(data: BinnedData, spec: TreeSpec, trees: readonly number[]): Promise<GrownTree[]>;
}

/** Grows every tree here, on the CPU (tests, --workers 0). */
export const growHere: TreeGrower = {
  grow: async (data, spec, trees) => growTreesOnCpu(data, spec, trees),
};

export async function fitRandomForest(data: PartitionedMatrix, params: ForestParams = {}, grower: TreeGrower = growHere): Promise<ForestModel> {
  const { nEstimators = 100, maxDepth = 16, nBins = 32, minSamplesLeaf = 1, bootstrap = true,
    criterion = 'gini', seed = 0, target = 'y', binSampleRows = 200_000 } = params;
  if (!(nBins >= 2 && nBins <= 256)) throw new UsageError(`--n-bins must be between 2 and 256, got ${nBins}`);
  if (!(nEstimators >= 1)) throw new UsageError(`--n-estimators must be at least 1, got ${nEstimators}`);
  if (data.rows === 0) throw new UsageError('random forest training needs at least one row');
  const d = data.cols;
  const edges = await binEdges(data, nBins, seed, binSampleRows);
  const parts = await data.map<BinResult>('rf.bin', { edges });
  const y = concatFloat64(parts.map((p) => p.y));
  const task = params.task ?? (y.every(Number.isInteger) ? 'classification' : 'regression');
  const classes = task === 'classification' ? [...new Set(y)].sort((a, b) => a - b) : [];
  const binned: BinnedData = {
    rows: data.rows, cols: d,
    bins: concatColumnMajor(parts, d, data.rows),
    binsPerFeature: Int32Array.from(edges, (e) => e.length + 1),
    target: task === 'classification' ? encodeClasses(y, classes) : y,
    nClasses: classes.length,
  };
  const spec: TreeSpec = { task, criterion, maxDepth, minSamplesLeaf, bootstrap, seed, maxFeatures: resolveMaxFeatures(params.maxFeatures ?? (task === 'classification' ? 'sqrt' : 'all'), d) };
  const grown = await grower.grow(binned, spec, Array.from({ length: nEstimators }, (_, t) => t));
  return {
    kind: 'random-forest',
    ...modelBase(data.featureNames, target, classes,
      { task, nEstimators, maxDepth, nBins, maxFeatures: spec.maxFeatures, minSamplesLeaf, bootstrap, criterion, seed },
      { rows: data.rows }),
    task,
    trees: flattenTrees(grown, edges, task === 'classification' ? classes.length : 1),
  };
}

/** Quantile cut points per feature from a hash-chosen sample of about binSampleRows rows. */
async function binEdges(data: PartitionedMatrix, nBins: number, seed: number, binSampleRows: number): Promise<Float64Array[]> {
  const fraction = Math.min(1, binSampleRows / data.rows);
  const samples = await data.map<SampleResult>('rf.sample', { key: rowKey(seed, 'rf-bins'), fraction });
  const x = concatFloat64(samples.map((s) => s.x));
  const n = x.length / data.cols;
  const columns = Array.from({ length: data.cols }, () => new Float64Array(n));
  for (let r = 0; r < n; r++) for (let f = 0; f < data.cols; f++) columns[f][r] = x[r * data.cols + f];
  return columns.map((col) => quantileEdges(col, nBins));
}

export function resolveMaxFeatures(m: ForestParams['maxFeatures'], d: number): number {
  if (m === 'sqrt') return Math.max(1, Math.floor(Math.sqrt(d)));
  if (m === 'log2') return Math.max(1, Math.floor(Math.log2(d)));
  if (m === 'all' || m === undefined) return d;
  if (typeof m === 'number' && m > 0 && m <= 1) return Math.max(1, Math.floor(m * d));
  if (typeof m === 'number' && Number.isInteger(m) && m > 1) return Math.min(d, m);
  throw new UsageError(`--max-features must be sqrt, log2, all or a fraction in (0, 1], got ${m}`);
}

/** Joins per-partition column-major bins into one column-major matrix of all rows. */
function concatColumnMajor(parts: BinResult[], d: number, rows: number): Uint8Array {
  const out = new Uint8Array(rows * d);
  let at = 0;
  for (const p of parts) {
    for (let f = 0; f < d; f++) out.set(p.bins.subarray(f * p.rows, (f + 1) * p.rows), f * rows + at);
    at += p.rows;
  }
  return out;
}

function encodeClasses(y: Float64Array, classes: number[]): Int32Array {
  const out = new Int32Array(y.length);
  const small = classes.every((c) => Number.isInteger(c) && c >= 0 && c < 65536);
  if (small) {
    // The usual labels 0..k-1: an array lookup per row instead of a Map lookup.
    const code = new Int32Array(classes[classes.length - 1] + 1);
    classes.forEach((c, i) => { code[c] = i; });
    for (let r = 0; r < y.length; r++) out[r] = code[y[r]];
  } else {
    const code = new Map(classes.map((c, i) => [c, i]));
    for (let r = 0; r < y.length; r++) out[r] = code.get(y[r])!;
  }
  return out;
}

/** Trees as flat arrays, bin numbers turned into thresholds on raw values. */
function flattenTrees(trees: GrownTree[], edges: Float64Array[], valueWidth: number): FlatTrees {
  const total = trees.reduce((s, t) => s + t.feature.length, 0);
  const flat: FlatTrees = {
    treeOffsets: new Int32Array(trees.length + 1),
    feature: new Int32Array(total), threshold: new Float64Array(total),
    left: new Int32Array(total), right: new Int32Array(total),
    value: new Float64Array(total * valueWidth), valueWidth,
  };
  let at = 0;
  trees.forEach((t, i) => {
    flat.treeOffsets[i] = at;
    for (let n = 0; n < t.feature.length; n++) {
      const f = t.feature[n];
      flat.feature[at + n] = f;
      flat.threshold[at + n] = f >= 0 ? edges[f][t.bin[n]] : 0;
      flat.left[at + n] = t.left[n];
      flat.right[at + n] = t.right[n];
    }
    flat.value.set(t.value, at * valueWidth);
    at += t.feature.length;
  });
  flat.treeOffsets[trees.length] = at;
  return flat;
}
