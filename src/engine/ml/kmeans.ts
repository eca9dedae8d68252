// k-means (scikit-learn's meaning of the parameters): k-means++ seeding (greedy, or k-means|| on
// larger inputs) or random seeding, Lloyd iterations where each partition returns per-cluster
// sums and counts, combined exactly (GPU steps' fixed-point sums) or in double-double in partition
// order (the CPU code's); --tol is relative to the mean feature variance; empty clusters take the
// rows farthest from their centres; the best of --n-init runs (lowest inertia) wins.

import { UsageError } from '../errors.js';
import { ddCombine, type DDArray } from './double-double.js';
import { concatFloat64 } from './design-matrix.js';
import { distSq, nearestCenter, type AssignArgs, type AssignResult, type ExactAssignment, type FixedPointBasis, type PartitionAssignment, type PickTarget, type SampleArgs, type ScoredRow } from './kmeans-tasks.js';
import { modelBase, type KMeansModel } from './model.js';
import type { PartitionedMatrix } from './partitioned.js';
import { Rng, rowKey } from './random.js';
import { columnMoments, type ColumnMoments } from './stats.js';

export interface KMeansParams {
  k: number;
  maxIter?: number;
  tol?: number;
  init?: 'k-means++' | 'random';
  nInit?: number;
  seed?: number;
}

export interface LloydResult { centers: Float64Array; inertia: number; iterations: number }

export async function fitKMeans(data: PartitionedMatrix, params: KMeansParams): Promise<KMeansModel> {
  const { k, maxIter = 300, tol = 1e-4, init = 'k-means++', nInit = 1, seed = 0 } = params;
  if (!Number.isInteger(k) || k < 1) throw new UsageError(`--k must be a positive integer, got ${k}`);
  if (k > data.rows) throw new UsageError(`--k ${k} is larger than the number of rows (${data.rows})`);
  if (!(nInit >= 1)) throw new UsageError(`--n-init must be at least 1, got ${nInit}`);
  const moments = await columnMoments(data);
  const absTol = absoluteTolerance(moments, data.cols, tol);
  const basis = basisOf(moments);
  let best: LloydResult | null = null;
  for (let run = 0; run < nInit; run++) {
    const start = await initialCenters(data, k, init, seed, run, { basis });
    const result = await runLloyd(data, start, k, maxIter, absTol, basis);
    if (best === null || result.inertia < best.inertia) best = result;
  }
  const model: KMeansModel = {
    kind: 'kmeans',
    ...modelBase(data.featureNames, null, [], { k, maxIter, tol, init, nInit, seed }, { inertia: best!.inertia, iterations: best!.iterations }),
    k,
    centroids: best!.centers,
  };
  return model;
}

/** scikit-learn: tol × mean of the features' variances. */
export function absoluteTolerance(m: ColumnMoments, cols: number, tol: number): number {
  let s = 0;
  for (let c = 0; c < cols; c++) s += m.centredSumSq[c] / m.rows;
  return cols > 0 ? (s / cols) * tol : 0;
}

/** The GPU step's fixed-point basis from the data's column statistics. */
function basisOf(m: ColumnMoments): FixedPointBasis {
  return { rows: m.rows, maxAbs: m.maxAbs };
}

/** Lloyd iterations from `centers` until the squared centre shift is at most absTol; inertia of the final centres. `basis`: the GPU step's (basisOf the data's column statistics). */
export async function runLloyd(data: PartitionedMatrix, start: Float64Array, k: number, maxIter: number, absTol: number, basis: FixedPointBasis): Promise<LloydResult> {
  const d = data.cols;
  let centers = start.slice();
  let iterations = 0;
  for (let it = 0; it < maxIter; it++) {
    const step = await assignAll(data, centers, k, basis, false);
    const next = new Float64Array(k * d);
    const empty: number[] = [];
    for (let c = 0; c < k; c++) {
      if (step.counts[c] === 0) { empty.push(c); continue; }
      for (let j = 0; j < d; j++) next[c * d + j] = step.sums[c * d + j] / step.counts[c];
    }
    if (empty.length > 0) await relocateEmpty(data, centers, k, empty, next);
    let shift = 0;
    for (let i = 0; i < next.length; i++) shift += (next[i] - centers[i]) ** 2;
    centers = next;
    iterations = it + 1;
    if (shift <= absTol) break;
  }
  const final = await assignAll(data, centers, k, basis, true);
  return { centers, inertia: final.inertia, iterations };
}

interface Assignment { counts: Float64Array; sums: Float64Array; inertia: number }

/** Every partition's assignment to `centers`, combined; the inertia only when `inertia` (the rounds' is not used). */
async function assignAll(data: PartitionedMatrix, centers: Float64Array, k: number, basis: FixedPointBasis, inertia: boolean): Promise<Assignment> {
  return combineAssignments(await data.map<PartitionAssignment>('kmeans.assign', { centers, k, basis, inertia } satisfies AssignArgs), k, data.cols);
}

/**
 * The partitions' assignments combined: the exact ones (GPU steps) added together first, in any
 * order (they are integers), and decoded once; then with the CPU code's double-double ones in
 * partition order. Which GPU computed a partition never changes the result.
 */
function combineAssignments(parts: readonly PartitionAssignment[], k: number, d: number): Assignment {
  const exact = parts.filter((p): p is ExactAssignment => 'plus' in p);
  const decoded = parts.filter((p): p is AssignResult => !('plus' in p));
  const all = exact.length > 0 ? [exact.reduce((a, b) => a.plus(b)).result(), ...decoded] : decoded;
  const counts = new Float64Array(k);
  for (const p of all) for (let c = 0; c < k; c++) counts[c] += p.counts[c];
  return {
    counts,
    sums: ddCombine(all.map((p) => p.sums), k * d),
    inertia: ddCombine(all.map((p) => p.inertia), 1)[0],
  };
}

/** Empty clusters take, in cluster order, the rows farthest from their nearest centre (as scikit-learn). */
async function relocateEmpty(data: PartitionedMatrix, centers: Float64Array, k: number, empty: number[], next: Float64Array): Promise<void> {
  const far = mergeBest(await data.map<ScoredRow[]>('kmeans.farthest', { centers, k, m: empty.length }), empty.length);
  empty.forEach((c, i) => next.set(far[i].values, c * data.cols));
}

/** The m best rows over all partitions (ascending score, then global row). */
function mergeBest(parts: ScoredRow[][], m: number): ScoredRow[] {
  return parts.flat().sort((a, b) => a.score - b.score || a.row - b.row).slice(0, m);
}

let seedingRuns = 0;

/** Rows from which k-means++ seeding runs as k-means|| (a few rounds over all rows) rather than greedy k-means++ (two rounds per centre). */
export const SCALABLE_SEEDING_ROWS = 1 << 17;
/** Candidates k-means|| gathers at most (expected; 2k a round): their weights are then one pass of the GPU step, which takes up to 1024 centres. */
const MAX_CANDIDATES = 800;
/**
 * Sampling rounds of k-means|| (Spark's default). 100 000 × 32 in 64 blobs, k = 64, three Lloyd
 * iterations from the seeds, seeds 1–11 (bench/kmeans-seeding.mjs): two rounds found every blob 11
 * times, three 10, five 9, greedy k-means++ 7 (the others missed one blob: ARI 0.98).
 */
const SCALABLE_SEEDING_ROUNDS = 2;

export interface SeedingOptions {
  /** The fixed-point basis of the GPU step (k-means|| weighs its candidates with it); column statistics by default. */
  basis?: FixedPointBasis;
  /** Rows from which k-means|| is used (SCALABLE_SEEDING_ROWS by default). */
  scalableFrom?: number;
  /** Sampling rounds of k-means|| (SCALABLE_SEEDING_ROUNDS by default; bench/kmeans-seeding.mjs compares others). */
  rounds?: number;
}

/** Starting centres for restart `run`: k-means++ (D² sampling over all rows) or k distinct random rows. */
export async function initialCenters(data: PartitionedMatrix, k: number, init: 'k-means++' | 'random', seed: number, run: number, options: SeedingOptions = {}): Promise<Float64Array> {
  const d = data.cols;
  const centers = new Float64Array(k * d);
  if (init === 'random') {
    const rows = mergeBest(await data.map<ScoredRow[]>('kmeans.smallestHash', { key: rowKey(seed, 'kmeans-random', run), m: k }), k);
    rows.forEach((r, c) => centers.set(r.values, c * d));
    return centers;
  }
  const [first] = mergeBest(await data.map<ScoredRow[]>('kmeans.smallestHash', { key: rowKey(seed, 'kmeans++-first', run), m: 1 }), 1);
  centers.set(first.values, 0);
  if (data.rows >= (options.scalableFrom ?? SCALABLE_SEEDING_ROWS) && k > 1) {
    const basis = options.basis ?? basisOf(await columnMoments(data));
    const scalable = await scalableKMeansPP(data, k, seed, run, basis, first.values, options.rounds ?? SCALABLE_SEEDING_ROUNDS);
    if (scalable) return scalable;
  }
  return greedyKMeansPP(data, k, seed, run, centers);
}

/** Greedy k-means++ (as scikit-learn) from the first centre in `centers`: two rounds over the rows per centre. */
async function greedyKMeansPP(data: PartitionedMatrix, k: number, seed: number, run: number, centers: Float64Array): Promise<Float64Array> {
  const d = data.cols;
  const rng = new Rng(seed, 'kmeans++', run);
  const scratchKey = `kmeans++:${process.pid}:${seedingRuns++}`;
  try {
    // Draw several candidates by D² sampling and keep the one that lowers the potential most; one
    // draw alone often seeds two centres in one cluster.
    const trials = 2 + Math.floor(Math.log(k));
    // Each partition's total weight (sum of nearest squared distances to the centres so far).
    let totals = (await data.map<DDArray>('kmeans.ppTotal', { run: scratchKey, centers: centers.slice(0, d), count: 1 })).map((t) => t.hi[0] + t.lo[0]);
    for (let c = 1; c < k; c++) {
      const so = { run: scratchKey, centers: centers.slice(0, c * d), count: c };
      // All the draws in one round: each partition answers the draws that land in it.
      const targets: PickTarget[] = Array.from({ length: trials }, () => {
        const [partition, target] = locateTarget(totals, rng.nextFloat());
        return { partition, target };
      });
      const picked = await data.map<(Float64Array | null)[]>('kmeans.ppPick', { ...so, targets });
      const candidates = new Float64Array(trials * d);
      for (let t = 0; t < trials; t++) candidates.set(picked.find((p) => p[t] !== null)![t]!, t * d);
      const perPartition = await data.map<DDArray>('kmeans.ppPotential', { ...so, candidates, trials });
      const potentials = ddCombine(perPartition, trials);
      let best = 0;
      for (let t = 1; t < trials; t++) if (potentials[t] < potentials[best]) best = t;
      centers.set(candidates.subarray(best * d, (best + 1) * d), c * d);
      // A partition's potential with the chosen candidate is its total weight for the next centre:
      // no round of its own.
      totals = perPartition.map((p) => p.hi[best] + p.lo[best]);
    }
  } finally {
    await data.map('kmeans.ppDrop', { run: scratchKey });
  }
  return centers;
}

/**
 * k-means|| (Bahmani et al., "Scalable k-means++"), from the first centre: rounds in which every
 * row joins the candidates on its own with probability 2k × its nearest squared distance / the
 * total (its row hash decides, so the partitioning does not), then the candidates weighted by the
 * rows nearest to them (a counts-only pass of the Lloyd step) and reduced to k centres on the host
 * by greedy weighted k-means++ and a few weighted Lloyd iterations: five passes over the rows
 * instead of 2k. Null when fewer than k candidates come up (few distinct rows): greedy k-means++ then.
 */
async function scalableKMeansPP(data: PartitionedMatrix, k: number, seed: number, run: number, basis: FixedPointBasis, first: Float64Array, maxRounds: number): Promise<Float64Array | null> {
  const d = data.cols;
  const oversampling = 2 * k;
  const rounds = Math.max(1, Math.min(maxRounds, Math.floor(MAX_CANDIDATES / oversampling)));
  const scratchKey = `kmeans||:${process.pid}:${seedingRuns++}`;
  const candidates: Float64Array[] = [first];
  try {
    const totalOf = async () => ddCombine(await data.map<DDArray>('kmeans.ppTotal', { run: scratchKey, centers: concatFloat64(candidates), count: candidates.length }), 1)[0];
    let phi = await totalOf();
    for (let r = 0; r < rounds && phi > 0; r++) {
      const args: SampleArgs = { run: scratchKey, centers: concatFloat64(candidates), count: candidates.length, key: rowKey(seed, `kmeans||:${run}`, r), oversampling, phi };
      const sampled = (await data.map<ScoredRow[]>('kmeans.parSample', args)).flat();
      if (sampled.length === 0) break;
      for (const row of sampled) candidates.push(row.values);
      if (r + 1 < rounds) phi = await totalOf();
    }
  } finally {
    await data.map('kmeans.ppDrop', { run: scratchKey });
  }
  if (candidates.length < k) return null;
  // Weights: the rows nearest to each candidate. Padded to a power of two centres (at least 64)
  // with copies of the first (ties go to the lower index, so the copies weigh nothing), so the GPU
  // step is compiled for few numbers of centres (a new one took ~1 s on the H200 with a cold cache).
  const m = candidates.length, padded = Math.max(64, 2 ** Math.ceil(Math.log2(m)));
  const points = concatFloat64(candidates);
  const centres = new Float64Array(padded * d);
  centres.set(points);
  for (let c = m; c < padded; c++) centres.set(first, c * d);
  const { counts } = combineAssignments(await data.map<PartitionAssignment>('kmeans.assign', { centers: centres, k: padded, basis, countsOnly: true } satisfies AssignArgs), padded, d);
  const weights = counts.slice(0, m);
  const rng = new Rng(seed, 'kmeans||', run);
  return weightedLloyd(points, weights, weightedKMeansPP(points, weights, k, d, rng), k, d, 10);
}

/** Greedy k-means++ over weighted points (m × d), on the host: each centre the best of several draws by weight × D². */
export function weightedKMeansPP(points: Float64Array, weights: Float64Array, k: number, d: number, rng: Rng): Float64Array {
  const m = weights.length;
  const centers = new Float64Array(k * d);
  const draw = (score: (i: number) => number): number => {
    let total = 0;
    for (let i = 0; i < m; i++) total += score(i);
    let target = rng.nextFloat() * total, last = -1;
    for (let i = 0; i < m; i++) {
      const s = score(i);
      if (s <= 0) continue;
      last = i;
      if (target < s) return i;
      target -= s;
    }
    return last;
  };
  const minD = new Float64Array(m);
  let chosen = Math.max(0, draw((i) => weights[i]));
  centers.set(points.subarray(chosen * d, (chosen + 1) * d), 0);
  for (let i = 0; i < m; i++) minD[i] = distSq(points, i * d, points, chosen * d, d, Infinity);
  const trials = 2 + Math.floor(Math.log(k));
  for (let c = 1; c < k; c++) {
    let best = -1, bestPotential = Infinity;
    for (let t = 0; t < trials; t++) {
      const cand = draw((i) => weights[i] * minD[i]);
      if (cand < 0) break; // every weighted point sits on a centre
      let potential = 0;
      for (let i = 0; i < m; i++) potential += weights[i] * Math.min(minD[i], distSq(points, i * d, points, cand * d, d, minD[i]));
      if (potential < bestPotential) { bestPotential = potential; best = cand; }
    }
    // No weight left: the first point not yet a centre (the candidates hold at least k distinct rows).
    if (best < 0) for (let i = 0; i < m && best < 0; i++) if (minD[i] > 0) best = i;
    if (best < 0) best = c % m;
    centers.set(points.subarray(best * d, (best + 1) * d), c * d);
    for (let i = 0; i < m; i++) minD[i] = Math.min(minD[i], distSq(points, i * d, points, best * d, d, minD[i]));
  }
  return centers;
}

/** Lloyd iterations over weighted points from `centers` (empty clusters keep their centre). */
export function weightedLloyd(points: Float64Array, weights: Float64Array, centers: Float64Array, k: number, d: number, iterations: number): Float64Array {
  const m = weights.length;
  for (let it = 0; it < iterations; it++) {
    const sums = new Float64Array(k * d), mass = new Float64Array(k);
    for (let i = 0; i < m; i++) {
      const [best] = nearestCenter(points, i * d, centers, k, d);
      mass[best] += weights[i];
      for (let j = 0; j < d; j++) sums[best * d + j] += weights[i] * points[i * d + j];
    }
    let moved = false;
    for (let c = 0; c < k; c++) {
      if (mass[c] <= 0) continue;
      for (let j = 0; j < d; j++) {
        const v = sums[c * d + j] / mass[c];
        if (v !== centers[c * d + j]) { centers[c * d + j] = v; moved = true; }
      }
    }
    if (!moved) break;
  }
  return centers;
}

/** Which partition the point u × (total weight) falls in, and the remaining weight inside it. */
function locateTarget(totals: number[], u: number): [number, number] {
  const total = totals.reduce((s, t) => s + t, 0);
  let target = u * total;
  let last = 0;
  for (let p = 0; p < totals.length; p++) {
    if (totals[p] <= 0) continue;
    last = p;
    if (target < totals[p]) return [p, target];
    target -= totals[p];
  }
  return [last, totals[last]];
}
