import { Flags } from '@oclif/core';
import { GpuframeCommand } from '../cli/base-command.js';
import { outputFlags, runFlags, numberFlag } from '../cli/flags.js';
import { generatorFlags, shareList } from '../cli/generate.js';
import { finishStage } from '../cli/stage.js';
import type { PlanNode } from '../engine/plan/nodes.js';

export default class MakeClassification extends GpuframeCommand {
  static summary = "Generate a random n-class classification problem (scikit-learn's make_classification); the label column is y.";
  static examples = ['<%= config.bin %> make-classification --n-samples 1000000 --n-features 16 --seed 1 -o data.parquet'];
  static flags = {
    'n-informative': Flags.integer({ description: 'informative features', default: 2, min: 1 }),
    'n-redundant': Flags.integer({ description: 'linear combinations of informative features', default: 2, min: 0 }),
    'n-repeated': Flags.integer({ description: 'duplicated features', default: 0, min: 0 }),
    'n-classes': Flags.integer({ description: 'number of classes', default: 2, min: 2 }),
    'n-clusters-per-class': Flags.integer({ description: 'clusters per class', default: 2, min: 1 }),
    'class-sep': numberFlag({ description: 'hypercube size factor', default: 1 }),
    'flip-y': numberFlag({ description: 'share of labels assigned at random', default: 0.01, min: 0, max: 1 }),
    weights: Flags.string({ description: 'share of the rows in each class, e.g. 0.9,0.1 (n-classes values, or one fewer and the last is the rest; default equal)' }),
    ...generatorFlags, ...outputFlags, ...runFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(MakeClassification);
    const plan: PlanNode = {
      kind: 'generate', generator: 'classification', columns: null,
      params: { nSamples: flags['n-samples'], nFeatures: flags['n-features'] ?? 20, seed: flags.seed, nInformative: flags['n-informative'], nRedundant: flags['n-redundant'], nRepeated: flags['n-repeated'], nClasses: flags['n-classes'], nClustersPerClass: flags['n-clusters-per-class'], classSep: flags['class-sep'], flipY: flags['flip-y'], weights: flags.weights === undefined ? undefined : shareList(flags.weights, '--weights') },
    };
    await finishStage(plan, flags);
  }
}
