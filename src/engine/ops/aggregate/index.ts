// groupby: hash aggregation. See partial.ts for how the pieces fit together.
export { AGG_FUNCS, aggregateOutputSchema, parseAggList, type AggFunc, type AggregateSpec, type AggSpec } from './spec.js';
export { finalizeAggregate, finalizeMergedBySort, mergePartials, PartialAggregator, PartialMerger, partialOfKeyedStates, partialBytes, sliceOfSorted, sortedPartial, splitPartial, partitionPartial, takeGroups, type PartialAggregate } from './partial.js';
export { chooseSplitters, rangeOfKeys } from './range-split.js';
