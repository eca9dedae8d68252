import { Flags } from '@oclif/core';
import { GpuframeCommand } from '../cli/base-command.js';
import { csvFlags, outputFlags, runFlags } from '../cli/flags.js';
import { inputPlan, splitList } from '../cli/inputs.js';
import { finishStage, runsHere } from '../cli/stage.js';
import { DataError, UsageError, requireColumn, requireColumns } from '../engine/errors.js';
import { MetricAccumulator } from '../engine/ml/streaming-metrics.js';
import { readModelFile } from '../engine/ml/model-file.js';
import { modelOf } from '../engine/ml/predict-columns.js';
import type { PlanNode } from '../engine/plan/nodes.js';
import { schemaOf } from '../engine/plan/schema.js';

export default class Predict extends GpuframeCommand {
  static summary = 'Append model predictions to rows; prints the fitting metric when the rows hold the target.';
  static examples = ['<%= config.bin %> predict test.csv --model rf.json --keep id,label -o scored.csv'];
  static strict = false;
  static flags = {
    model: Flags.string({ description: 'a model file written by kmeans, linreg or rf-train', required: true }),
    keep: Flags.string({ description: 'input columns to keep in front of the predictions (default: all)' }),
    proba: Flags.boolean({ description: 'classifiers: add proba_<class> columns' }),
    labels: Flags.string({ description: 'k-means: a column of true labels; prints the adjusted Rand index' }),
    ...csvFlags, ...outputFlags, ...runFlags,
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Predict);
    let modelFile: ReturnType<typeof readModelFile>;
    try {
      modelFile = readModelFile(flags.model);
    } catch {
      throw new DataError('cannot read the model file', { file: flags.model });
    }
    const input = await inputPlan(argv as string[], flags);
    const plan: PlanNode = { kind: 'predict', input, modelPath: flags.model, modelText: modelFile.text, modelStamp: modelFile.stamp, keep: flags.keep ? splitList(flags.keep) : null, proba: flags.proba === true, outputName: 'prediction' };
    const model = modelOf(plan);
    const names = schemaOf(input).map((f) => f.name);
    requireColumns(model.featureNames, names, `feature column of model ${flags.model}`);
    if (flags.proba && !(model.kind === 'random-forest' && model.task === 'classification')) throw new UsageError('--proba needs a classifier model');
    schemaOf(plan); // checks --keep now, in this stage
    const truth = flags.labels ?? model.target;
    if (flags.labels && model.kind !== 'kmeans') throw new UsageError(`--labels is for k-means models (the true clusters); a ${model.kind} model is scored against its target '${model.target}'`);
    if (flags.labels) requireColumn(flags.labels, names, '--labels column');
    const metric = truth !== null && names.includes(truth) ? new MetricAccumulator(model, truth) : null;
    // The metric needs the truth column: kept for it when --keep leaves it out, but not written.
    const hidden = metric && runsHere(flags) && plan.keep !== null && !plan.keep.includes(truth!) ? [truth!] : [];
    if (hidden.length > 0) plan.keep = [...plan.keep!, truth!];
    const scored = () => (metric && metric.rows > 0 ? metric.value() : null);
    await finishStage(plan, flags, {
      observe: metric ? (batch) => metric.add(batch) : undefined,
      hidden,
      summary: () => ({ metric: scored()?.name ?? null, value: scored()?.value ?? null, target: scored() ? truth : null }),
    });
    if (scored() && !flags.json && !flags.quiet) process.stderr.write(`gpuframe: ${metric!.describe()}\n`);
  }
}
