import { describe, expect, it } from 'vitest';
import { concatBatches } from '../src/engine/batch.js';
import { generateChunk, regressionCoefficients, type GenerateParams, type GeneratorKind } from '../src/engine/ml/generate.js';
import { accuracy, adjustedRandIndex, r2 } from '../src/engine/ml/metrics.js';

describe('generators', () => {
  const kinds: [GeneratorKind, GenerateParams][] = [
    ['blobs', { nSamples: 1000, nFeatures: 3, centers: 4, seed: 5 }],
    ['classification', { nSamples: 1000, nFeatures: 6, nClasses: 3, nInformative: 3, nRedundant: 1, seed: 5 }],
    ['regression', { nSamples: 1000, nFeatures: 5, nInformative: 3, seed: 5 }],
  ];

  it('are deterministic per (seed, chunk), with the requested shape and columns', () => {
    for (const [kind, p] of kinds) {
      const a = generateChunk(kind, p, 2, 300), b = generateChunk(kind, p, 2, 300);
      expect(a).toEqual(b);
      expect(a.length).toBe(300);
      expect(a.schema.map((f) => f.name)).toEqual([...Array.from({ length: p.nFeatures }, (_, j) => `x${j}`), 'y']);
      expect(a.schema.at(-1)!.type).toBe(kind === 'regression' ? 'float64' : 'int64');
      expect(generateChunk(kind, p, 3, 300).length).toBe(100); // last chunk is short
      expect(generateChunk(kind, p, 4, 300).length).toBe(0);
      expect(generateChunk(kind, { ...p, seed: 6 }, 2, 300)).not.toEqual(a);
    }
  });

  it('make_blobs balances clusters like scikit-learn and keeps cluster_std', () => {
    const p: GenerateParams = { nSamples: 40_000, nFeatures: 2, centers: 3, clusterStd: 2, seed: 1 };
    const chunks = [0, 1, 2, 3].map((c) => generateChunk('blobs', p, c, 10_000));
    const all = concatBatches(chunks[0].schema, chunks);
    const y = all.columns[2].values as BigInt64Array;
    expect([0n, 1n, 2n].map((c) => y.filter((v) => v === c).length)).toEqual([13334, 13333, 13333]);
    const x0 = all.columns[0].values as Float64Array;
    const inCluster = Array.from(x0).filter((_, r) => y[r] === 0n);
    const mean = inCluster.reduce((s, v) => s + v, 0) / inCluster.length;
    const sd = Math.sqrt(inCluster.reduce((s, v) => s + (v - mean) ** 2, 0) / (inCluster.length - 1));
    expect(sd).toBeGreaterThan(1.95);
    expect(sd).toBeLessThan(2.05);
    expect(Math.abs(mean)).toBeLessThanOrEqual(10);
  });

  it('make_regression without noise gives y = X·coef + bias exactly', () => {
    const p: GenerateParams = { nSamples: 500, nFeatures: 4, nInformative: 2, bias: 7, seed: 3 };
    const b = generateChunk('regression', p, 0, 500);
    const coef = regressionCoefficients(p);
    expect(coef[2]).toBe(0);
    expect(coef[0]).toBeGreaterThan(0);
    const y = b.columns[4].values as Float64Array;
    for (let r = 0; r < 500; r++) {
      let s = 7;
      for (let j = 0; j < 4; j++) s += (b.columns[j].values as Float64Array)[r] * coef[j];
      expect(y[r]).toBeCloseTo(s, 9);
    }
  });

  it('make_classification: redundant features are linear in the informative ones; flip_y flips about that share', () => {
    const p: GenerateParams = { nSamples: 20_000, nFeatures: 5, nInformative: 2, nRedundant: 1, nClasses: 2, flipY: 0, seed: 4 };
    const b = generateChunk('classification', p, 0, 20_000);
    const col = (j: number) => b.columns[j].values as Float64Array;
    // Fit x2 = a x0 + c x1 from 2 rows, check it on all rows.
    const [a0, a1, b0, b1] = [col(0)[0], col(1)[0], col(0)[1], col(1)[1]];
    const det = a0 * b1 - a1 * b0;
    const a = (col(2)[0] * b1 - a1 * col(2)[1]) / det, c = (a0 * col(2)[1] - col(2)[0] * b0) / det;
    for (let r = 0; r < 200; r++) expect(col(2)[r]).toBeCloseTo(a * col(0)[r] + c * col(1)[r], 8);
    const clean = b.columns[5].values as BigInt64Array;
    const flipped = generateChunk('classification', { ...p, flipY: 0.2 }, 0, 20_000).columns[5].values as BigInt64Array;
    const changed = clean.filter((v, r) => v !== flipped[r]).length / 20_000;
    expect(changed).toBeGreaterThan(0.08); // 0.2 × (1 - 1/2) = 0.1 expected
    expect(changed).toBeLessThan(0.12);
  });
});

describe('metrics', () => {
  it('adjusted Rand index matches known values', () => {
    expect(adjustedRandIndex([0, 0, 1, 1], [1, 1, 0, 0])).toBe(1);
    // scikit-learn documentation example: adjusted_rand_score([0, 0, 1, 2], [0, 0, 1, 1]) = 0.57...
    expect(adjustedRandIndex([0, 0, 1, 2], [0, 0, 1, 1])).toBeCloseTo(0.5714285714, 9);
    expect(adjustedRandIndex([0, 0, 1, 1], [0, 1, 0, 1])).toBeCloseTo(-0.5, 12);
  });

  it('accuracy and r2 match hand computations', () => {
    expect(accuracy([1, 2, 3, 4], [1, 2, 0, 4])).toBe(0.75);
    expect(r2([1, 2, 3], [1, 2, 3])).toBe(1);
    expect(r2([1, 2, 3], [2, 2, 2])).toBe(0);
    expect(r2([3, -0.5, 2, 7], [2.5, 0.0, 2, 8])).toBeCloseTo(0.9486081370449679, 12); // scikit-learn doc example
  });
});
