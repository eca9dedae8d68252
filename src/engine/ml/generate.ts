// Synthetic data sets with scikit-learn's parameters and meaning (make_blobs,
// make_classification, make_regression), generated chunk by chunk: the model of the data
// (centres, covariances, coefficients) comes from the seed alone, and each chunk's rows from
// the stream (seed, chunkIndex), so output never depends on how many workers wrote it and
// 10^8 rows never need 10^8 rows of memory. Rows are not shuffled; the row order cycles
// through clusters (row r belongs to cluster r mod clusters), which gives scikit-learn's counts.

import type { Batch, Column, Field } from '../batch.js';
import { UsageError } from '../errors.js';
import { Rng } from './random.js';

export type GeneratorKind = 'blobs' | 'classification' | 'regression';

export interface GenerateParams {
  nSamples: number;
  nFeatures: number;
  seed?: number;
  // make_blobs
  centers?: number | number[][];
  clusterStd?: number | number[];
  centerBox?: [number, number];
  // make_classification
  nInformative?: number;
  nRedundant?: number;
  nRepeated?: number;
  nClasses?: number;
  nClustersPerClass?: number;
  classSep?: number;
  flipY?: number;
  hypercube?: boolean;
  /** Share of the rows in each class (scikit-learn's `weights`; the last may be left out); default equal. */
  weights?: number[];
  // make_regression
  bias?: number;
  noise?: number;
}

/** The columns generateChunk produces: x0..x{d-1} (float64), then y (int64 labels, or float64 for regression). */
export function generatedSchema(kind: GeneratorKind, params: GenerateParams): Field[] {
  const fields: Field[] = Array.from({ length: params.nFeatures }, (_, j) => ({ name: `x${j}`, type: 'float64' as const }));
  fields.push({ name: 'y', type: kind === 'regression' ? 'float64' : 'int64' });
  return fields;
}

/** Rows [chunkIndex × chunkRows, …) of the data set, at most chunkRows of them. */
export function generateChunk(kind: GeneratorKind, params: GenerateParams, chunkIndex: number, chunkRows: number): Batch {
  const { nSamples, nFeatures: d, seed = 0 } = params;
  if (!(Number.isInteger(nSamples) && nSamples >= 0)) throw new UsageError(`--n-samples must be a non-negative integer, got ${nSamples}`);
  if (!(Number.isInteger(d) && d >= 1)) throw new UsageError(`--n-features must be a positive integer, got ${d}`);
  const first = chunkIndex * chunkRows;
  const rows = Math.max(0, Math.min(chunkRows, nSamples - first));
  const x = new Float64Array(rows * d);
  const rng = new Rng(seed, `make-${kind}-rows`, chunkIndex);
  let y: Column;
  switch (kind) {
    case 'blobs': y = blobsRows(blobsModel(params), x, rows, d, first, rng); break;
    case 'classification': y = classificationRows(classificationModel(params), params, x, rows, d, first, rng); break;
    case 'regression': y = regressionRows(regressionModel(params), params, x, rows, d, rng); break;
  }
  return toBatch(x, rows, d, y);
}

function toBatch(x: Float64Array, rows: number, d: number, y: Column): Batch {
  const schema: Field[] = [];
  const columns: Column[] = [];
  for (let j = 0; j < d; j++) {
    const values = new Float64Array(rows);
    for (let r = 0; r < rows; r++) values[r] = x[r * d + j];
    schema.push({ name: `x${j}`, type: 'float64' });
    columns.push({ type: 'float64', values, valid: null });
  }
  schema.push({ name: 'y', type: y.type });
  columns.push(y);
  return { schema, length: rows, columns };
}

function labelColumn(labels: BigInt64Array): Column {
  return { type: 'int64', values: labels, valid: null };
}

// ---- make_blobs -------------------------------------------------------------------------------

interface BlobsModel { centers: Float64Array; stds: Float64Array; k: number }

function blobsModel(p: GenerateParams): BlobsModel {
  const d = p.nFeatures;
  const rng = new Rng(p.seed ?? 0, 'make-blobs-model');
  let centers: Float64Array, k: number;
  if (Array.isArray(p.centers)) {
    k = p.centers.length;
    if (p.centers.some((c) => c.length !== d)) throw new UsageError(`every centre needs ${d} coordinates`);
    centers = Float64Array.from(p.centers.flat());
  } else {
    k = p.centers ?? 3;
    if (!(Number.isInteger(k) && k >= 1)) throw new UsageError(`--centers must be a positive integer, got ${k}`);
    const [lo, hi] = p.centerBox ?? [-10, 10];
    centers = Float64Array.from({ length: k * d }, () => rng.uniform(lo, hi));
  }
  const std = p.clusterStd ?? 1;
  const stds = Array.isArray(std) ? Float64Array.from(std) : new Float64Array(k).fill(std);
  if (stds.length !== k) throw new UsageError(`--cluster-std has ${stds.length} values for ${k} centres`);
  return { centers, stds, k };
}

function blobsRows(m: BlobsModel, x: Float64Array, rows: number, d: number, first: number, rng: Rng): Column {
  const labels = new BigInt64Array(rows);
  for (let r = 0; r < rows; r++) {
    const c = (first + r) % m.k;
    labels[r] = BigInt(c);
    for (let j = 0; j < d; j++) x[r * d + j] = m.centers[c * d + j] + m.stds[c] * rng.normal();
  }
  return labelColumn(labels);
}

// ---- make_classification ----------------------------------------------------------------------

interface ClassificationModel {
  nInf: number; nRed: number; nClusters: number; nClasses: number;
  /** Running sums of the class shares, or null for equal shares. */
  cumulativeWeights: Float64Array | null;
  /** nClusters × nInf vertex centroids, and one nInf × nInf mixing matrix per cluster. */
  centroids: Float64Array; mixing: Float64Array[];
  /** nInf × nRed: redundant features are linear combinations of the informative ones. */
  redundant: Float64Array;
  /** Source column of each repeated feature. */
  repeatedFrom: Int32Array;
}

/** Running sums of scikit-learn's `weights` (n_classes values, or n_classes - 1 with the last implied), normalised. */
function cumulativeWeights(weights: number[] | undefined, nClasses: number): Float64Array | null {
  if (weights === undefined) return null;
  if (weights.length !== nClasses && weights.length !== nClasses - 1) throw new UsageError(`--weights has ${weights.length} values for ${nClasses} classes (give ${nClasses}, or ${nClasses - 1} and the last is the rest)`);
  const all = weights.length === nClasses ? weights : [...weights, 1 - weights.reduce((a, b) => a + b, 0)];
  if (all.some((w) => !(w >= 0))) throw new UsageError(`--weights must be shares ≥ 0${weights.length < nClasses ? ' summing to at most 1' : ''}, got ${weights.join(',')}`);
  const total = all.reduce((a, b) => a + b, 0);
  if (!(total > 0)) throw new UsageError('--weights must not all be 0');
  let run = 0;
  return Float64Array.from(all, (w) => (run += w / total));
}

function classificationModel(p: GenerateParams): ClassificationModel {
  const d = p.nFeatures;
  const { nInformative: nInf = 2, nRedundant: nRed = 2, nRepeated = 0, nClasses = 2, nClustersPerClass = 2, classSep = 1, hypercube = true } = p;
  if (nInf + nRed + nRepeated > d) throw new UsageError('--n-informative + --n-redundant + --n-repeated must be at most --n-features');
  const nClusters = nClasses * nClustersPerClass;
  if (nInf < 30 && nClusters > 2 ** nInf) throw new UsageError('--n-classes × --n-clusters-per-class must be at most 2^--n-informative');
  const rng = new Rng(p.seed ?? 0, 'make-classification-model');
  // Distinct random vertices of the hypercube of side 2 × class_sep.
  const seen = new Set<string>();
  const centroids = new Float64Array(nClusters * nInf);
  for (let c = 0; c < nClusters; c++) {
    let bits: number[];
    do bits = Array.from({ length: nInf }, () => rng.nextInt(2)); while (seen.has(bits.join('')));
    seen.add(bits.join(''));
    bits.forEach((b, j) => { centroids[c * nInf + j] = b * 2 * classSep - classSep; });
  }
  if (!hypercube) {
    for (let c = 0; c < nClusters; c++) { const s = rng.nextFloat(); for (let j = 0; j < nInf; j++) centroids[c * nInf + j] *= s; }
    for (let j = 0; j < nInf; j++) { const s = rng.nextFloat(); for (let c = 0; c < nClusters; c++) centroids[c * nInf + j] *= s; }
  }
  const mixing = Array.from({ length: nClusters }, () => Float64Array.from({ length: nInf * nInf }, () => 2 * rng.nextFloat() - 1));
  const redundant = Float64Array.from({ length: nInf * nRed }, () => 2 * rng.nextFloat() - 1);
  const repeatedFrom = Int32Array.from({ length: nRepeated }, () => Math.floor((nInf + nRed - 1) * rng.nextFloat() + 0.5));
  return { nInf, nRed, nClusters, nClasses, centroids, mixing, redundant, repeatedFrom, cumulativeWeights: cumulativeWeights(p.weights, nClasses) };
}

/**
 * Row i's cluster: in turn (i mod clusters) when the classes are equally likely; else class k for
 * a share weights[k] of the rows, from a golden-ratio sequence (so every stretch of rows holds the
 * classes in their shares, whatever the chunking), and its clusters in turn.
 */
function clusterOfRow(m: ClassificationModel, i: number): number {
  if (m.cumulativeWeights === null) return i % m.nClusters;
  const u = ((i + 0.5) * GOLDEN_FRACTION) % 1;
  let k = 0;
  while (k < m.nClasses - 1 && u >= m.cumulativeWeights[k]) k++;
  const perClass = m.nClusters / m.nClasses;
  // Cluster j of class k is k + j × nClasses (label = cluster mod nClasses, as for equal shares).
  return k + (Math.floor(i / m.nClasses) % perClass) * m.nClasses;
}

const GOLDEN_FRACTION = (Math.sqrt(5) - 1) / 2;

function classificationRows(m: ClassificationModel, p: GenerateParams, x: Float64Array, rows: number, d: number, first: number, rng: Rng): Column {
  const { nInf, nRed } = m;
  const flipY = p.flipY ?? 0.01;
  const labels = new BigInt64Array(rows);
  const z = new Float64Array(nInf);
  for (let r = 0; r < rows; r++) {
    const c = clusterOfRow(m, first + r);
    const base = r * d;
    for (let i = 0; i < nInf; i++) z[i] = rng.normal();
    const a = m.mixing[c];
    for (let j = 0; j < nInf; j++) {
      let s = m.centroids[c * nInf + j];
      for (let i = 0; i < nInf; i++) s += z[i] * a[i * nInf + j];
      x[base + j] = s;
    }
    for (let j = 0; j < nRed; j++) {
      let s = 0;
      for (let i = 0; i < nInf; i++) s += x[base + i] * m.redundant[i * nRed + j];
      x[base + nInf + j] = s;
    }
    const rep0 = nInf + nRed;
    m.repeatedFrom.forEach((src, k) => { x[base + rep0 + k] = x[base + src]; });
    for (let j = rep0 + m.repeatedFrom.length; j < d; j++) x[base + j] = rng.normal();
    let label = c % m.nClasses;
    if (rng.nextFloat() < flipY) label = rng.nextInt(m.nClasses);
    labels[r] = BigInt(label);
  }
  return labelColumn(labels);
}

// ---- make_regression --------------------------------------------------------------------------

function regressionModel(p: GenerateParams): Float64Array {
  const d = p.nFeatures;
  const nInf = Math.min(p.nInformative ?? 10, d);
  const rng = new Rng(p.seed ?? 0, 'make-regression-model');
  const coef = new Float64Array(d);
  for (let j = 0; j < nInf; j++) coef[j] = 100 * rng.nextFloat();
  return coef;
}

function regressionRows(coef: Float64Array, p: GenerateParams, x: Float64Array, rows: number, d: number, rng: Rng): Column {
  const { bias = 0, noise = 0 } = p;
  const y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = bias;
    for (let j = 0; j < d; j++) {
      const v = rng.normal();
      x[r * d + j] = v;
      s += v * coef[j];
    }
    y[r] = noise > 0 ? s + noise * rng.normal() : s;
  }
  return { type: 'float64', values: y, valid: null };
}

/** The true coefficients make_regression uses for this seed (scikit-learn's coef=True). */
export function regressionCoefficients(params: GenerateParams): Float64Array {
  return regressionModel(params);
}
