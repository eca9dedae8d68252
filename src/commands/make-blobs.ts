import { Flags } from '@oclif/core';
import { GpuframeCommand } from '../cli/base-command.js';
import { outputFlags, runFlags } from '../cli/flags.js';
import { blobCenters, clusterStds, generatorFlags, pair } from '../cli/generate.js';
import { finishStage } from '../cli/stage.js';
import type { PlanNode } from '../engine/plan/nodes.js';

export default class MakeBlobs extends GpuframeCommand {
  static summary = "Generate isotropic Gaussian blobs for clustering (scikit-learn's make_blobs); the label column is y.";
  static examples = ['<%= config.bin %> make-blobs --n-samples 1000000 --n-features 16 --seed 1 -o data.parquet'];
  static flags = {
    centers: Flags.string({ description: "number of clusters, or their centres: '0,0;5,5' (';' between centres)", default: '3' }),
    'cluster-std': Flags.string({ description: 'standard deviation of the clusters: one for all, or one per centre (a,b,...)', default: '1.0' }),
    'center-box': Flags.string({ description: 'bounds of the cluster centres: min,max', default: '-10,10' }),
    ...generatorFlags, ...outputFlags, ...runFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(MakeBlobs);
    const centers = blobCenters(flags.centers);
    // Given centres set the number of features (scikit-learn's meaning); the generator checks a --n-features that disagrees.
    const nFeatures = flags['n-features'] ?? (Array.isArray(centers) ? centers[0].length : 2);
    const plan: PlanNode = {
      kind: 'generate', generator: 'blobs', columns: null,
      params: { nSamples: flags['n-samples'], nFeatures, seed: flags.seed, centers, clusterStd: clusterStds(flags['cluster-std']), centerBox: pair(flags['center-box'], '--center-box'), },
    };
    await finishStage(plan, flags);
  }
}
