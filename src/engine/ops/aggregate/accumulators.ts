// Picks the accumulator for one aggregate from its function and input type.
import type { DType } from '../../batch.js';
import { CountAccumulator } from './count.js';
import { FloatSumAccumulator } from './float-sum.js';
import { IntSumAccumulator } from './int-sum.js';
import { MinMaxAccumulator } from './min-max.js';
import { NuniqueAccumulator } from './nunique.js';
import type { AggSpec } from './spec.js';
import type { Accumulator } from './state.js';
import { VarianceAccumulator } from './variance.js';

/** `input` is the aggregated column's type (null for count()); aggregateOutputSchema has validated it. */
export function accumulatorFor(agg: AggSpec, input: DType | null): Accumulator {
  switch (agg.func) {
    case 'count': return new CountAccumulator();
    case 'sum':
    case 'mean':
      return input === 'int64' ? new IntSumAccumulator(agg.func, agg.name) : new FloatSumAccumulator(agg.func);
    case 'var':
    case 'std': return new VarianceAccumulator(agg.func);
    case 'min': return new MinMaxAccumulator(input!, -1);
    case 'max': return new MinMaxAccumulator(input!, 1);
    case 'nunique': return new NuniqueAccumulator(input!);
  }
}
