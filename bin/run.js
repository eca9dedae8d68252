#!/usr/bin/env node
// GPU workers take about half a second to open their devices: a run that will use them starts
// them before oclif loads (src/cli/early-gpu-workers.ts).
const { startEarlyGpuWorkers } = await import('../dist/cli/early-gpu-workers.js');
startEarlyGpuWorkers(process.argv.slice(2));

const { execute } = await import('@oclif/core');
await execute({ dir: import.meta.url });
