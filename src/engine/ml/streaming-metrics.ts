// The fitting metric of a prediction run, accumulated batch by batch so that scoring a file larger
// than memory needs no second pass: accuracy (classifiers), R² (regression: Welford's running
// mean and sum of squares, merged with the residual sum), adjusted Rand index (k-means, from the
// contingency table of true labels and clusters).

import { int64AsNumber, int64Words, type Batch, type Column } from '../batch.js';
import { DataError } from '../errors.js';
import type { Model } from './model.js';

function numbers(col: Column, name: string): Float64Array {
  if (col.valid && col.valid.includes(0)) throw new DataError(`null in column '${name}': metrics need complete rows`, { column: name });
  switch (col.type) {
    case 'float64': return col.values;
    case 'bool': return Float64Array.from(col.values);
    case 'int64':
    case 'timestamp': {
      const w = int64Words(col);
      return Float64Array.from({ length: col.values.length }, (_, r) => int64AsNumber(w, r));
    }
    case 'string': throw new DataError(`column '${name}' holds strings; metrics need numbers`, { column: name });
  }
}

export class MetricAccumulator {
  rows = 0;
  private correct = 0;
  private mean = 0;
  private m2 = 0;
  private sse = 0;
  private readonly pairs = new Map<string, number>();

  constructor(private readonly model: Model, private readonly truth: string, private readonly prediction = 'prediction') {}

  add(batch: Batch): void {
    const col = (name: string) => numbers(batch.columns[batch.schema.findIndex((f) => f.name === name)], name);
    const y = col(this.truth);
    const p = col(this.prediction);
    for (let i = 0; i < y.length; i++) {
      this.rows++;
      if (this.model.kind === 'kmeans') {
        const key = `${y[i]}\u0000${p[i]}`;
        this.pairs.set(key, (this.pairs.get(key) ?? 0) + 1);
      } else if (this.model.kind === 'random-forest' && this.model.task === 'classification') {
        if (y[i] === p[i]) this.correct++;
      } else {
        const delta = y[i] - this.mean;
        this.mean += delta / this.rows;
        this.m2 += delta * (y[i] - this.mean);
        this.sse += (y[i] - p[i]) ** 2;
      }
    }
  }

  value(): { name: string; value: number } {
    if (this.model.kind === 'kmeans') return { name: 'adjusted Rand index', value: adjustedRand(this.pairs, this.rows) };
    if (this.model.kind === 'random-forest' && this.model.task === 'classification') return { name: 'accuracy', value: this.correct / this.rows };
    return { name: 'R²', value: this.m2 === 0 ? (this.sse === 0 ? 1 : 0) : 1 - this.sse / this.m2 };
  }

  describe(): string {
    const { name, value } = this.value();
    return `${name} ${value} over ${this.rows} rows (target '${this.truth}')`;
  }
}

function adjustedRand(pairs: Map<string, number>, n: number): number {
  const choose2 = (x: number) => (x * (x - 1)) / 2;
  const rows = new Map<string, number>();
  const cols = new Map<string, number>();
  let index = 0;
  for (const [key, count] of pairs) {
    const [a, b] = key.split('\u0000');
    rows.set(a, (rows.get(a) ?? 0) + count);
    cols.set(b, (cols.get(b) ?? 0) + count);
    index += choose2(count);
  }
  let sumA = 0, sumB = 0;
  for (const c of rows.values()) sumA += choose2(c);
  for (const c of cols.values()) sumB += choose2(c);
  const expected = (sumA * sumB) / choose2(n);
  const max = (sumA + sumB) / 2;
  return max === expected ? 1 : (index - expected) / (max - expected);
}
