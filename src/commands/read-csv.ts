import { GpuframeCommand } from '../cli/base-command.js';
import { csvFlags, outputFlags, runFlags } from '../cli/flags.js';
import { inputPlan } from '../cli/inputs.js';
import { finishStage } from '../cli/stage.js';

export default class ReadCsv extends GpuframeCommand {
  static summary = 'Read CSV (or Parquet/Arrow) files into a lazy plan; run it when given -o or --format.';
  static examples = [
    "<%= config.bin %> read-csv 'data/*.csv' --dtypes id=int64 | <%= config.bin %> groupby --by k --agg 'sum(x)' -o out.csv",
    '<%= config.bin %> read-csv flights.csv --columns origin,delay -o subset.parquet',
  ];
  static strict = false;
  static args = {};
  static flags = { ...csvFlags, ...outputFlags, ...runFlags };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(ReadCsv);
    const plan = await inputPlan(argv as string[], flags);
    await finishStage(plan, flags);
  }
}
