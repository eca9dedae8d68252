// Shared by the ml-*.test.ts files: fixture loading, partitioning and a fixed train/test split.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { inMemoryPartitions, splitRows, type PartitionedMatrix } from '../src/engine/ml/partitioned.js';
import { Rng } from '../src/engine/ml/random.js';

export interface Dataset { names: string[]; rows: number; cols: number; x: Float64Array; y: Float64Array }

/** A numeric fixture CSV from fixtures/ml whose last column is `y`. */
export function loadFixture(name: string): Dataset {
  const text = readFileSync(fileURLToPath(new URL(`../fixtures/ml/${name}`, import.meta.url)), 'utf8').trim().split('\n');
  const header = text[0].split(',');
  const cols = header.length - 1;
  const rows = text.length - 1;
  const x = new Float64Array(rows * cols), y = new Float64Array(rows);
  text.slice(1).forEach((line, r) => {
    const v = line.split(',').map(Number);
    for (let j = 0; j < cols; j++) x[r * cols + j] = v[j];
    y[r] = v[cols];
  });
  return { names: header.slice(0, cols), rows, cols, x, y };
}

/** A fixed, seeded 75/25 shuffle split. */
export function split(ds: Dataset, seed = 42): { train: Dataset; test: Dataset } {
  const order = Array.from({ length: ds.rows }, (_, i) => i);
  const rng = new Rng(seed, 'test-split');
  for (let i = order.length - 1; i > 0; i--) { const j = rng.nextInt(i + 1); [order[i], order[j]] = [order[j], order[i]]; }
  const cut = Math.floor(ds.rows * 0.75);
  const pick = (idx: number[]): Dataset => {
    const x = new Float64Array(idx.length * ds.cols), y = new Float64Array(idx.length);
    idx.forEach((r, i) => { x.set(ds.x.subarray(r * ds.cols, (r + 1) * ds.cols), i * ds.cols); y[i] = ds.y[r]; });
    return { names: ds.names, rows: idx.length, cols: ds.cols, x, y };
  };
  return { train: pick(order.slice(0, cut)), test: pick(order.slice(cut)) };
}

export function partitioned(ds: { names: string[]; cols: number; x: Float64Array; y: Float64Array | null }, rowsPerPartition: number): PartitionedMatrix {
  return inMemoryPartitions(ds.names, splitRows(ds.x, ds.y, ds.cols, rowsPerPartition));
}

export function rowsOf(x: Float64Array, cols: number): number[][] {
  return Array.from({ length: x.length / cols }, (_, r) => Array.from(x.subarray(r * cols, (r + 1) * cols)));
}
