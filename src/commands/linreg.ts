import { Flags } from '@oclif/core';
import { GpuframeCommand } from '../cli/base-command.js';
import { csvFlags, runFlags, numberFlag } from '../cli/flags.js';
import { inputPlan } from '../cli/inputs.js';
import { report } from '../cli/stage.js';
import { chooseFeatures, explainedTraining, featureFlags, trainModelFile, withTrainingMatrix } from '../cli/train.js';
import { fitLinReg } from '../engine/ml/linreg.js';

export default class LinReg extends GpuframeCommand {
  static summary = 'Fit a linear regression (ordinary least squares, or ridge with --alpha); prints coefficients and R².';
  static examples = ['<%= config.bin %> linreg houses.csv --target price --model-out lr.json'];
  static strict = false;
  static flags = {
    target: Flags.string({ description: 'the column to predict', required: true }),
    intercept: Flags.boolean({ description: 'fit an intercept', allowNo: true, default: true }),
    alpha: numberFlag({ description: 'ridge penalty (0: ordinary least squares)', default: 0, min: 0 }),
    ...featureFlags, ...csvFlags, ...runFlags,
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(LinReg);
    const plan = await inputPlan(argv as string[], flags);
    const features = chooseFeatures(plan, flags.target, flags);
    if (explainedTraining(plan, features, flags.target, flags)) return;
    const model = await trainModelFile(flags['model-out'], plan, features, () => withTrainingMatrix(plan, features, flags.target, flags, { trainer: 'linreg' }, (matrix) =>
      fitLinReg(matrix, { fitIntercept: flags.intercept, alpha: flags.alpha, target: flags.target })));
    const coefficients = Object.fromEntries(features.map((f, i) => [f, model.coefficients[i]]));
    const lines = features.map((f, i) => `  ${f}: ${model.coefficients[i]}`).join('\n');
    report(flags, `linreg on ${flags.target}: R² ${model.metrics.r2}, intercept ${model.intercept}\n${lines}\nmodel written to ${flags['model-out']}`,
      { r2: model.metrics.r2, intercept: model.intercept, coefficients, rankDeficient: model.metrics.rankDeficient === 1, model: flags['model-out'] });
  }
}
