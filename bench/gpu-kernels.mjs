#!/usr/bin/env node
// Times the GPU kernels end to end (upload + kernels + readback of the small result) on large
// generated inputs and prints GB/s of input bytes and the fraction of a measured device-to-device
// copy bandwidth. Run after `npm run build`:  ROWS=50000000 node bench/gpu-kernels.mjs
// Inputs are generated before the GPU device is opened, in per-chunk functions (dawn.node crash:
// notes/webgpu.md). Wall-clock timing over whole calls; each kernel call is long enough that
// event-polling latency is small next to it.
import { performance } from 'node:perf_hooks';

const ROWS = Number(process.env.ROWS ?? 4_000_000);
const GROUPS = Number(process.env.GROUPS ?? 300);
const REPEAT = Number(process.env.REPEAT ?? 3);

function fillChunk(keys, ints, floats, from, to) {
  for (let i = from; i < to; i++) {
    const g = (Math.imul(i, 2654435761) >>> 0) % GROUPS;
    keys[2 * i] = g; keys[2 * i + 1] = 0;
    ints[2 * i] = (i * 7) >>> 0; ints[2 * i + 1] = 0;
    floats[i] = (i % 1000) * 0.25 - 100;
  }
}
function csvChunk(lines, from, to) {
  for (let i = from; i < to; i++) lines.push(`${i},${(i % 977) * 1.5 - 300},${i * 3},ABC`);
}

const keys = new Uint32Array(ROWS * 2), ints = new Uint32Array(ROWS * 2), floats = new Float64Array(ROWS);
for (let at = 0; at < ROWS; at += 4096) fillChunk(keys, ints, floats, at, Math.min(ROWS, at + 4096));
const csvRows = Math.min(ROWS, Number(process.env.CSV_ROWS ?? ROWS / 2));
const lines = [];
for (let at = 0; at < csvRows; at += 4096) csvChunk(lines, at, Math.min(csvRows, at + 4096));
const csvBytes = new TextEncoder().encode(lines.join('\n') + '\n');
lines.length = 0;

const { openGpu, describeAdapter } = await import('../dist/engine/gpu/device.js');
const { StagingRing, storageBuffer, freeBuffer } = await import('../dist/engine/gpu/buffers.js');
const { groupbyAggregate } = await import('../dist/kernels/groupby-aggregate.js');
const { csvScan } = await import('../dist/kernels/csv-scan.js');
const { hashJoin } = await import('../dist/kernels/hash-join.js');

const ctx = await openGpu({ allowSoftware: true });
if (!ctx) { console.error('no WebGPU adapter'); process.exit(1); }
const d = describeAdapter(ctx);
console.log(`adapter: ${d.name} (${d.vendor}, ${d.isSoftware ? 'software' : 'hardware'}), subgroups=${ctx.hasSubgroups} timestamp-query=${ctx.hasTimestamps}`);

async function copyBandwidth() {
  const bytes = Math.min(256 << 20, ctx.device.limits.maxStorageBufferBindingSize);
  const a = storageBuffer(ctx, bytes, 'copy src'), b = storageBuffer(ctx, bytes, 'copy dst');
  const reps = 10;
  const run = async () => {
    const enc = ctx.device.createCommandEncoder();
    for (let i = 0; i < reps; i++) enc.copyBufferToBuffer(a, 0, b, 0, bytes);
    ctx.device.queue.submit([enc.finish()]);
    await ctx.device.queue.onSubmittedWorkDone();
  };
  await run();
  const t0 = performance.now();
  await run();
  const s = (performance.now() - t0) / 1000;
  freeBuffer(ctx, a); freeBuffer(ctx, b);
  return (2 * bytes * reps) / s / 1e9; // read + write
}

async function time(name, inputBytes, fn) {
  await fn(); // warm-up: pipelines compiled
  let best = Infinity;
  for (let r = 0; r < REPEAT; r++) {
    const t0 = performance.now();
    await fn();
    best = Math.min(best, performance.now() - t0);
  }
  const gbs = inputBytes / (best / 1000) / 1e9;
  console.log(`${name.padEnd(34)} ${best.toFixed(1).padStart(9)} ms  ${gbs.toFixed(2).padStart(8)} GB/s  ${(100 * gbs / copyGBs).toFixed(1).padStart(6)}% of copy`);
}

const copyGBs = await copyBandwidth();
console.log(`device-to-device copy: ${copyGBs.toFixed(1)} GB/s (read+write)`);
const ring = new StagingRing(ctx, 32 << 20, 4);
console.log(`rows=${ROWS} groups=${GROUPS} csv=${(csvBytes.length / 1e6).toFixed(1)} MB`);

await time('groupby count+sum+min/max int64', keys.byteLength + ints.byteLength, () =>
  groupbyAggregate(ctx, { words: keys, valid: null }, [{ type: 'int64', words: ints, valid: null }], { expectedGroups: GROUPS, ring }));
await time('groupby exact float64 sum+min/max', keys.byteLength + floats.byteLength, () =>
  groupbyAggregate(ctx, { words: keys, valid: null }, [{ type: 'float64', values: floats, valid: null }], { expectedGroups: GROUPS, ring }));
const dim = new Uint32Array(GROUPS * 2);
for (let g = 0; g < GROUPS; g++) dim[2 * g] = g;
await time(`hash-join ${ROWS} x ${GROUPS}`, keys.byteLength, () => hashJoin(ctx, { words: keys, valid: null }, { words: dim, valid: null }, { ring }));
await time('csv-scan 2 numeric columns', csvBytes.length, () =>
  csvScan(ctx, { bytes: csvBytes, columns: [{ index: 1, type: 'float64' }, { index: 2, type: 'int64' }], final: true }, ring));
ring.destroy();
process.exit(0);
