// Runs the built CLI (bin/run.js -> dist/) as a user would, capturing stdout, stderr and exit code.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = `${ROOT}bin/run.js`;

export interface CliResult { code: number; stdout: string; stderr: string; stdoutBytes: Buffer }

export function gpuframe(args: string[], opts: { stdin?: string | Buffer; env?: Record<string, string>; cwd?: string } = {}): Promise<CliResult> {
  return sh(process.execPath, [BIN, ...args], opts);
}

/** Runs a shell pipeline (bash -c) with `gpuframe` meaning this checkout's CLI. */
export function shell(script: string, opts: { env?: Record<string, string>; cwd?: string } = {}): Promise<CliResult> {
  const prelude = `gpuframe() { "${process.execPath}" "${BIN}" "$@"; }; set -o pipefail; `;
  return sh('bash', ['-c', prelude + script], opts);
}

function sh(cmd: string, args: string[], opts: { stdin?: string | Buffer; env?: Record<string, string>; cwd?: string }): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd ?? ROOT, env: { ...process.env, ...opts.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const stdoutBytes = Buffer.concat(out);
      resolve({ code: code ?? (signal ? 128 : 1), stdout: stdoutBytes.toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), stdoutBytes });
    });
    if (opts.stdin !== undefined) child.stdin.end(opts.stdin); else child.stdin.end();
  });
}
