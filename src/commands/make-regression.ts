import { Flags } from '@oclif/core';
import { GpuframeCommand } from '../cli/base-command.js';
import { outputFlags, runFlags, numberFlag } from '../cli/flags.js';
import { generatorFlags } from '../cli/generate.js';
import { finishStage } from '../cli/stage.js';
import type { PlanNode } from '../engine/plan/nodes.js';

export default class MakeRegression extends GpuframeCommand {
  static summary = "Generate a random linear regression problem (scikit-learn's make_regression); the target column is y.";
  static examples = ['<%= config.bin %> make-regression --n-samples 1000000 --n-features 16 --seed 1 -o data.parquet'];
  static flags = {
    'n-informative': Flags.integer({ description: 'features with a non-zero coefficient', default: 10, min: 0 }),
    bias: numberFlag({ description: 'intercept of the linear model', default: 0 }),
    noise: numberFlag({ description: 'standard deviation of the Gaussian noise', default: 0, min: 0 }),
    ...generatorFlags, ...outputFlags, ...runFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(MakeRegression);
    const plan: PlanNode = {
      kind: 'generate', generator: 'regression', columns: null,
      params: { nSamples: flags['n-samples'], nFeatures: flags['n-features'] ?? 100, seed: flags.seed, nInformative: flags['n-informative'], bias: flags.bias, noise: flags.noise, },
    };
    await finishStage(plan, flags);
  }
}
