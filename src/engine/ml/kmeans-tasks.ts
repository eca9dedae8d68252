// Per-partition work of k-means: Lloyd assignment with per-cluster sums, k-means++ and k-means||
// seeding steps (each row's distance to its nearest centre is kept in scratch between steps), and
// choices of rows by a per-row hash so they do not depend on the partitioning.

import { ddAdd, ddZeros, type DDArray } from './double-double.js';
import type { MatrixPartition } from './partitioned.js';
import { rowUniform } from './random.js';
import { dropScratch, getScratch } from './scratch.js';

/** Squared distance between the d values at x[xBase] and at centers[cBase], stopping early (at a sum above it) once above `bound`. */
export function distSq(x: Float64Array, xBase: number, centers: Float64Array, cBase: number, d: number, bound: number): number {
  let s = 0;
  for (let j = 0; j < d; j++) {
    const t = x[xBase + j] - centers[cBase + j];
    s += t * t;
    if (s > bound) return s;
  }
  return s;
}

/** Index of the nearest centre (lowest index on ties) and its squared distance. */
export function nearestCenter(x: Float64Array, xBase: number, centers: Float64Array, k: number, d: number): [number, number] {
  let best = 0, bestD = Infinity;
  for (let c = 0; c < k; c++) {
    const dd = distSq(x, xBase, centers, c * d, d, bestD);
    if (dd < bestD) { bestD = dd; best = c; }
  }
  return [best, bestD];
}

/**
 * The fixed-point basis of the GPU step (kernels/kmeans.ts): all rows of the matrix and each
 * column's largest |f32(x)|, the same for every partition, so each partition's sums are exact
 * integers of one scale and the model does not depend on how rows are partitioned. The CPU code
 * sums in double-double and does not use it.
 */
export interface FixedPointBasis { rows: number; maxAbs: Float64Array }
/**
 * `countsOnly`: only the counts are wanted (a GPU may leave the sums and inertia 0). `inertia:
 * false`: the counts and sums are wanted, not the inertia (a GPU may leave it 0, and measure only
 * the rows whose nearest centre may have changed since its last round).
 */
export interface AssignArgs { centers: Float64Array; k: number; basis: FixedPointBasis; countsOnly?: boolean; inertia?: boolean }
export interface AssignResult { counts: Float64Array; sums: DDArray; inertia: DDArray }
/**
 * A partition's assignment whose sums are exact integers of the basis's scale (a GPU step's
 * words): such results add to each other exactly, in any order, and are decoded once.
 */
export interface ExactAssignment { plus(other: ExactAssignment): ExactAssignment; result(): AssignResult }
/** What a partition's kmeans.assign gives: the CPU code's double-double sums, or a GPU's exact ones. */
export type PartitionAssignment = AssignResult | ExactAssignment;

/** Lloyd E-step: nearest centre per row, and per-cluster counts and coordinate sums. */
function assign(part: MatrixPartition, { centers, k }: AssignArgs): AssignResult {
  const { rows, cols: d, x } = part;
  const counts = new Float64Array(k);
  const sums = ddZeros(k * d), inertia = ddZeros(1);
  for (let r = 0; r < rows; r++) {
    // Inlined nearestCenter: this is the hot loop, so no tuple per row.
    let c = 0, dist = Infinity;
    for (let j = 0; j < k; j++) {
      const dj = distSq(x, r * d, centers, j * d, d, dist);
      if (dj < dist) { dist = dj; c = j; }
    }
    counts[c]++;
    ddAdd(inertia, 0, dist);
    for (let j = 0; j < d; j++) ddAdd(sums, c * d + j, x[r * d + j]);
  }
  return { counts, sums, inertia };
}

/** A row chosen by a per-row score, with its global number (the tie-breaker) and values. */
export interface ScoredRow { score: number; row: number; values: Float64Array }

function byScoreThenRow(a: ScoredRow, b: ScoredRow): number {
  return a.score - b.score || a.row - b.row;
}

/** Keeps the m best rows by `score` (ascending) from a partition. */
/** Row r of a partition's matrix (a copy), without making its row-major form when it has none yet. */
function rowOf(part: MatrixPartition, r: number): Float64Array {
  return part.row ? part.row(r) : part.x.slice(r * part.cols, (r + 1) * part.cols);
}

function bestRows(part: MatrixPartition, m: number, score: (r: number) => number): ScoredRow[] {
  const picked: ScoredRow[] = [];
  const { rows, firstRow } = part;
  let worst = Infinity; // the score a row must beat (any, until m are picked)
  for (let r = 0; r < rows; r++) {
    const s = score(r);
    if (s >= worst) continue;
    picked.push({ score: s, row: firstRow + r, values: rowOf(part, r) });
    picked.sort(byScoreThenRow);
    if (picked.length > m) picked.pop();
    if (picked.length === m) worst = picked[m - 1].score;
  }
  return picked;
}

/** The m rows with the smallest hash under `key`: a uniform sample independent of partitioning. */
function smallestHash(part: MatrixPartition, { key, m }: { key: number; m: number }): ScoredRow[] {
  const firstRow = part.firstRow;
  return bestRows(part, m, (r) => rowUniform(key, firstRow + r));
}

/** The m rows farthest from their nearest centre (for relocating empty clusters). */
function farthest(part: MatrixPartition, { centers, k, m }: { centers: Float64Array; k: number; m: number }): ScoredRow[] {
  return bestRows(part, m, (r) => -nearestCenter(part.x, r * part.cols, centers, k, part.cols)[1]);
}

/** Seeding state of one run: each row's squared distance to its nearest centre among the first `count`. */
interface Seeding { minD2: Float64Array; count: number }

/**
 * Brings a partition's nearest distances up to the first `count` centres. The centres chosen so far
 * travel with every call, so a partition reloaded on a fresh worker (whose state died with the old
 * one) rebuilds it and seeding goes on exactly as it would have.
 */
function nearestSoFar(part: MatrixPartition, run: string, centers: Float64Array, count: number): Float64Array {
  const { rows, cols: d, x } = part;
  const s = getScratch<Seeding>(part, run, () => ({ minD2: new Float64Array(rows).fill(Infinity), count: 0 }));
  for (; s.count < count; s.count++) {
    const base = s.count * d;
    for (let r = 0; r < rows; r++) {
      const dist = distSq(x, r * d, centers, base, d, s.minD2[r]);
      if (dist < s.minD2[r]) s.minD2[r] = dist;
    }
  }
  return s.minD2;
}

export interface SeedingArgs { run: string; centers: Float64Array; count: number }

/** k-means++: the partition's total weight (sum of nearest squared distances). */
function ppTotal(part: MatrixPartition, { run, centers, count }: SeedingArgs): DDArray {
  const minD2 = nearestSoFar(part, run, centers, count);
  const total = ddZeros(1);
  for (let r = 0; r < part.rows; r++) ddAdd(total, 0, minD2[r]);
  return total;
}

/** Where one k-means++ draw lands: a partition, and the weight to pass inside it. */
export interface PickTarget { partition: number; target: number }

/** k-means++: for each draw that lands in this partition, the row where the running weight passes its target (null for the others). */
function ppPick(part: MatrixPartition, { run, centers, count, targets }: SeedingArgs & { targets: PickTarget[] }): (Float64Array | null)[] {
  if (!targets.some((t) => t.partition === part.index)) return targets.map(() => null);
  const minD2 = nearestSoFar(part, run, centers, count);
  return targets.map((t) => (t.partition === part.index ? pickRow(part, minD2, t.target) : null));
}

function pickRow(part: MatrixPartition, minD2: Float64Array, target: number): Float64Array {
  const acc = ddZeros(1);
  let last = -1;
  for (let r = 0; r < part.rows; r++) {
    if (minD2[r] <= 0) continue;
    last = r;
    ddAdd(acc, 0, minD2[r]);
    if (acc.hi[0] + acc.lo[0] > target) break;
  }
  if (last < 0) last = 0; // every row coincides with a centre: any row will do
  return part.x.slice(last * part.cols, (last + 1) * part.cols);
}

/** Greedy k-means++: the potential (sum of nearest squared distances) if each candidate were added. */
function ppPotential(part: MatrixPartition, { run, centers, count, candidates, trials }: SeedingArgs & { candidates: Float64Array; trials: number }): DDArray {
  const { rows, cols: d, x } = part;
  const minD2 = nearestSoFar(part, run, centers, count);
  const totals = ddZeros(trials);
  for (let t = 0; t < trials; t++) {
    for (let r = 0; r < rows; r++) ddAdd(totals, t, Math.min(minD2[r], distSq(x, r * d, candidates, t * d, d, minD2[r])));
  }
  return totals;
}

/** k-means|| oversampling: what one round samples. `phi`: the total weight of all rows for the first `count` centres. */
export interface SampleArgs extends SeedingArgs { key: number; oversampling: number; phi: number }

/**
 * k-means|| (scalable k-means++): each row on its own, with probability oversampling × its nearest
 * squared distance / phi, decided by its row hash under `key` so the choice does not depend on
 * the partitioning. Rows in row order.
 */
function parSample(part: MatrixPartition, { run, centers, count, key, oversampling, phi }: SampleArgs): ScoredRow[] {
  const minD2 = nearestSoFar(part, run, centers, count);
  const out: ScoredRow[] = [];
  for (let r = 0; r < part.rows; r++) {
    if (rowUniform(key, part.firstRow + r) * phi < oversampling * minD2[r]) out.push({ score: 0, row: part.firstRow + r, values: rowOf(part, r) });
  }
  return out;
}

function ppDrop(part: MatrixPartition, { run }: { run: string }): null {
  dropScratch(part, run);
  return null;
}

export const KMEANS_TASKS = {
  'kmeans.assign': assign,
  'kmeans.smallestHash': smallestHash,
  'kmeans.farthest': farthest,
  'kmeans.ppTotal': ppTotal,
  'kmeans.ppPick': ppPick,
  'kmeans.ppPotential': ppPotential,
  'kmeans.parSample': parSample,
  'kmeans.ppDrop': ppDrop,
};
