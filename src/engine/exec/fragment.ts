// A fragment is the unit of parallel work: read one partition, push its batches through a chain of
// streaming operators, and end in a terminal that says what to send back. Fragments are plain data,
// so the parent can send them to worker processes (CPU or GPU) by structured clone.

import type { Batch, Column, Schema } from '../batch.js';
import type { PartialSlices } from './partial-slices.js';
import type { CsvChunk, CsvLayout, CsvOptions } from '../io/csv/index.js';
import type { ArrowChunk } from '../io/arrow.js';
import type { ParquetChunk } from '../io/parquet.js';
import type { AggregateSpec, PartialAggregate } from '../ops/aggregate/index.js';
import type { JoinSpec } from '../ops/join/index.js';
import type { TextFormat } from '../io/output/index.js';
import type { GenerateParams, GeneratorKind } from '../ml/generate.js';
import type { TreeSpec } from '../ml/forest-tree.js';
import type { ModelKind } from '../ml/model.js';
import type { BinnedFile } from './forest-trees.js';
import type { MappedPairs } from './mapped-pairs.js';

export type SourceSpec =
  | { kind: 'csv'; chunk: CsvChunk; layout: CsvLayout; options: CsvOptions; columns: string[] }
  | { kind: 'parquet'; chunk: ParquetChunk; columns: string[] }
  | { kind: 'arrow'; chunk: ArrowChunk; columns: string[] }
  /** Rows computed in the parent (aggregate results, unmatched build rows). */
  | { kind: 'batch'; batch: Batch }
  /** Rows [chunkIndex × chunkRows, …) of a synthetic data set (make-blobs & co.). */
  | { kind: 'generate'; generator: GeneratorKind; params: GenerateParams; chunkIndex: number; chunkRows: number; columns: string[] }
  /** Reads nothing: the task works on data already resident in the worker (see matrix.ts). */
  | { kind: 'none' }
  /**
   * A key range [lower, upper) of a groupby whose partials were cut into sorted slices (a null
   * bound: open on that side): its groups merged from the slices in order and finalised (partial-slices.ts).
   */
  | { kind: 'aggregate-range'; schema: Schema; slices: (SpillRange & { whole: boolean })[]; lower: Column[] | null; upper: Column[] | null }
  /**
   * One key range of a group-by whose rows were exchanged by key range: its piece of every
   * partition's rows, in partition order, aggregated and finalised where it runs (row-exchange.ts).
   */
  | { kind: 'rows-range'; schema: Schema; spec: AggregateSpec; pieces: SpillRange[] }
  /** One bucket pair of a partitioned join, read only by the join-bucket terminal (it keeps each row's origin). */
  | { kind: 'bucket-pair'; left: ShuffledSide; right: ShuffledSide }
  /** One fragment's rows of a partitioned join: its pieces from every bucket (ops/join/bucket-join.ts). */
  | { kind: 'joined'; schema: Schema; pieces: SpillRange[] };

/** One bucket's rows of a join side, as the shuffle spilled them: a file per fragment, in stream order. */
export interface ShuffledSide { schema: Schema; pieces: { file: string; seq: number }[] }

/** Bytes [offset, offset + length) of a spill file: one encoded batch, or a task's encoded text. */
export interface SpillRange { file: string; offset: number; length: number }

/** The input file a source reads, as messages about its data name it (the user's spelling, not the path opened). */
export function sourceFile(source: SourceSpec): string | undefined {
  return source.kind === 'csv' || source.kind === 'parquet' || source.kind === 'arrow' ? source.chunk.displayName : undefined;
}

export type OpSpec =
  | { kind: 'project'; columns: string[] }
  /** Probe a broadcast build table (the join's right side), cached per worker by id. */
  | { kind: 'probe'; broadcastId: string; spec: JoinSpec; leftSchema: Schema; rightSchema: Schema }
  /**
   * Append model predictions. The model's text is written once to `modelFile` in the run's temp
   * dir and read there by each worker (a forest's text can be hundreds of MB: not once per task).
   */
  | { kind: 'predict'; modelFile: string; modelPath: string; modelKind: ModelKind; keep: string[] | null; proba: boolean; outputName: string };

/** The trainer whose GPU kernels run over a loaded matrix (what a GPU worker compiles ahead). */
export type MatrixKernels = { trainer: 'kmeans'; k: number } | { trainer: 'linreg' };

export type Terminal =
  | { kind: 'collect' }
  /**
   * Encode the rows as CSV/JSONL text here, so formatting runs in parallel next to the data; with
   * `dir`, the text goes back as a spill file there (a worker's message pipe to the parent moves a
   * few hundred MB/s, which bounded large outputs), without, as bytes in the result.
   */
  | { kind: 'encode'; format: TextFormat; dir: string | null }
  /** Encode the rows (one Parquet row group) as a whole Parquet file, for the parent to join (parquet-parts.ts). */
  | { kind: 'encode-parquet' }
  /**
   * Keep the rows in the worker as a numeric design-matrix partition for ML tasks (matrix.ts);
   * `kernels`: the trainer runs GPU kernels over it, so GPU workers upload it, only they hold it,
   * and they compile those kernels while the rows load; null: no kernels (not uploaded).
   */
  | { kind: 'load-matrix'; matrixId: string; features: string[]; target: string | null; targetLabels: string[] | null; kernels: MatrixKernels | null }
  /** Grow these trees of a random forest on the binned rows in `file` (forest-trees.ts); `gpu`: on a GPU worker's device. */
  | { kind: 'grow-trees'; file: BinnedFile; spec: TreeSpec; trees: number[]; gpu: boolean }
  /** Run a named ML partition task over every partition of a matrix this worker holds. */
  | { kind: 'map-matrix'; matrixId: string; task: string; args: unknown; firstRows: number[] }
  /** Forget a matrix. */
  | { kind: 'drop-matrix'; matrixId: string }
  /**
   * `sliceDir`: a large partial goes back as sorted slices written there (partial-slices.ts).
   * `manyGroups`: a sample says GPU-sized partitions would hold many groups per row, where a GPU
   * worker is no faster than a CPU worker: CPU workers take these tasks (group-cardinality.ts).
   */
  | { kind: 'partial-aggregate'; spec: AggregateSpec; inputSchema: Schema; sliceDir?: string; manyGroups?: boolean }
  /** Cut the rows by key range (splitters: the first key of each range but the first) into one spill file, a piece per range (row-exchange.ts). */
  | { kind: 'range-partition'; keys: string[]; splitters: Column[]; dir: string; prefix: string }
  /** Split the rows by key hash into spill files, one per bucket, each row with its position (partition.ts). */
  | { kind: 'hash-partition'; keys: string[]; buckets: number; dir: string; prefix: string }
  /** Join the fragment's bucket pair into a spill file, cut by the fragment placing each row (bucket-join.ts). */
  | { kind: 'join-bucket'; spec: JoinSpec; dir: string; prefix: string };

export interface Fragment {
  /** Position in its stream: results are combined in this order. */
  index: number;
  source: SourceSpec;
  ops: OpSpec[];
  /** Bytes the source covers, for progress and scheduling. */
  bytes: number;
}

export interface Task { fragment: Fragment; terminal: Terminal }

export interface FragmentResult {
  batches?: Batch[];
  /** encode: the rows as text bytes, or the spill file holding them (Terminal `dir`). */
  encoded?: Uint8Array;
  encodedFile?: SpillRange;
  partial?: PartialAggregate;
  /** partial-aggregate with `sliceDir`: the partial, cut into slices there (instead of `partial`). */
  slices?: PartialSlices;
  /** range-partition: each range's piece of the rows (null: none). */
  ranged?: (SpillRange | null)[];
  /** hash-partition: for each bucket, the spill file written (or null when the bucket got no rows). */
  spills?: ({ file: string; bytes: number } | null)[];
  /** join-bucket: where each piece of the output lies in the terminal's file. */
  joined?: { side: 'left' | 'right'; seq: number; range: SpillRange }[];
  /** load-matrix: which process holds the partition now. */
  holder?: number;
  /** map-matrix: each held partition's result, by partition index. */
  mapped?: { index: number; value: unknown }[];
  /** map-matrix on a GPU worker: partitions whose results the parent decodes (mapped-pairs.ts). */
  mappedPairs?: MappedPairs;
  /** grow-trees: a file holding the trees, in the task's order (forest-trees.ts readGrownTrees). */
  grownFile?: string;
  /** probe: build rows matched by this fragment, per broadcast id (for right/outer joins). */
  matched?: Record<string, Uint8Array>;
  rows: number;
  warnings: string[];
}

/** A broadcast table sent once to every worker before tasks that probe it. */
export interface Broadcast { id: string; batch: Batch; spec: JoinSpec }

/** The fragment of a task that reads nothing (ML tasks over data already held by the workers). */
export const NO_SOURCE: Fragment = { index: -1, source: { kind: 'none' }, ops: [], bytes: 0 };
