// Diagnosis: runs a command and prints, in seconds from its start, each line it writes to stderr
// and when it exits, so time spent before the first slice of a --trace, or after the last one
// (start-up, writing outputs, workers shutting down), shows up.
//   node bench/timeline.mjs node bin/run.js rf-train data.arrow --target y --model-out rf.json

import { spawn } from 'node:child_process';

const [command, ...args] = process.argv.slice(2);
const start = performance.now();
const at = () => ((performance.now() - start) / 1000).toFixed(2).padStart(7);
const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'pipe'] });
child.stderr.on('data', (chunk) => {
  for (const line of String(chunk).split('\n')) if (line && !/^Warning: maxDynamic/.test(line)) console.log(`${at()}  ${line.slice(0, 200)}`);
});
child.on('exit', (code, signal) => console.log(`${at()}  exit ${code ?? signal}`));
