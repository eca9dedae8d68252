#!/usr/bin/env node
// Worker processes take a while to start (GPU workers about half a second to open their devices):
// a run that will use them starts them before oclif loads (src/cli/early-workers.ts).
const { startEarlyWorkers } = await import('../dist/cli/early-workers.js');
startEarlyWorkers(process.argv.slice(2));

const { execute } = await import('@oclif/core');
await execute({ dir: import.meta.url });
