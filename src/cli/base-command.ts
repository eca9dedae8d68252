// The base of every gpuframe command: turns any error into a one-line message on stderr and the
// contract's exit code (never a stack trace, unless GPUFRAME_DEBUG is set).

import { Command, Errors } from '@oclif/core';
import { GpuframeError } from '../engine/errors.js';

export abstract class GpuframeCommand extends Command {
  protected async catch(err: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<void> {
    if (process.env.GPUFRAME_DEBUG) process.stderr.write(`${err.stack}\n`);
    if (err instanceof GpuframeError) return this.fail(err.message, err.exitCode);
    // oclif's own parse errors (unknown flag, missing argument, bad option value) are usage errors.
    if (err instanceof Errors.CLIError || err.oclif !== undefined) {
      if (err.oclif?.exit === 0) return;
      return this.fail(err.message.replace(/\n\s*See more help with --help$/m, ''), 2);
    }
    return this.fail(`internal error: ${err.message} (set GPUFRAME_DEBUG=1 for details)`, 1);
  }

  private fail(message: string, code: number): never {
    process.stderr.write(`gpuframe: ${message}\n`);
    process.exit(code);
  }
}
