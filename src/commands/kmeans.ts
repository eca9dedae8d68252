import { Flags } from '@oclif/core';
import { GpuframeCommand } from '../cli/base-command.js';
import { csvFlags, runFlags, numberFlag } from '../cli/flags.js';
import { inputPlan } from '../cli/inputs.js';
import { finishStage, report } from '../cli/stage.js';
import { chooseFeatures, explainedTraining, featureFlags, trainModelFile, withTrainingMatrix } from '../cli/train.js';
import { fitKMeans } from '../engine/ml/kmeans.js';
import { serializeModel } from '../engine/ml/model-file.js';
import { schemaOf } from '../engine/plan/schema.js';
import { UsageError } from '../engine/errors.js';
import { checkWritable } from '../engine/io/output/byte-sink.js';

export default class KMeans extends GpuframeCommand {
  static summary = 'Cluster rows with k-means (k-means++ seeding, Lloyd iterations); prints inertia and iterations.';
  static examples = ['<%= config.bin %> kmeans points.csv --k 8 --model-out km.json -o labels.csv'];
  static strict = false;
  static flags = {
    k: Flags.integer({ description: 'number of clusters', required: true, min: 1 }),
    'max-iter': Flags.integer({ description: 'Lloyd iterations per run at most', default: 300, min: 1 }),
    tol: numberFlag({ description: "relative tolerance on the centres' movement (scikit-learn's meaning)", default: 1e-4, min: 0 }),
    init: Flags.string({ description: 'seeding: k-means++ (greedy; k-means|| from 131072 rows: a few passes over the rows) or k distinct random rows', options: ['k-means++', 'random'], default: 'k-means++' }),
    'n-init': Flags.integer({ description: 'runs with different seeds; the lowest inertia wins', default: 1, min: 1 }),
    output: Flags.string({ char: 'o', description: 'also write the rows with their cluster in a `label` column' }),
    ...featureFlags, ...csvFlags, ...runFlags,
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(KMeans);
    const plan = await inputPlan(argv as string[], flags);
    const features = chooseFeatures(plan, null, flags);
    if (explainedTraining(plan, features, null, flags)) return;
    if (flags.output && schemaOf(plan).some((f) => f.name === 'label')) throw new UsageError("the input already has a column 'label', which -o adds: train without -o, then write the rows with predict --model … --keep (its column is 'prediction')");
    if (flags.output) checkWritable(flags.output); // before the training, not after it
    const model = await trainModelFile(flags['model-out'], plan, features, () => withTrainingMatrix(plan, features, null, flags, { trainer: 'kmeans', k: flags.k }, (matrix) => fitKMeans(matrix, {
      k: flags.k, maxIter: flags['max-iter'], tol: flags.tol, init: flags.init as 'k-means++' | 'random', nInit: flags['n-init'], seed: flags.seed,
    })));
    const { inertia, iterations } = model.metrics;
    const summary = { inertia, iterations, k: flags.k, model: flags['model-out'] };
    // With -o and --json, one JSON line: the labelled rows' summary and the training's.
    if (!(flags.output && flags.json)) report(flags, `k-means: k=${flags.k}, inertia ${inertia}, ${iterations} iterations; model written to ${flags['model-out']}`, summary);
    if (flags.output) {
      await finishStage({ kind: 'predict', input: plan, modelPath: flags['model-out'], modelText: serializeModel(model), modelStamp: null, keep: null, proba: false, outputName: 'label' },
        { ...flags, output: flags.output, explain: false, dot: false }, { summary: () => summary });
    }
  }
}
