import { Flags } from '@oclif/core';
import { GpuframeCommand } from '../cli/base-command.js';
import { csvFlags, parseNumber, runFlags } from '../cli/flags.js';
import { inputPlan } from '../cli/inputs.js';
import { report } from '../cli/stage.js';
import { chooseFeatures, explainedTraining, featureFlags, trainModelFile, withTrainingMatrix } from '../cli/train.js';
import { UsageError } from '../engine/errors.js';
import { workerTreeGrower } from '../engine/exec/forest-trees.js';
import { fitRandomForest, type ForestParams } from '../engine/ml/forest.js';
import { schemaOf } from '../engine/plan/schema.js';

export default class RfTrain extends GpuframeCommand {
  static summary = 'Train a random forest (histogram-based trees) for classification or regression.';
  static examples = ['<%= config.bin %> rf-train train.csv --target label --n-estimators 200 --max-depth 12 --model-out rf.json'];
  static strict = false;
  static flags = {
    target: Flags.string({ description: 'the column to predict', required: true }),
    task: Flags.string({ description: "default: classification when the target is integer or bool, else regression", options: ['classification', 'regression'] }),
    'n-estimators': Flags.integer({ description: 'number of trees', default: 100, min: 1 }),
    'max-depth': Flags.integer({ description: 'maximum tree depth', default: 16, min: 1 }),
    'n-bins': Flags.integer({ description: 'quantile bins per feature', default: 32, min: 2, max: 256 }),
    'max-features': Flags.string({ description: 'features tried per split: sqrt, log2, all, or a fraction', default: 'sqrt' }),
    'min-samples-leaf': Flags.integer({ description: 'fewest rows in a leaf', default: 1, min: 1 }),
    bootstrap: Flags.boolean({ description: 'draw each tree\'s rows with replacement', allowNo: true, default: true }),
    criterion: Flags.string({ description: 'split quality for classification', options: ['gini', 'entropy'], default: 'gini' }),
    ...featureFlags, ...csvFlags, ...runFlags,
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(RfTrain);
    const plan = await inputPlan(argv as string[], flags);
    const features = chooseFeatures(plan, flags.target, flags);
    if (explainedTraining(plan, features, flags.target, flags)) return;
    const targetType = schemaOf(plan).find((f) => f.name === flags.target)!.type;
    const task = (flags.task ?? (targetType === 'float64' ? 'regression' : 'classification')) as 'classification' | 'regression';
    if (targetType === 'string' && task === 'regression') throw new UsageError(`the target '${flags.target}' holds strings: regression needs a numeric target`);
    const params: ForestParams = {
      task, nEstimators: flags['n-estimators'], maxDepth: flags['max-depth'], nBins: flags['n-bins'],
      maxFeatures: parseMaxFeatures(flags['max-features']), minSamplesLeaf: flags['min-samples-leaf'],
      bootstrap: flags.bootstrap, criterion: flags.criterion as 'gini' | 'entropy', seed: flags.seed, target: flags.target,
    };
    const model = await trainModelFile(flags['model-out'], plan, features, () => withTrainingMatrix(plan, features, flags.target, flags, null, async (matrix, ctx, labels) => {
      const forest = await fitRandomForest(matrix, params, workerTreeGrower(ctx));
      // The forest learnt class indices (string targets, int64 ones beyond 2^53) or 0 and 1 (bool
      // targets): its classes are the target's values.
      if (task === 'classification' && labels) forest.classes = forest.classes.map((c) => labels[c as number]);
      if (task === 'classification' && targetType === 'bool') forest.classes = forest.classes.map((c) => c === 1);
      return forest;
    }, task === 'classification'));
    const trees = model.trees.treeOffsets.length - 1;
    const nodes = model.trees.feature.length;
    report(flags, `random forest (${task}) on ${flags.target}: ${trees} trees, ${nodes} nodes${task === 'classification' ? `, classes ${model.classes.join(', ')}` : ''}; model written to ${flags['model-out']}`,
      { task, trees, nodes, classes: model.classes, model: flags['model-out'] });
  }
}

function parseMaxFeatures(text: string): ForestParams['maxFeatures'] {
  if (text === 'sqrt' || text === 'log2' || text === 'all') return text;
  const refuse = () => new UsageError(`--max-features expects sqrt, log2, all, a fraction in (0, 1] or a count, got '${text}'`);
  let x: number;
  try { x = parseNumber(text, '--max-features'); } catch { throw refuse(); }
  if (!(x > 0) || (x > 1 && !Number.isInteger(x))) throw refuse();
  return x;
}
