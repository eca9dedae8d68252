// The base of every gpuframe command: turns any error into a one-line message on stderr and the
// contract's exit code (never a stack trace, unless GPUFRAME_DEBUG is set).

import { Command, Errors } from '@oclif/core';
import { GpuframeError } from '../engine/errors.js';

/**
 * The exit status of a command whose reader closed its stdout (`gpuframe … | head`): it stops
 * quietly, as Unix tools killed by SIGPIPE do (128 + 13, like 130 for an interrupt).
 */
export const CLOSED_OUTPUT_EXIT = 141;

const isClosedPipe = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code === 'EPIPE';

// A write that fails after nothing waits on stdout any more still ends the run quietly.
process.stdout.on('error', (err) => { if (isClosedPipe(err)) process.exit(CLOSED_OUTPUT_EXIT); throw err; });

/**
 * A flag error on one line: oclif wraps them as "Parsing --x \n\t<message>\nSee more help with
 * --help"; the flag's name leads (once: our own messages start with it).
 */
function withoutOclifFrame(message: string): string {
  const text = message.replace(/\n\s*See more help with --help$/m, '');
  const framed = /^Parsing (--[\w-]+) \n\t([\s\S]*)$/.exec(text);
  if (!framed) return text;
  const [, flag, inner] = framed;
  return inner.startsWith(flag) ? inner : `${flag}: ${inner}`;
}

export abstract class GpuframeCommand extends Command {
  protected async catch(err: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<void> {
    if (isClosedPipe(err)) process.exit(CLOSED_OUTPUT_EXIT);
    if (process.env.GPUFRAME_DEBUG) process.stderr.write(`${err.stack}\n`);
    if (err instanceof GpuframeError) return this.fail(withoutOclifFrame(err.message), err.exitCode);
    // oclif's own parse errors (unknown flag, missing argument, bad option value) are usage errors.
    if (err instanceof Errors.CLIError || err.oclif !== undefined) {
      if (err.oclif?.exit === 0) return;
      return this.fail(withoutOclifFrame(err.message), 2);
    }
    return this.fail(`internal error: ${err.message} (set GPUFRAME_DEBUG=1 for details)`, 1);
  }

  private fail(message: string, code: number): never {
    process.stderr.write(`gpuframe: ${message}\n`);
    process.exit(code);
  }
}
