// Forest prediction on the GPU (lavapipe): the order-preserving keys order like float64 (signed
// zeros, infinities, NaN, neighbours one ulp apart), and the device's traversal reaches exactly the
// leaves the CPU reaches, for a trained forest and rows sitting exactly on its thresholds, so the
// predictions are the same bytes.

import { describe, expect, it } from 'vitest';
import { firstDifference, skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { gpuForestLeafFinder } from '../src/engine/exec/gpu-forest-predict.js';
import { fitRandomForest } from '../src/engine/ml/forest.js';
import { forestLeaves, predictFromLeaves } from '../src/engine/ml/predict.js';
import { Rng } from '../src/engine/ml/random.js';
import { sortableKeys } from '../src/kernels/forest.js';
import { loadFixture, partitioned } from './ml-helpers.js';

function keyLessOrEqual(k: Uint32Array, i: number, j: number): boolean {
  return k[2 * i] < k[2 * j] || (k[2 * i] === k[2 * j] && k[2 * i + 1] <= k[2 * j + 1]);
}

describe('forest prediction keys', () => {
  it('compare like float64 <= (NaN greater than everything, -0 equal to 0)', () => {
    const rng = new Rng(3, 'sortable-keys');
    const special = [0, -0, Infinity, -Infinity, NaN, Number.MIN_VALUE, -Number.MIN_VALUE, Number.MAX_VALUE, -Number.MAX_VALUE, 1, 1 + Number.EPSILON, -1, -1 - Number.EPSILON, 0.1, -0.1];
    const values = Float64Array.from([...special, ...Array.from({ length: 300 }, () => (rng.nextFloat() - 0.5) * 10 ** rng.nextInt(12))]);
    const keys = sortableKeys(values);
    for (let i = 0; i < values.length; i++) {
      for (let j = 0; j < values.length; j++) {
        if (Number.isNaN(values[j])) continue; // thresholds are never NaN
        expect(keyLessOrEqual(keys, i, j), `${values[i]} <= ${values[j]}`).toBe(values[i] <= values[j]);
      }
    }
  });
});

describe.skipIf(skipGpuTests)('forest prediction on the GPU', () => {
  it('reaches the leaves the CPU reaches, rows on thresholds and odd values included', async () => {
    const ds = loadFixture('breast-cancer.csv');
    const model = await fitRandomForest(partitioned(ds, 200), { nEstimators: 15, maxDepth: 12, seed: 6 });
    const d = ds.cols, rng = new Rng(4, 'predict-rows');
    const rows = ds.rows + 400;
    const x = new Float64Array(rows * d);
    x.set(ds.x);
    const { feature, threshold } = model.trees;
    for (let r = ds.rows; r < rows; r++) {
      for (let j = 0; j < d; j++) {
        const pick = rng.nextInt(8);
        const node = rng.nextInt(feature.length);
        x[r * d + j] = pick === 0 ? NaN : pick === 1 ? -0 : pick === 2 ? (rng.nextInt(2) ? Infinity : -Infinity)
          : pick < 6 ? threshold[node] : ds.x[rng.nextInt(ds.rows) * d + j];
      }
    }
    const want = forestLeaves(model, x, rows, d);
    const got = await gpuForestLeafFinder(await testGpu())(model, x, rows);
    expect(firstDifference(got, want)).toBe(-1);
    expect(Array.from(predictFromLeaves(model, got, rows, true).proba!)).toEqual(Array.from(predictFromLeaves(model, want, rows, true).proba!));
    expect(new Set(want).size).toBeGreaterThan(20);
  }, 60_000);
});
