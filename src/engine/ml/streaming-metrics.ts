// The fitting metric of a prediction run, accumulated batch by batch so that scoring a file larger
// than memory needs no second pass: accuracy (classifiers), R² (regression: Welford's running
// mean and sum of squares, merged with the residual sum), adjusted Rand index (k-means, from the
// contingency table of true labels and clusters).

import { int64Words, stringAt, type Batch, type Column, type Int64Column, type StringColumn } from '../batch.js';
import { DataError } from '../errors.js';
import { numericValues, requireComplete } from './design-matrix.js';
import { Contingency } from './metrics.js';
import type { ModelHeader } from './model.js';

export class MetricAccumulator {
  rows = 0;
  private correct = 0;
  private mean = 0;
  private m2 = 0;
  private sse = 0;
  private readonly contingency = new Contingency();

  constructor(private readonly model: ModelHeader, private readonly truth: string, private readonly prediction = 'prediction') {}

  add(batch: Batch): void {
    const column = (name: string) => batch.columns[batch.schema.findIndex((f) => f.name === name)];
    const [truth, predicted] = [column(this.truth), column(this.prediction)];
    if (predicted.type === 'string') return this.addLabels(truth, predicted);
    if (predicted.type === 'int64' && truth.type === 'int64' && this.model.kind === 'random-forest') return this.addInt64Labels(truth, predicted);
    const y = this.model.kind === 'kmeans' && truth.type === 'string' ? this.labelIds(truth) : numericValues(truth, this.truth);
    const p = numericValues(predicted, this.prediction);
    for (let i = 0; i < y.length; i++) {
      this.rows++;
      if (this.model.kind === 'kmeans') {
        this.contingency.add(y[i], p[i]);
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

  /** String labels of the true clusters (k-means) as ids, the same for a label in every batch. */
  private readonly ids = new Map<string, number>();
  private labelIds(truth: StringColumn): Float64Array {
    requireComplete(truth, this.truth);
    return Float64Array.from({ length: truth.offsets.length - 1 }, (_, i) => {
      const label = stringAt(truth, i);
      let id = this.ids.get(label);
      if (id === undefined) this.ids.set(label, id = this.ids.size);
      return id;
    });
  }

  /** A classifier of string classes: its predictions against the target's strings. */
  private addLabels(truth: Column, predicted: StringColumn): void {
    if (truth.type !== 'string') throw new DataError(`column '${this.truth}' holds ${truth.type} values, but the model's classes are strings`, { column: this.truth });
    requireComplete(truth, this.truth);
    for (let i = 0; i < predicted.offsets.length - 1; i++) {
      this.rows++;
      if (stringAt(truth, i) === stringAt(predicted, i)) this.correct++;
    }
  }

  /** A classifier of int64 classes against an int64 target: compared exactly (as doubles, labels beyond 2^53 could match their neighbours). */
  private addInt64Labels(truth: Int64Column, predicted: Int64Column): void {
    requireComplete(truth, this.truth);
    // The (lo, hi) words: no bigint made per row.
    const t = int64Words(truth), p = int64Words(predicted);
    for (let i = 0; i < predicted.values.length; i++) {
      this.rows++;
      if (t[2 * i] === p[2 * i] && t[2 * i + 1] === p[2 * i + 1]) this.correct++;
    }
  }

  value(): { name: string; value: number } {
    if (this.model.kind === 'kmeans') return { name: 'adjusted Rand index', value: this.contingency.adjustedRandIndex() };
    if (this.model.kind === 'random-forest' && this.model.task === 'classification') return { name: 'accuracy', value: this.correct / this.rows };
    return { name: 'R²', value: this.m2 === 0 ? (this.sse === 0 ? 1 : 0) : 1 - this.sse / this.m2 };
  }

  describe(): string {
    const { name, value } = this.value();
    return `${name} ${value} over ${this.rows} rows (target '${this.truth}')`;
  }
}
