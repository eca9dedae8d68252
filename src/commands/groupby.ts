import { Flags } from '@oclif/core';
import { GpuframeCommand } from '../cli/base-command.js';
import { csvFlags, outputFlags, runFlags } from '../cli/flags.js';
import { inputPlan, splitList } from '../cli/inputs.js';
import { finishStage } from '../cli/stage.js';
import { aggregateOutputSchema, parseAggList } from '../engine/ops/aggregate/index.js';
import type { PlanNode } from '../engine/plan/nodes.js';
import { schemaOf } from '../engine/plan/schema.js';

export default class Groupby extends GpuframeCommand {
  static summary = 'Group rows by key columns and aggregate: count, sum, mean, min, max, var, std, nunique.';
  static examples = ["<%= config.bin %> groupby flights.csv --by origin --agg 'mean(delay),count(),max(delay)'"];
  static strict = false;
  static flags = {
    by: Flags.string({ description: 'key columns: k1,k2', required: true }),
    agg: Flags.string({ description: "aggregates: 'mean(delay),count(),sum(x),min(x),max(x),var(x),std(x),nunique(x)'", required: true }),
    dropna: Flags.boolean({ description: 'drop rows whose key is null (default: null keys form their own group)', allowNo: true, default: false }),
    ...csvFlags, ...outputFlags, ...runFlags,
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Groupby);
    const input = await inputPlan(argv as string[], flags);
    const spec = { keys: splitList(flags.by), aggs: parseAggList(flags.agg), dropna: flags.dropna };
    aggregateOutputSchema(schemaOf(input), spec); // checks columns and types now, in this stage
    const plan: PlanNode = { kind: 'aggregate', input, spec };
    await finishStage(plan, flags);
  }
}
