// Peak resident memory of a process and all its descendants, sampled from /proc (Linux), for
// checking that --memory-limit bounds what a run holds.

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { BIN, ROOT } from './helpers/cli.js';

const PAGE_BYTES = 4096;

/** pid -> [parent pid, resident bytes] for every process we can read. */
function processTable(): Map<number, [number, number]> {
  const table = new Map<number, [number, number]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(name), [Number(fields[1]), Number(fields[21]) * PAGE_BYTES]);
    } catch { /* exited meanwhile */ }
  }
  return table;
}

/** The direct children of `pid`. */
export function childrenOf(pid: number): number[] {
  return [...processTable()].filter(([, [ppid]]) => ppid === pid).map(([child]) => child);
}

export function treeRssBytes(root: number): number {
  const table = processTable();
  const children = new Map<number, number[]>();
  for (const [pid, [ppid]] of table) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  let total = 0;
  for (const stack = [root]; stack.length > 0;) {
    const pid = stack.pop()!;
    total += table.get(pid)?.[1] ?? 0;
    stack.push(...(children.get(pid) ?? []));
  }
  return total;
}

/** Runs the CLI, sampling its process tree's RSS every `everyMs`; resolves with the exit code and the peak. */
export function gpuframeWithPeakRss(args: string[], everyMs = 20): Promise<{ code: number; stderr: string; peakBytes: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    let peakBytes = 0;
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setInterval(() => { peakBytes = Math.max(peakBytes, treeRssBytes(child.pid!)); }, everyMs);
    child.on('error', reject);
    child.on('close', (code) => { clearInterval(timer); resolve({ code: code ?? 1, stderr, peakBytes }); });
  });
}
