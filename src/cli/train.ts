// What the training commands share: choosing feature columns, loading the rows into the workers
// as a resident design matrix, and writing the model file atomically.

import { Flags } from '@oclif/core';
import { UsageError, requireColumn } from '../engine/errors.js';
import { AtomicFileSink, type ByteSink } from '../engine/io/output/byte-sink.js';
import { loadResidentMatrix, type ResidentMatrix } from '../engine/exec/matrix.js';
import { collect, physical } from '../engine/exec/physical.js';
import { stringAt } from '../engine/batch.js';
import { parseAggList } from '../engine/ops/aggregate/index.js';
import type { RunContext } from '../engine/exec/context.js';
import type { MatrixKernels } from '../engine/exec/fragment.js';
import { optimize } from '../engine/optimizer/index.js';
import type { PlanNode } from '../engine/plan/nodes.js';
import { schemaOf } from '../engine/plan/schema.js';
import { gpuTrainingBlocksize, withRunContext } from '../engine/run.js';
import { splitList } from './inputs.js';
import { modelFileParts } from '../engine/ml/model-file.js';
import { int64Classes, type ClassLabel, type Model } from '../engine/ml/model.js';
import { outputFlags } from './flags.js';
import { printExplain, runSettings, type RunFlagValues } from './stage.js';

export const featureFlags = {
  features: Flags.string({ description: 'feature columns: a,b (default: every numeric column but the target)', exclusive: ['exclude'] }),
  exclude: Flags.string({ description: 'columns to leave out of the features' }),
  'model-out': Flags.string({ description: 'where to write the model file (JSON)', required: true }),
  seed: Flags.integer({ description: 'random seed', default: 0 }),
  json: Flags.boolean({ description: 'print the training summary as JSON on stdout' }),
  explain: outputFlags.explain,
  dot: outputFlags.dot,
};

/** The columns a trainer loads: the features, then the target. */
function trainingColumns(features: string[], target: string | null): string[] {
  return target === null ? features : [...features, target];
}

/** With --explain (or --dot), prints the plan of the rows the trainer would load instead of training; true when it did. */
export function explainedTraining(plan: PlanNode, features: string[], target: string | null, flags: RunFlagValues & { explain: boolean; dot: boolean }): boolean {
  if (!flags.explain && !flags.dot) return false;
  printExplain({ kind: 'project', input: plan, columns: trainingColumns(features, target) }, flags);
  return true;
}

/** The feature columns: --features as given, else every numeric column except the target and --exclude. */
export function chooseFeatures(plan: PlanNode, target: string | null, flags: { features?: string; exclude?: string }): string[] {
  const schema = schemaOf(plan);
  const names = schema.map((f) => f.name);
  if (target !== null) requireColumn(target, names, 'target column');
  if (flags.features) {
    const features = splitList(flags.features);
    for (const f of features) requireColumn(f, names, 'feature column');
    if (target !== null && features.includes(target)) throw new UsageError(`the target '${target}' cannot also be a feature`);
    return features;
  }
  const excluded = flags.exclude ? splitList(flags.exclude) : [];
  for (const e of excluded) requireColumn(e, names, '--exclude column');
  const features = schema.filter((f) => f.type !== 'string' && f.name !== target && !excluded.includes(f.name)).map((f) => f.name);
  if (features.length === 0) throw new UsageError('no numeric feature columns left to train on; name them with --features');
  return features;
}

/**
 * Runs `train` with the plan's rows resident in the workers as a design matrix; `kernels`: the
 * trainer runs GPU kernels over the rows (k-means, linreg), so GPU workers hold them on the device
 * (and compile those kernels while the rows load); null for none (the forest). A string target
 * (a classifier's) is loaded as the indices of its distinct values, sorted (found by a group-by
 * first), which `train` receives as `labels`. `classify`: the target is a classifier's, so an
 * int64 target must keep its values apart: it is read as float64 (exact below 2^53: the usual
 * labels, no extra pass), and only when a value reaches 2^53 is it loaded again as the indices of
 * its distinct values, which `train` receives as `labels` (int64Classes).
 */
export async function withTrainingMatrix<T>(
  plan: PlanNode, features: string[], target: string | null, flags: RunFlagValues, kernels: MatrixKernels | null,
  train: (matrix: ResidentMatrix, ctx: RunContext, labels: ClassLabel[] | null) => Promise<T>,
  classify = false,
): Promise<T> {
  const settings = runSettings(flags);
  const targetType = target === null ? null : schemaOf(plan).find((f) => f.name === target)?.type;
  return withRunContext(settings, plan, async (ctx) => {
    const optimised = optimize({ kind: 'project', input: plan, columns: trainingColumns(features, target) }, { memoryLimit: settings.memoryLimit });
    // Rows GPU kernels read are partitioned the same way whatever the workers (gpuTrainingBlocksize).
    const onGpu = kernels !== null && (ctx.runner.gpuWorkers ?? 0) > 0 && settings.blocksize === undefined;
    const loadCtx = onGpu ? { ...ctx, blocksize: gpuTrainingBlocksize(plan, settings.memoryLimit) } : ctx;
    const load = async (labels: ClassLabel[] | null) => {
      const matrix = await loadResidentMatrix(await physical(optimised, loadCtx), features, target, loadCtx, kernels, labels && labels.map(String));
      if (matrix.rows === 0) throw new UsageError('the input has no rows to train on');
      return matrix;
    };
    let labels: ClassLabel[] | null = targetType === 'string' ? (await distinctValues(plan, target!, ctx, settings.memoryLimit)).strings : null;
    let matrix: ResidentMatrix | null = await load(labels);
    try {
      if (classify && targetType === 'int64' && !(await exactAsDoubles(matrix))) {
        const inexact = matrix;
        matrix = null;
        await inexact.release();
        labels = int64Classes((await distinctValues(plan, target!, ctx, settings.memoryLimit)).int64s);
        matrix = await load(labels);
      }
      return await train(matrix, ctx, labels);
    } finally {
      await matrix?.release();
    }
  });
}

/** Whether every target value of the matrix is below 2^53 in magnitude, so an int64 target read as float64 kept each value (and distinct values apart). */
async function exactAsDoubles(matrix: ResidentMatrix): Promise<boolean> {
  const maxima = await matrix.map<number>('stats.targetMaxAbs', null);
  return maxima.every((m) => m < 2 ** 53);
}

/**
 * The distinct values of string or int64 column `column`: strings in the group-by's key order,
 * int64s ascending (nulls left out: loading the rows refuses them, naming file and row).
 */
async function distinctValues(plan: PlanNode, column: string, ctx: RunContext, memoryLimit: number): Promise<{ strings: string[]; int64s: bigint[] }> {
  const grouped: PlanNode = { kind: 'aggregate', input: { kind: 'project', input: plan, columns: [column] }, spec: { keys: [column], aggs: parseAggList('count()'), dropna: true } };
  const batch = await collect(await physical(optimize(grouped, { memoryLimit }), ctx), ctx, 'find classes');
  const values = batch.columns[0];
  if (values.type === 'string') return { strings: Array.from({ length: batch.length }, (_, i) => stringAt(values, i)), int64s: [] };
  if (values.type !== 'int64') throw new Error(`class labels of a ${values.type} column`);
  return { strings: [], int64s: Array.from(values.values).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)) };
}

/**
 * Trains with the model file open first, so a path that cannot be written fails before the
 * training, not after it; the file is written whole or not at all (temp file, then rename; a
 * FIFO or device in place). The model's feature types are the plan's.
 */
export async function trainModelFile<M extends Model>(path: string, plan: PlanNode, features: string[], train: () => Promise<M>): Promise<M> {
  const sink = await AtomicFileSink.open(path);
  try {
    const model = await train();
    const types = schemaOf(plan);
    model.featureTypes = features.map((f) => types.find((t) => t.name === f)!.type);
    await writeModel(sink, model);
    return model;
  } catch (err) {
    await sink.abort();
    throw err;
  }
}

/** Writes the model file's text into `sink` and closes it (an AtomicFileSink renames it into place). */
export async function writeModel(sink: ByteSink, model: Model): Promise<void> {
  for (const part of modelFileParts(model)) await sink.write(Buffer.from(part.text, part.ascii ? 'latin1' : 'utf8'));
  await sink.close();
}
