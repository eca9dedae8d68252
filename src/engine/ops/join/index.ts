// merge: hash join (broadcast or partitioned; the executor picks).
export { joinOutputSchema, type JoinHow, type JoinSpec } from './spec.js';
export { JoinBuildTable, probeJoin, unmatchedRightRows } from './hash-join.js';
export { hashPartition, type HashPart } from './partition.js';
export { planJoinAggregate, type JoinAggregate } from './join-aggregate.js';
export { inPositionOrder, joinBucket, type JoinedPiece, type TaggedRows } from './bucket-join.js';
