// k-means++ seeding quality: greedy k-means++ against k-means|| with ROUNDS sampling rounds, on
// blobs with as many true centres as k, three Lloyd iterations from the seeds; the adjusted Rand
// index of the result for each seed (1: every blob found). CPU code, in this process, after
// `npm run build`:
//   node bench/kmeans-seeding.mjs   (env: ROWS=100000 D=32 K=64 SEEDS=1-11 ROUNDS=2,3,5)

import { fileURLToPath } from 'node:url';

const dist = (m) => import(fileURLToPath(new URL(`../dist/${m}`, import.meta.url)));
const { generateChunk } = await dist('engine/ml/generate.js');
const { initialCenters, runLloyd } = await dist('engine/ml/kmeans.js');
const { columnMoments } = await dist('engine/ml/stats.js');
const { adjustedRandIndex } = await dist('engine/ml/metrics.js');
const { predictBatch } = await dist('engine/ml/predict.js');
const { inMemoryPartitions, splitRows } = await dist('engine/ml/partitioned.js');

const N = Number(process.env.ROWS ?? 100_000), D = Number(process.env.D ?? 32), K = Number(process.env.K ?? 64);
const [s0, s1] = (process.env.SEEDS ?? '1-11').split('-').map(Number);
const rounds = (process.env.ROUNDS ?? '2,3,5').split(',').map(Number);
const CHUNK = 25_000;

const lines = Object.fromEntries([['greedy k-means++', []], ...rounds.map((r) => [`k-means|| ${r} rounds`, []])]);
for (let seed = s0; seed <= s1; seed++) {
  const x = new Float64Array(N * D), truth = new Array(N);
  for (let c = 0; c * CHUNK < N; c++) {
    const batch = generateChunk('blobs', { nSamples: N, nFeatures: D, centers: K, clusterStd: 1, seed }, c, CHUNK);
    for (let j = 0; j < D; j++) { const col = batch.columns[j].values; for (let r = 0; r < batch.length; r++) x[(c * CHUNK + r) * D + j] = col[r]; }
    const y = batch.columns[D].values;
    for (let r = 0; r < batch.length; r++) truth[c * CHUNK + r] = Number(y[r]);
  }
  const names = Array.from({ length: D }, (_, j) => `x${j}`);
  const data = inMemoryPartitions(names, splitRows(x, null, D, 20_000));
  const m = await columnMoments(data);
  const basis = { rows: m.rows, maxAbs: m.maxAbs };
  for (const [name, options] of [['greedy k-means++', { scalableFrom: Infinity }], ...rounds.map((r) => [`k-means|| ${r} rounds`, { scalableFrom: 0, rounds: r, basis }])]) {
    const start = await initialCenters(data, K, 'k-means++', seed, 0, options);
    const result = await runLloyd(data, start, K, 3, 0, basis);
    const labels = predictBatch({ kind: 'kmeans', k: K, centroids: result.centers, featureNames: names }, x, N).prediction;
    lines[name].push(adjustedRandIndex(truth, Array.from(labels)).toFixed(3));
  }
}
console.log(`${N} × ${D} in ${K} blobs, k = ${K}, 3 Lloyd iterations; ARI for seeds ${s0}–${s1}:`);
for (const [name, aris] of Object.entries(lines)) console.log(`| ${name} | ${aris.join(' ')} | ${aris.filter((a) => a === '1.000').length} of ${aris.length} |`);
