import { RandomForestClassifier } from 'ml-random-forest';
import { describe, expect, it } from 'vitest';
import { fitRandomForest } from '../src/engine/ml/forest.js';
import { generateChunk } from '../src/engine/ml/generate.js';
import { accuracy, r2 } from '../src/engine/ml/metrics.js';
import { parseModel, serializeModel } from '../src/engine/ml/model-file.js';
import { forestLeaves, predictBatch } from '../src/engine/ml/predict.js';
import type { ForestModel } from '../src/engine/ml/model.js';
import { growBatchOnCpu } from '../src/engine/ml/forest-split-cpu.js';
import type { BinnedData, TreeSpec } from '../src/engine/ml/forest-tree.js';
import { Rng } from '../src/engine/ml/random.js';
import { binMatrix, binOf, quantileEdges } from '../src/engine/ml/forest-bins.js';
import { loadFixture, partitioned, rowsOf, split, type Dataset } from './ml-helpers.js';

/** Test accuracy of our forest and of ml-random-forest with the same number of trees, depth and features. */
async function compare(ds: Dataset, trees: number, maxDepth: number): Promise<{ ours: number; theirs: number }> {
  const { train, test } = split(ds);
  const features = Math.floor(Math.sqrt(train.cols));
  const model = await fitRandomForest(partitioned(train, 200), { nEstimators: trees, maxDepth, maxFeatures: features, seed: 1 });
  const ours = accuracy(test.y, predictBatch(model, test.x, test.rows).prediction);
  const rf = new RandomForestClassifier({ nEstimators: trees, maxFeatures: features, replacement: false, seed: 1, treeOptions: { maxDepth }, noOOB: true });
  rf.train(rowsOf(train.x, train.cols), Array.from(train.y));
  const theirs = accuracy(test.y, rf.predict(rowsOf(test.x, test.cols)));
  return { ours, theirs };
}

describe('random forest', () => {
  it('breast cancer: accuracy no worse than ml-random-forest minus 1 point', async () => {
    const { ours, theirs } = await compare(loadFixture('breast-cancer.csv'), 50, 10);
    expect(ours).toBeGreaterThanOrEqual(theirs - 0.01);
    expect(ours).toBeGreaterThan(0.9);
  });

  it('digits: accuracy no worse than ml-random-forest minus 1 point', async () => {
    // ml-random-forest is slow on 64 features, so few trees here.
    const { ours, theirs } = await compare(loadFixture('digits.csv'), 5, 10);
    expect(ours).toBeGreaterThanOrEqual(theirs - 0.01);
    expect(ours).toBeGreaterThan(0.8);
  });

  it('identical model files for 1, 2 and 5 partitions; files load back and predict the same', async () => {
    const { train, test } = split(loadFixture('breast-cancer.csv'));
    const files = await Promise.all([train.rows, Math.ceil(train.rows / 2), 90].map(async (size) =>
      serializeModel(await fitRandomForest(partitioned(train, size), { nEstimators: 20, seed: 4, criterion: 'entropy' }))));
    expect(files[1]).toBe(files[0]);
    expect(files[2]).toBe(files[0]);
    const loaded = parseModel(files[0], 'rf.json');
    expect(serializeModel(loaded)).toBe(files[0]);
    const p = predictBatch(loaded, test.x, test.rows, true);
    expect(accuracy(test.y, p.prediction)).toBeGreaterThan(0.9);
    for (let r = 0; r < test.rows; r++) expect(p.proba![2 * r] + p.proba![2 * r + 1]).toBeCloseTo(1, 12);
  });

  it('regression on make_regression reaches R² > 0.8 on held-out rows', async () => {
    const b = generateChunk('regression', { nSamples: 4000, nFeatures: 4, nInformative: 2, noise: 1, seed: 8 }, 0, 4000);
    const names = ['x0', 'x1', 'x2', 'x3'];
    const x = new Float64Array(4000 * 4);
    names.forEach((_, j) => (b.columns[j].values as Float64Array).forEach((v, r) => { x[r * 4 + j] = v; }));
    const ds: Dataset = { names, rows: 4000, cols: 4, x, y: b.columns[4].values as Float64Array };
    const { train, test } = split(ds);
    const model = await fitRandomForest(partitioned(train, 1000), { task: 'regression', nEstimators: 30, nBins: 64, seed: 2 });
    expect(model.task).toBe('regression');
    expect(r2(test.y, predictBatch(model, test.x, test.rows).prediction)).toBeGreaterThan(0.8);
  });

  it('forestLeaves reaches the leaves a plain walk of the flat trees reaches (values on thresholds, NaN, -0, infinities, many row blocks)', async () => {
    const ds = loadFixture('breast-cancer.csv');
    const model = await fitRandomForest(partitioned(ds, 200), { nEstimators: 12, maxDepth: 10, seed: 4 }) as ForestModel;
    const { treeOffsets, feature, threshold, left, right } = model.trees;
    const d = ds.cols, rng = new Rng(9, 'leaves'), rows = 3000;
    const x = new Float64Array(rows * d);
    for (let i = 0; i < x.length; i++) {
      const pick = rng.nextInt(8);
      x[i] = pick === 0 ? NaN : pick === 1 ? -0 : pick === 2 ? (rng.nextInt(2) ? Infinity : -Infinity)
        : pick < 6 ? threshold[rng.nextInt(threshold.length)] : ds.x[rng.nextInt(ds.rows) * d + (i % d)];
    }
    const trees = treeOffsets.length - 1;
    const want = new Int32Array(rows * trees);
    for (let r = 0; r < rows; r++) {
      for (let t = 0; t < trees; t++) {
        const base = treeOffsets[t];
        let node = 0;
        while (feature[base + node] >= 0) node = x[r * d + feature[base + node]] <= threshold[base + node] ? left[base + node] : right[base + node];
        want[r * trees + t] = node;
      }
    }
    const got = forestLeaves(model, x, rows, d);
    expect(got).toEqual(want);
    expect(new Set(want).size).toBeGreaterThan(20);
  });

  it('a tree is the same whether grown alone or in a batch with others', () => {
    const rng = new Rng(3, 'forest-batch-test');
    const rows = 3000, cols = 7;
    const bins = Uint8Array.from({ length: rows * cols }, () => rng.nextInt(12));
    // Class depends on two features, with noise, so the trees are deep and different.
    const target = Int32Array.from({ length: rows }, (_, r) => ((bins[r] + bins[3 * rows + r] > 11 ? 1 : 0) + (rng.nextInt(10) === 0 ? 1 : 0)) % 3);
    const data: BinnedData = { rows, cols, bins, binsPerFeature: new Int32Array(cols).fill(12), target, nClasses: 3 };
    const spec: TreeSpec = { task: 'classification', criterion: 'gini', maxDepth: 8, minSamplesLeaf: 2, maxFeatures: 3, bootstrap: true, seed: 9 };
    const batch = growBatchOnCpu(data, spec, [4, 0, 7]);
    const alone = [4, 0, 7].map((t) => growBatchOnCpu(data, spec, [t])[0]);
    expect(batch).toEqual(alone);
    expect(batch[0]).not.toEqual(batch[1]);
    expect(batch[0].feature.length).toBeGreaterThan(20);
  });

  it('binMatrix gives every value the bin a binary search over the edges gives (NaN, ties, edges themselves, outliers), from rows or from columns', () => {
    const rng = new Rng(5, 'bin-matrix-test');
    const rows = 20011, cols = 6;
    const x = new Float64Array(rows * cols);
    for (let r = 0; r < rows; r++) {
      x[r * cols] = rng.nextInt(4);                                  // few distinct values
      x[r * cols + 1] = (rng.nextFloat() - 0.5) * 1e6;               // wide range
      x[r * cols + 2] = rng.nextInt(50) === 0 ? NaN : rng.nextFloat();
      x[r * cols + 3] = rng.nextInt(100) === 0 ? 1e300 : rng.nextFloat() * 1e-9; // tiny span, huge outliers
      x[r * cols + 4] = 7;                                           // constant: no edges
      x[r * cols + 5] = Math.round(rng.nextFloat() * 1000) / 8;      // many exact edge hits
    }
    const edges = Array.from({ length: cols }, (_, f) => quantileEdges(Float64Array.from({ length: 3000 }, (_, i) => x[(i * 7) % rows * cols + f]), f === 5 ? 256 : 32));
    expect(edges[4].length).toBe(0);
    expect(edges[5].length).toBeGreaterThan(200);
    const bins = binMatrix({ x, rows, cols }, edges);
    let mismatches = 0;
    for (let r = 0; r < rows; r++) for (let f = 0; f < cols; f++) if (bins[f * rows + r] !== binOf(edges[f], x[r * cols + f])) mismatches++;
    expect(mismatches).toBe(0);
    // A partition that keeps its columns (a GPU worker's) is binned from them, to the same bins.
    const columns = Array.from({ length: cols }, (_, f) => Float64Array.from({ length: rows }, (_, r) => x[r * cols + f]));
    const fromColumns = binMatrix({ rows, cols, get x(): Float64Array { throw new Error('row-major x read'); }, column: (f) => columns[f] }, edges);
    expect(Buffer.from(fromColumns).equals(Buffer.from(bins))).toBe(true);
  });

  it('quantile edges equal those read off the sorted sample (duplicates, NaN, outliers, few values)', () => {
    /** The definition: values at ranks j·n/nBins - 1 of the sorted sample; half-way cuts when few distinct values. */
    const reference = (sample: Float64Array, nBins: number): number[] => {
      const values = Array.from(sample.filter((v) => !Number.isNaN(v)).sort());
      const distinct = values.filter((v, i) => i === 0 || v !== values[i - 1]);
      if (distinct.length <= nBins) return distinct.slice(1).map((v, i) => distinct[i] + (v - distinct[i]) / 2);
      const edges: number[] = [];
      for (let j = 1; j < nBins; j++) {
        const v = values[Math.floor((j * values.length) / nBins) - 1];
        if (edges.length === 0 || v > edges[edges.length - 1]) edges.push(v);
      }
      if (edges[edges.length - 1] >= distinct[distinct.length - 1]) edges.pop();
      return edges;
    };
    const rng = new Rng(11, 'quantile-edges-test');
    const kinds: (() => number)[] = [
      () => rng.nextFloat(),
      () => rng.nextInt(40),
      () => (rng.nextInt(10) === 0 ? NaN : Math.round(rng.nextFloat() * 1000) / 4),
      () => (rng.nextInt(10) < 7 ? 5 : rng.nextFloat()),
      () => (rng.nextInt(500) === 0 ? 1e300 : -rng.nextFloat() * 1e-6),
      () => rng.normal() * 1e5,
    ];
    for (let t = 0; t < 240; t++) {
      const n = 1 + rng.nextInt(4000), nBins = [2, 3, 17, 32, 256][t % 5];
      const sample = Float64Array.from({ length: n }, kinds[t % kinds.length]);
      expect(Array.from(quantileEdges(sample.slice(), nBins)), `case ${t}`).toEqual(reference(sample, nBins));
    }
  });
});
