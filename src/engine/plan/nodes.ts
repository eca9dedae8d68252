// The logical plan: a small tree of node types, serialisable as JSON so that it can travel
// between the stages of a shell pipeline. Nodes say *what* to compute; the optimiser rewrites
// them (pure functions, plan -> plan) and the executor decides partitions and devices.

import type { Schema } from '../batch.js';
import type { CsvOptions } from '../io/csv/index.js';
import type { AggregateSpec } from '../ops/aggregate/index.js';
import type { JoinSpec } from '../ops/join/index.js';
import type { GenerateParams, GeneratorKind } from '../ml/generate.js';
import type { FileStamp } from '../ml/model-file.js';

export type InputFormat = 'csv' | 'parquet' | 'arrow' | 'arrows';

export interface ScanFile {
  /** Absolute path the engine reads: a later stage of a pipe may run in another directory. */
  path: string;
  /** What messages call it (the user's spelling; '-' for stdin). */
  displayName: string;
  /** Bytes on disk, for strategy decisions and progress. */
  bytes: number;
  /** A spooled copy of stdin: the last stage deletes it after running. */
  temporary?: boolean;
}

export interface ScanNode {
  kind: 'scan';
  format: InputFormat;
  files: ScanFile[];
  /** CSV parsing options; `dtypes` holds every column's type once the stage that created the scan inferred them. */
  csv?: CsvOptions;
  /** Every column the files hold. */
  schema: Schema;
  /** Columns to read, in output order (projection pushdown fills this in; null = all). */
  columns: string[] | null;
}

export interface ProjectNode { kind: 'project'; input: PlanNode; columns: string[] }

export interface AggregateNode { kind: 'aggregate'; input: PlanNode; spec: AggregateSpec }
/** Produced by the optimiser: per-partition partial aggregation, run next to the data. */
export interface PartialAggregateNode { kind: 'partial-aggregate'; input: PlanNode; spec: AggregateSpec }
/** Produced by the optimiser: combines partials in partition order and finalises (sorted by keys). */
export interface FinalAggregateNode { kind: 'final-aggregate'; input: PartialAggregateNode; spec: AggregateSpec }

export type JoinStrategy = 'broadcast' | 'partitioned';
export interface JoinNode {
  kind: 'join';
  left: PlanNode;
  right: PlanNode;
  spec: JoinSpec;
  /** Chosen by the optimiser. broadcast: the right side is materialised and sent to every worker. */
  strategy?: JoinStrategy;
  /** Number of hash buckets for the partitioned strategy. */
  buckets?: number;
}

/** Model scoring (src/engine/ml): appends predictions to the input rows. */
export interface PredictNode {
  kind: 'predict';
  input: PlanNode;
  /** Where the model came from (for explain and messages). */
  modelPath: string;
  /** The model file's text, so the plan stays self-contained when it travels. */
  modelText: string;
  /** The model file (absolute path), its size and modification time when its text was read (null: not a file). */
  modelStamp: FileStamp | null;
  /** Input columns to keep in front of the predictions (null: all). */
  keep: string[] | null;
  proba: boolean;
  /** Name of the appended column. */
  outputName: string;
}

/** Synthetic data (make-blobs, make-classification, make-regression), generated in parallel chunks. */
export interface GenerateNode {
  kind: 'generate';
  generator: GeneratorKind;
  params: GenerateParams;
  /** Only these columns (projection pushdown; null = all). */
  columns: string[] | null;
}

export type PlanNode =
  | ScanNode
  | GenerateNode
  | ProjectNode
  | AggregateNode
  | PartialAggregateNode
  | FinalAggregateNode
  | JoinNode
  | PredictNode;

export function childrenOf(node: PlanNode): PlanNode[] {
  switch (node.kind) {
    case 'scan':
    case 'generate':
      return [];
    case 'join': return [node.left, node.right];
    default: return [node.input];
  }
}

/** Every scan in the plan, left to right. */
export function scansOf(node: PlanNode): ScanNode[] {
  return node.kind === 'scan' ? [node] : childrenOf(node).flatMap(scansOf);
}
