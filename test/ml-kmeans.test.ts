import { describe, expect, it } from 'vitest';
import { concatBatches, type Batch } from '../src/engine/batch.js';
import { generateChunk, type GenerateParams } from '../src/engine/ml/generate.js';
import { absoluteTolerance, fitKMeans, initialCenters, runLloyd, weightedKMeansPP, weightedLloyd } from '../src/engine/ml/kmeans.js';
import { Rng } from '../src/engine/ml/random.js';
import { columnMoments } from '../src/engine/ml/stats.js';
import { adjustedRandIndex } from '../src/engine/ml/metrics.js';
import { serializeModel } from '../src/engine/ml/model-file.js';
import { predictBatch } from '../src/engine/ml/predict.js';
import { partitioned } from './ml-helpers.js';

const D = 8, K = 6, N = 20_000;
const params: GenerateParams = { nSamples: N, nFeatures: D, centers: K, clusterStd: 1, seed: 7 };
const chunks: Batch[] = [];
for (let c = 0; c * 5000 < N; c++) chunks.push(generateChunk('blobs', params, c, 5000));
const batch = concatBatches(chunks[0].schema, chunks);
const names = Array.from({ length: D }, (_, j) => `x${j}`);
const x = new Float64Array(N * D);
for (let j = 0; j < D; j++) {
  const col = batch.columns[j].values as Float64Array;
  for (let r = 0; r < N; r++) x[r * D + j] = col[r];
}
const truth = Array.from(batch.columns[D].values as BigInt64Array, Number);
const data = { names, cols: D, x, y: null };

/** Textbook float64 Lloyd: same stopping rule (squared centre shift <= tol), inertia of the final centres. */
function referenceLloyd(start: Float64Array, maxIter: number, tol: number): number {
  let centers = start.slice();
  const assignInertia = (c: Float64Array): { labels: Int32Array; inertia: number } => {
    const labels = new Int32Array(N);
    let inertia = 0;
    for (let r = 0; r < N; r++) {
      let best = Infinity;
      for (let k = 0; k < K; k++) {
        let s = 0;
        for (let j = 0; j < D; j++) s += (x[r * D + j] - c[k * D + j]) ** 2;
        if (s < best) { best = s; labels[r] = k; }
      }
      inertia += best;
    }
    return { labels, inertia };
  };
  for (let it = 0; it < maxIter; it++) {
    const { labels } = assignInertia(centers);
    const next = new Float64Array(K * D), counts = new Float64Array(K);
    for (let r = 0; r < N; r++) { counts[labels[r]]++; for (let j = 0; j < D; j++) next[labels[r] * D + j] += x[r * D + j]; }
    for (let k = 0; k < K; k++) for (let j = 0; j < D; j++) next[k * D + j] = counts[k] ? next[k * D + j] / counts[k] : centers[k * D + j];
    let shift = 0;
    for (let i = 0; i < next.length; i++) shift += (next[i] - centers[i]) ** 2;
    centers = next;
    if (shift <= tol) break;
  }
  return assignInertia(centers).inertia;
}

describe('kmeans', () => {
  it('recovers well-separated blobs (ARI >= 0.99)', async () => {
    const model = await fitKMeans(partitioned(data, 4096), { k: K, seed: 3, nInit: 3 });
    const { prediction } = predictBatch(model, x, N);
    expect(adjustedRandIndex(truth, prediction)).toBeGreaterThanOrEqual(0.99);
    expect(model.metrics.iterations).toBeGreaterThan(0);
  });

  it('matches a float64 Lloyd reference inertia from the same k-means++ seeding', async () => {
    for (const init of ['k-means++', 'random'] as const) {
      const pm = partitioned(data, 3000);
      const start = await initialCenters(pm, K, init, 11, 0);
      const moments = await columnMoments(pm);
      const tol = absoluteTolerance(moments, pm.cols, 1e-4);
      const ours = await runLloyd(pm, start, K, 300, tol, moments);
      const ref = referenceLloyd(start, 300, tol);
      expect(Math.abs(ours.inertia - ref) / ref).toBeLessThan(1e-4);
    }
  });

  it('k-means++ picks distinct, spread-out centres', async () => {
    const start = await initialCenters(partitioned(data, 5000), K, 'k-means++', 5, 0);
    const labels = predictBatch({ kind: 'kmeans', k: K, centroids: start, featureNames: names } as never, start, K).prediction;
    expect(new Set(labels).size).toBe(K); // each centre is nearest to itself only
  });

  it('relocates empty clusters to the farthest rows', async () => {
    // 5 distinct points; starting with every centre at the origin leaves 4 clusters empty.
    const pts = new Float64Array([0, 0, 0, 0, 0, 0, 10, 10, 20, 20, 30, 30, 40, 40, 40, 40]);
    const pm = partitioned({ names: ['a', 'b'], cols: 2, x: pts, y: null }, 3);
    const result = await runLloyd(pm, new Float64Array(10), 5, 100, 0, await columnMoments(pm));
    expect(result.inertia).toBe(0);
    const centres = new Set(Array.from({ length: 5 }, (_, c) => `${result.centers[2 * c]},${result.centers[2 * c + 1]}`));
    expect(centres).toEqual(new Set(['0,0', '10,10', '20,20', '30,30', '40,40']));
  });

  it('k-means|| seeding (forced on these 20 000 rows): k distinct centres, the same for 1, 2 and 7 partitions; Lloyd from them recovers the blobs', async () => {
    const seeds = await Promise.all([N, N / 2, 3000].map((size) => initialCenters(partitioned(data, size), K, 'k-means++', 4, 0, { scalableFrom: 0 })));
    expect(Array.from(seeds[1])).toEqual(Array.from(seeds[0]));
    expect(Array.from(seeds[2])).toEqual(Array.from(seeds[0]));
    // Not greedy k-means++'s centres: the k-means|| path ran.
    expect(Array.from(seeds[0])).not.toEqual(Array.from(await initialCenters(partitioned(data, 3000), K, 'k-means++', 4, 0)));
    const labels = predictBatch({ kind: 'kmeans', k: K, centroids: seeds[0], featureNames: names } as never, seeds[0], K).prediction;
    expect(new Set(labels).size).toBe(K); // each centre is nearest to itself only
    const pm = partitioned(data, 3000);
    const result = await runLloyd(pm, seeds[0], K, 300, 0, await columnMoments(pm));
    const model = { kind: 'kmeans', k: K, centroids: result.centers, featureNames: names } as never;
    expect(adjustedRandIndex(truth, predictBatch(model, x, N).prediction)).toBeGreaterThanOrEqual(0.99);
  });

  it('weighted k-means++ and Lloyd on the host: weights count as repeated points', () => {
    // Three points repeated 1, 1 and 100 times: with k = 2 the heavy point gets a centre of its own.
    const points = new Float64Array([0, 0, 1, 0, 50, 0]);
    const weights = new Float64Array([1, 1, 100]);
    const centres = weightedLloyd(points, weights, weightedKMeansPP(points, weights, 2, 2, new Rng(1, 't')), 2, 2, 10);
    const sorted = [centres[0], centres[2]].sort((a, b) => a - b);
    expect(sorted).toEqual([0.5, 50]);
  });

  it('gives byte-identical model files for 1, 2 and 7 partitions', async () => {
    const files = await Promise.all([N, N / 2, 3000].map(async (size) =>
      serializeModel(await fitKMeans(partitioned(data, size), { k: K, seed: 9, nInit: 2 }))));
    expect(files[1]).toBe(files[0]);
    expect(files[2]).toBe(files[0]);
  });
});
