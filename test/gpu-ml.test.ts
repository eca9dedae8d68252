// ML training on GPU workers through the CLI (lavapipe, --device gpu --workers 0): k-means recovers
// well-separated blobs and its inertia matches the float64 CPU run; linreg matches the CPU model's
// coefficients; rf-train grows its trees on the device with the CPU forest's accuracy; GPU model files load and predict with --device cpu; the same GPU run twice writes
// the same bytes.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { columnFromValues } from '../src/engine/batch.js';
import { openArrowBatchWriter } from './io-formats-fixture.js';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { skipGpuTests } from '../src/engine/gpu/test-gpu.js';
import { gpuframe } from './helpers/cli.js';
import { rng, tempDir } from './helpers/data.js';

const dir = tempDir('gpu-ml');
const path = (name: string) => join(dir, name);
const GPU = ['--device', 'gpu', '--workers', '0'];

async function ok(args: string[]) {
  const res = await gpuframe(args);
  expect(res.code, res.stderr).toBe(0);
  expect(res.stderr, 'no warnings: every partition ran on the device').not.toMatch(/warning|ran on the CPU|stays on the CPU/i);
  return res;
}

describe.skipIf(skipGpuTests)('ML on GPU workers', () => {
  beforeAll(async () => {
    await ok(['make-blobs', '--n-samples', '30000', '--n-features', '6', '--centers', '5', '--cluster-std', '0.5', '--seed', '2', '-o', path('blobs.csv')]);
    await ok(['make-regression', '--n-samples', '20000', '--n-features', '5', '--n-informative', '5', '--bias', '3', '--noise', '0.5', '--seed', '4', '-o', path('reg.csv')]);
  }, 60_000);

  it('kmeans: ARI >= 0.99, inertia within 1e-4 of the CPU run, identical model files when repeated, predicts on the CPU', async () => {
    const km = (name: string, device: string[]) =>
      ok(['kmeans', path('blobs.csv'), '--k', '5', '--exclude', 'y', '--seed', '1', '--blocksize', '256KB', '--model-out', path(name), '--json', ...device]);
    const gpu = JSON.parse((await km('km-gpu.json', GPU)).stdout);
    await km('km-gpu2.json', GPU);
    const cpu = JSON.parse((await km('km-cpu.json', ['--device', 'cpu', '--workers', '1'])).stdout);
    expect(Math.abs(gpu.inertia - cpu.inertia) / cpu.inertia).toBeLessThan(1e-4);
    expect(readFileSync(path('km-gpu2.json'), 'utf8')).toBe(readFileSync(path('km-gpu.json'), 'utf8'));
    const scored = await ok(['predict', path('blobs.csv'), '--model', path('km-gpu.json'), '--labels', 'y', '-o', path('km-pred.csv'), '--device', 'cpu']);
    expect(Number(/adjusted Rand index ([\d.e-]+)/.exec(scored.stderr)![1])).toBeGreaterThanOrEqual(0.99);
  }, 60_000);

  it('linreg: coefficients within 1e-6 of the CPU model, identical model files when repeated, predicts on the CPU', async () => {
    const lr = (name: string, device: string[]) =>
      ok(['linreg', path('reg.csv'), '--target', 'y', '--blocksize', '200KB', '--model-out', path(name), '--json', ...device]);
    const gpu = JSON.parse((await lr('lr-gpu.json', GPU)).stdout);
    await lr('lr-gpu2.json', GPU);
    const cpu = JSON.parse((await lr('lr-cpu.json', ['--device', 'cpu', '--workers', '1'])).stdout);
    const norm = Math.hypot(...Object.values<number>(cpu.coefficients));
    for (const [name, c] of Object.entries<number>(cpu.coefficients)) expect(Math.abs(gpu.coefficients[name] - c) / norm, name).toBeLessThan(1e-6);
    expect(Math.abs(gpu.intercept - cpu.intercept)).toBeLessThan(1e-6 * Math.max(1, Math.abs(cpu.intercept)));
    expect(Math.abs(gpu.r2 - cpu.r2)).toBeLessThan(1e-6);
    expect(readFileSync(path('lr-gpu2.json'), 'utf8')).toBe(readFileSync(path('lr-gpu.json'), 'utf8'));
    const scored = await ok(['predict', path('reg.csv'), '--model', path('lr-gpu.json'), '-o', path('lr-pred.csv'), '--device', 'cpu']);
    expect(Number(/R² ([\d.e-]+)/.exec(scored.stderr)![1])).toBeGreaterThan(0.99);
  }, 60_000);

  it('from an Arrow file, whose float64 columns go from the file straight into staging memory: k-means writes the model it writes from the same rows as CSV; linreg the CPU\'s', async () => {
    await ok(['make-blobs', '--n-samples', '30000', '--n-features', '6', '--centers', '5', '--cluster-std', '0.5', '--seed', '2', '-o', path('blobs.arrow')]);
    await ok(['make-regression', '--n-samples', '20000', '--n-features', '5', '--n-informative', '5', '--bias', '3', '--noise', '0.5', '--seed', '4', '-o', path('reg.arrow')]);
    const km = (input: string, name: string) => ok(['kmeans', path(input), '--k', '5', '--exclude', 'y', '--seed', '1', '--blocksize', '256KB', '--model-out', path(name), ...GPU]);
    await km('blobs.arrow', 'km-arrow.json');
    await km('blobs.csv', 'km-csv.json');
    expect(readFileSync(path('km-arrow.json'), 'utf8')).toBe(readFileSync(path('km-csv.json'), 'utf8'));
    const lr = (device: string[]) => ok(['linreg', path('reg.arrow'), '--target', 'y', '--blocksize', '200KB', '--model-out', path('lr-arrow.json'), '--json', ...device]);
    const gpu = JSON.parse((await lr(GPU)).stdout), cpu = JSON.parse((await lr(['--device', 'cpu', '--workers', '1'])).stdout);
    const norm = Math.hypot(...Object.values<number>(cpu.coefficients));
    for (const [name, c] of Object.entries<number>(cpu.coefficients)) expect(Math.abs(gpu.coefficients[name] - c) / norm, name).toBeLessThan(1e-6);
    expect(Math.abs(gpu.r2 - cpu.r2)).toBeLessThan(1e-6);
  }, 90_000);

  it('from an Arrow file whose columns cannot be read in place (an int64 feature; a null): trained from its record batches, or the null reported as before', async () => {
    const schema = [{ name: 'a', type: 'float64' as const }, { name: 'b', type: 'int64' as const }, { name: 'c', type: 'float64' as const }];
    const w = await openArrowBatchWriter(path('mixed.arrow'), schema);
    for (const [start, n] of [[0, 600], [600, 500]]) {
      const idx = Array.from({ length: n }, (_, k) => start + k);
      await w.write({ schema, length: n, columns: [
        columnFromValues('float64', idx.map((r) => (r % 3) * 10 + Math.sin(r))),
        columnFromValues('int64', idx.map((r) => BigInt(r % 3) * 10n)),
        columnFromValues('float64', idx.map((r) => (r === 700 ? null : Math.cos(r)))),
      ] });
    }
    await w.close();
    await ok(['kmeans', path('mixed.arrow'), '--features', 'a,b', '--k', '3', '--seed', '1', '--model-out', path('km-mixed.json'), ...GPU]);
    const bad = await gpuframe(['kmeans', path('mixed.arrow'), '--features', 'a,c', '--k', '3', '--model-out', path('km-bad.json'), ...GPU]);
    expect(bad.code, bad.stderr).toBe(3);
    expect(bad.stderr).toMatch(/mixed\.arrow.*null in column 'c'|null in column 'c'.*mixed\.arrow/s);
    expect(existsSync(path('km-bad.json'))).toBe(false);
  }, 60_000);

  it('kmeans: the same model file whatever --blocksize (exact fixed-point sums on one scale for all partitions)', async () => {
    // Blobs with a few values near 2^12 and many below 2^-20 in each column: summed in fixed point
    // scaled by each partition's own largest values and row count, the small ones would be cut at
    // different places for different partitionings, and the centres would differ in their last bits.
    const next = rng(7);
    const lines = ['a,b,c'];
    for (let r = 0; r < 40_000; r++) {
      const centre = r % 3;
      lines.push([0, 1, 2].map((j) => (r % 997 === 0 ? (next() - 0.5) * 8000 : centre * 1e-5 + (next() - 0.5) * 2 ** -(12 + j * 3))).join(','));
    }
    writeFileSync(path('fine.csv'), lines.join('\n') + '\n');
    const km = (name: string, blocksize: string) =>
      ok(['kmeans', path('fine.csv'), '--k', '4', '--seed', '1', '--n-init', '1', '--max-iter', '10', '--tol', '0', '--blocksize', blocksize, '--model-out', path(name), ...GPU]);
    await km('km-b1.json', '300KB');
    await km('km-b2.json', '110KB');
    await km('km-b3.json', '64MB');
    expect(readFileSync(path('km-b2.json'), 'utf8')).toBe(readFileSync(path('km-b1.json'), 'utf8'));
    expect(readFileSync(path('km-b3.json'), 'utf8')).toBe(readFileSync(path('km-b1.json'), 'utf8'));
  }, 90_000);

  it('kmeans on 140 000 rows (k-means|| seeding on the GPU): ARI >= 0.99, inertia within 1e-4 of the CPU run, the same model for two block sizes', async () => {
    await ok(['make-blobs', '--n-samples', '140000', '--n-features', '4', '--centers', '6', '--cluster-std', '0.6', '--seed', '8', '-o', path('many.csv')]);
    const km = (name: string, blocksize: string, device: string[]) =>
      ok(['kmeans', path('many.csv'), '--k', '6', '--exclude', 'y', '--seed', '2', '--n-init', '1', '--blocksize', blocksize, '--model-out', path(name), '--json', ...device]);
    const gpu = JSON.parse((await km('kmp-gpu.json', '1MB', GPU)).stdout);
    await km('kmp-gpu2.json', '3MB', GPU);
    const cpu = JSON.parse((await km('kmp-cpu.json', '1MB', ['--device', 'cpu', '--workers', '2'])).stdout);
    expect(Math.abs(gpu.inertia - cpu.inertia) / cpu.inertia).toBeLessThan(1e-4);
    expect(readFileSync(path('kmp-gpu2.json'), 'utf8')).toBe(readFileSync(path('kmp-gpu.json'), 'utf8'));
    const scored = await ok(['predict', path('many.csv'), '--model', path('kmp-gpu.json'), '--labels', 'y', '-o', path('kmp-pred.csv'), '--device', 'cpu']);
    expect(Number(/adjusted Rand index ([\d.e-]+)/.exec(scored.stderr)![1])).toBeGreaterThanOrEqual(0.99);
  }, 120_000);

  it('kmeans and linreg without --blocksize: the same model files with or without CPU workers beside the GPU', async () => {
    // 9 MB: the automatic block size of other work would differ (four partitions per worker), and
    // linreg's double-float sums on the GPU round differently when the rows are partitioned differently.
    await ok(['make-blobs', '--n-samples', '60000', '--n-features', '8', '--centers', '5', '--seed', '3', '-o', path('wide.csv')]);
    for (const workers of ['0', '2']) {
      const device = ['--device', 'gpu', '--workers', workers];
      await ok(['kmeans', path('wide.csv'), '--exclude', 'y', '--k', '6', '--seed', '1', '--max-iter', '5', '--tol', '0', '--n-init', '1', '--model-out', path(`km-w${workers}.json`), ...device]);
      await ok(['linreg', path('wide.csv'), '--target', 'y', '--model-out', path(`lr-w${workers}.json`), ...device]);
    }
    expect(readFileSync(path('km-w2.json'), 'utf8')).toBe(readFileSync(path('km-w0.json'), 'utf8'));
    expect(readFileSync(path('lr-w2.json'), 'utf8')).toBe(readFileSync(path('lr-w0.json'), 'utf8'));
  }, 120_000);

  it('rf-train: trees grown on the GPU worker, identical model files when repeated or with CPU workers, accuracy as the CPU forest; predictions on the GPU worker and on CPUs the same bytes', async () => {
    const data = fileURLToPath(new URL('../fixtures/ml/breast-cancer.csv', import.meta.url));
    const rf = (name: string, device: string[]) =>
      ok(['rf-train', data, '--target', 'y', '--n-estimators', '20', '--max-depth', '8', '--seed', '3', '--blocksize', '64KB', '--model-out', path(name), ...device]);
    await rf('rf-gpu.json', GPU);
    await rf('rf-gpu2.json', GPU);
    // With CPU workers too, they load and bin the rows while the trees still grow on the GPU.
    await rf('rf-hybrid.json', ['--device', 'gpu', '--workers', '2']);
    await rf('rf-cpu.json', ['--device', 'cpu', '--workers', '1']);
    expect(readFileSync(path('rf-gpu2.json'), 'utf8')).toBe(readFileSync(path('rf-gpu.json'), 'utf8'));
    expect(readFileSync(path('rf-hybrid.json'), 'utf8')).toBe(readFileSync(path('rf-gpu.json'), 'utf8'));
    const scored = async (model: string) => {
      const res = await ok(['predict', data, '--model', path(model), '-o', path(`${model}.csv`), '--device', 'cpu']);
      return Number(/accuracy ([\d.e-]+)/.exec(res.stderr)![1]);
    };
    const [gpu, cpu] = [await scored('rf-gpu.json'), await scored('rf-cpu.json')];
    expect(gpu).toBeGreaterThan(0.97);
    expect(Math.abs(gpu - cpu)).toBeLessThanOrEqual(0.01);
    // Predicting on the GPU worker (the device walks the trees) writes the same bytes as on the CPU.
    const predictOn = async (name: string, device: string[]) => {
      await ok(['predict', data, '--model', path('rf-gpu.json'), '--proba', '--blocksize', '16KB', '-o', path(name), ...device]);
      return readFileSync(path(name), 'utf8');
    };
    const onGpu = await predictOn('rf-pred-gpu.csv', GPU);
    expect(onGpu).toBe(await predictOn('rf-pred-cpu.csv', ['--device', 'cpu', '--workers', '2']));
    expect(onGpu).toBe(await predictOn('rf-pred-hybrid.csv', ['--device', 'gpu', '--workers', '2']));
    expect(onGpu.split('\n')[0]).toMatch(/prediction,proba_0,proba_1$/);
  }, 60_000);

  it('rf-train regression: trees grown on the GPU worker, the same model with CPU workers beside it, R² as the CPU forest', async () => {
    const rf = (name: string, device: string[]) =>
      ok(['rf-train', path('reg.csv'), '--target', 'y', '--task', 'regression', '--n-estimators', '6', '--max-depth', '6', '--seed', '2', '--blocksize', '200KB', '--model-out', path(name), ...device]);
    await rf('rfr-gpu.json', GPU);
    await rf('rfr-hybrid.json', ['--device', 'gpu', '--workers', '2']);
    await rf('rfr-cpu.json', ['--device', 'cpu', '--workers', '3']);
    expect(readFileSync(path('rfr-hybrid.json'), 'utf8')).toBe(readFileSync(path('rfr-gpu.json'), 'utf8'));
    const r2 = async (model: string) => {
      const res = await ok(['predict', path('reg.csv'), '--model', path(model), '-o', path(`${model}.csv`), '--device', 'cpu']);
      return Number(/R² ([\d.e-]+)/.exec(res.stderr)![1]);
    };
    const [gpu, cpu] = [await r2('rfr-gpu.json'), await r2('rfr-cpu.json')];
    expect(gpu).toBeGreaterThan(0.8);
    expect(Math.abs(gpu - cpu)).toBeLessThanOrEqual(0.02);
  }, 60_000);
});
