import { Args, Flags } from '@oclif/core';
import { GpuframeCommand } from '../cli/base-command.js';
import { csvFlags, outputFlags, runFlags } from '../cli/flags.js';
import { inputPlan, splitList } from '../cli/inputs.js';
import { finishStage } from '../cli/stage.js';
import { UsageError } from '../engine/errors.js';
import { joinOutputSchema, type JoinHow, type JoinSpec } from '../engine/ops/join/index.js';
import type { PlanNode } from '../engine/plan/nodes.js';
import { schemaOf } from '../engine/plan/schema.js';

export default class Merge extends GpuframeCommand {
  static summary = 'Join two inputs on key columns (inner, left, right, outer); null keys never match.';
  static examples = ['<%= config.bin %> read-csv a.csv | <%= config.bin %> merge - b.parquet --on id --how left -o joined.csv'];
  static args = {
    left: Args.string({ description: "left input (a file, or '-' for stdin)", required: true }),
    right: Args.string({ description: "right input (a file, or '-' for stdin)", required: true }),
  };
  static flags = {
    on: Flags.string({ description: 'key columns present on both sides: k1,k2', exclusive: ['left-on', 'right-on'] }),
    'left-on': Flags.string({ description: 'key columns of the left input', dependsOn: ['right-on'] }),
    'right-on': Flags.string({ description: 'key columns of the right input', dependsOn: ['left-on'] }),
    how: Flags.string({ description: 'join type', options: ['inner', 'left', 'right', 'outer'], default: 'inner' }),
    suffixes: Flags.string({ description: 'suffixes for overlapping column names', default: '_x,_y' }),
    ...csvFlags, ...outputFlags, ...runFlags,
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Merge);
    if (args.left === '-' && args.right === '-') throw new UsageError('only one side of a merge can be stdin');
    const leftOn = flags.on ? splitList(flags.on) : flags['left-on'] ? splitList(flags['left-on']) : null;
    const rightOn = flags.on ? splitList(flags.on) : flags['right-on'] ? splitList(flags['right-on']) : null;
    if (!leftOn || !rightOn) throw new UsageError('merge needs --on, or --left-on with --right-on');
    if (leftOn.length !== rightOn.length) throw new UsageError(`--left-on names ${leftOn.length} columns but --right-on names ${rightOn.length}`);
    const suffixes = flags.suffixes.split(',');
    if (suffixes.length !== 2) throw new UsageError(`--suffixes expects two comma-separated suffixes, got '${flags.suffixes}'`);
    const spec: JoinSpec = { leftOn, rightOn, how: flags.how as JoinHow, suffixes: [suffixes[0], suffixes[1]] };
    const left = await inputPlan([args.left], flags, args.right !== '-');
    const right = await inputPlan([args.right], flags, args.left !== '-');
    joinOutputSchema(schemaOf(left), schemaOf(right), spec); // checks keys now, in this stage
    const plan: PlanNode = { kind: 'join', left, right, spec };
    await finishStage(plan, flags);
  }
}
