import { Flags } from '@oclif/core';
import { GpuframeCommand } from '../cli/base-command.js';
import { inputPlan } from '../cli/inputs.js';
import { printExplain } from '../cli/stage.js';
import { csvFlags, runFlags } from '../cli/flags.js';

export default class Explain extends GpuframeCommand {
  static summary = 'Print the optimised plan read from stdin (or of reading INPUT) instead of running it.';
  static examples = ["<%= config.bin %> read-csv a.csv | <%= config.bin %> groupby --by k --agg 'sum(x)' | <%= config.bin %> explain --dot"];
  static strict = false;
  static flags = {
    dot: Flags.boolean({ description: 'print Graphviz dot' }),
    ...csvFlags, ...runFlags,
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Explain);
    printExplain(await inputPlan(argv as string[], flags), flags);
  }
}
