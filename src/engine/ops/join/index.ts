// merge: hash join (broadcast or partitioned; the executor picks).
export { joinOutputSchema, type JoinHow, type JoinSpec } from './spec.js';
export { JoinBuildTable, probeJoin, unmatchedRightRows } from './hash-join.js';
export { hashPartition } from './partition.js';
export { planJoinAggregate, type JoinAggregate } from './join-aggregate.js';
