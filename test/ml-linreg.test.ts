import MLR from 'ml-regression-multivariate-linear';
import { describe, expect, it } from 'vitest';
import { generateChunk } from '../src/engine/ml/generate.js';
import { fitLinReg } from '../src/engine/ml/linreg.js';
import { r2 } from '../src/engine/ml/metrics.js';
import { serializeModel } from '../src/engine/ml/model-file.js';
import { predictBatch } from '../src/engine/ml/predict.js';
import { Rng } from '../src/engine/ml/random.js';
import { partitioned, rowsOf } from './ml-helpers.js';

const relErr = (a: number, b: number): number => Math.abs(a - b) / Math.max(Math.abs(b), 1e-300);

/** Well-conditioned data: make_regression features shifted off zero, with noise. */
function regressionData(n: number, d: number) {
  const batch = generateChunk('regression', { nSamples: n, nFeatures: d, nInformative: d - 1, noise: 5, bias: 3, seed: 2 }, 0, n);
  const x = new Float64Array(n * d);
  for (let j = 0; j < d; j++) {
    const col = batch.columns[j].values as Float64Array;
    for (let r = 0; r < n; r++) x[r * d + j] = col[r] + 10 * j; // offsets exercise the centring
  }
  const y = (batch.columns[d].values as Float64Array).slice();
  return { names: Array.from({ length: d }, (_, j) => `x${j}`), cols: d, x, y, n };
}

describe('linreg', () => {
  const data = regressionData(5000, 6);

  it('matches an SVD normal-equation reference (ml-regression-multivariate-linear) to 1e-6', async () => {
    const model = await fitLinReg(partitioned(data, 1200), {});
    const ref = new MLR(rowsOf(data.x, data.cols), Array.from(data.y, (v) => [v]), { statistics: false });
    for (let j = 0; j < data.cols; j++) expect(relErr(model.coefficients[j], ref.weights[j][0])).toBeLessThan(1e-6);
    expect(relErr(model.intercept, ref.weights[data.cols][0])).toBeLessThan(1e-6);
    const pred = predictBatch(model, data.x, data.n).prediction as Float64Array;
    expect(relErr(model.metrics.r2, r2(data.y, pred))).toBeLessThan(1e-9);
    expect(model.metrics.r2).toBeGreaterThan(0.9);
  });

  it('fits without an intercept like the reference does', async () => {
    const model = await fitLinReg(partitioned(data, 5000), { fitIntercept: false });
    const ref = new MLR(rowsOf(data.x, data.cols), Array.from(data.y, (v) => [v]), { intercept: false, statistics: false });
    for (let j = 0; j < data.cols; j++) expect(relErr(model.coefficients[j], ref.weights[j][0])).toBeLessThan(1e-6);
    expect(model.intercept).toBe(0);
  });

  it('returns the minimum-norm solution on collinear columns', async () => {
    // x1 = 2 x0 exactly, y = 3 x0 + 1: any a + 2b = 3 fits; the minimum-norm one is (0.6, 1.2).
    const rng = new Rng(5, 'collinear');
    const n = 1000;
    const x = new Float64Array(n * 2), y = new Float64Array(n);
    for (let r = 0; r < n; r++) { const v = rng.normal(); x[2 * r] = v; x[2 * r + 1] = 2 * v; y[r] = 3 * v + 1; }
    const model = await fitLinReg(partitioned({ names: ['a', 'b'], cols: 2, x, y }, 300), {});
    expect(model.metrics.rankDeficient).toBe(1);
    expect(model.coefficients[0]).toBeCloseTo(0.6, 9);
    expect(model.coefficients[1]).toBeCloseTo(1.2, 9);
    expect(model.intercept).toBeCloseTo(1, 9);
    expect(model.metrics.r2).toBeCloseTo(1, 9);
  });

  it('ridge matches the closed form (XcᵀXc + αI)⁻¹ Xcᵀyc on one feature', async () => {
    const rng = new Rng(6, 'ridge');
    const n = 500, alpha = 50;
    const x = new Float64Array(n), y = new Float64Array(n);
    for (let r = 0; r < n; r++) { x[r] = rng.normal() + 4; y[r] = 2 * x[r] + rng.normal(); }
    const mx = x.reduce((s, v) => s + v) / n, my = y.reduce((s, v) => s + v) / n;
    let sxx = 0, sxy = 0;
    for (let r = 0; r < n; r++) { sxx += (x[r] - mx) ** 2; sxy += (x[r] - mx) * (y[r] - my); }
    const w = sxy / (sxx + alpha);
    const model = await fitLinReg(partitioned({ names: ['a'], cols: 1, x, y }, 128), { alpha });
    expect(relErr(model.coefficients[0], w)).toBeLessThan(1e-10);
    expect(relErr(model.intercept, my - w * mx)).toBeLessThan(1e-10);
  });

  it('gives byte-identical model files for 1, 2 and 9 partitions', async () => {
    const files = await Promise.all([5000, 2500, 600].map(async (s) => serializeModel(await fitLinReg(partitioned(data, s), { alpha: 0.5 }))));
    expect(files[1]).toBe(files[0]);
    expect(files[2]).toBe(files[0]);
  });
});
