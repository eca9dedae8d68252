// The bounded k-means step against the full step, round by round, on the device's own clock.
// A Lloyd run on blobs (ROWS x 32, k = 64, like bench/gpu-ml.mjs) in PARTS partitions; each round
// records the bounded step (bound check, then the listed rows; gpu-lloyd-step.ts's state kept here)
// and, apart, the full step at the same centres, times every dispatch by timestamp queries and the
// round by wall clock, and checks that both give the same counts and sums. One line per round.
// ROWS_PER_THREAD lists variants of the bounded step (rows each thread measures; the step's own
// by default), each run through the same rounds. WARM full steps run first, untimed: an idle GPU
// clocks up over the first second or so (an H100's full step took 19 ms at first, 6 ms by round 19).
//   source .devkit/env.sh; node bench/kmeans-bounded.mjs
//   (env: ROWS=1e7 PARTS=10 K=64 ROUNDS=20 CENTERS=8 STD=2 WARM=300 ROWS_PER_THREAD=4,2,1)
import { dist } from './common.mjs';

const ROWS = Number(process.env.ROWS ?? 1e7), PARTS = Number(process.env.PARTS ?? 10);
const K = Number(process.env.K ?? 64), D = 32, ROUNDS = Number(process.env.ROUNDS ?? 20);
const CENTERS = Number(process.env.CENTERS ?? 8), STD = Number(process.env.STD ?? 2), WARM = Number(process.env.WARM ?? 300);
const VARIANTS = (process.env.ROWS_PER_THREAD ?? String(kmWgsl.stepRowsPerThread(D))).split(',').map(Number);

const { openGpu } = await dist('engine/gpu/device.js');
const { StagingRing, fillU32, kernelFor, storageBuffer, submit, uniformWords, writeBuffer } = await dist('engine/gpu/buffers.js');
const { GpuWork, uploadMatrix } = await dist('kernels/ml-matrix.js');
const km = await dist('kernels/kmeans.js');
const kmWgsl = await dist('kernels/kmeans.wgsl.js');
const { Rng } = await dist('engine/ml/random.js');

const ctx = await openGpu({ allowSoftware: true });
if (!ctx) throw new Error('no GPU');
console.log(`adapter ${ctx.adapter.info?.device ?? ''} timestamps ${ctx.hasTimestamps}`);

// Every dispatch of a GpuWork gets timestamp writes while `timed` holds a list to log into.
const SLOTS = 1024;
const querySet = ctx.device.createQuerySet({ type: 'timestamp', count: SLOTS });
const resolveBuf = ctx.device.createBuffer({ size: SLOTS * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
const readBuf = ctx.device.createBuffer({ size: SLOTS * 8, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
let timed = null;
GpuWork.prototype.dispatch = function (label, code, entry, buffers, workgroups) {
  const i = timed ? 2 * timed.length : -1;
  if (timed) timed.push(label);
  kernelFor(this.ctx, label, code).dispatch(entry, buffers, Math.max(1, Math.min(65535, workgroups)), this.encoder,
    timed ? { querySet, beginningOfPassWriteIndex: i, endOfPassWriteIndex: i + 1 } : undefined);
};
/** Runs `record(work)`, reads `buf` back; ms per label (summed), the GPU's first-to-last span and the wall time. */
async function timedRun(record, buf, bytes) {
  timed = [];
  const work = new GpuWork(ctx);
  record(work);
  const labels = timed;
  timed = null;
  const back = ctx.device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  work.encoder.copyBufferToBuffer(buf, 0, back, 0, bytes);
  work.encoder.resolveQuerySet(querySet, 0, 2 * labels.length, resolveBuf, 0);
  work.encoder.copyBufferToBuffer(resolveBuf, 0, readBuf, 0, 16 * labels.length);
  const t0 = performance.now();
  submit(ctx, work.encoder.finish());
  await Promise.all([back.mapAsync(GPUMapMode.READ), readBuf.mapAsync(GPUMapMode.READ, 0, 16 * labels.length)]);
  const wall = performance.now() - t0;
  const words = new Uint32Array(back.getMappedRange().slice(0));
  const t = new BigUint64Array(readBuf.getMappedRange(0, 16 * labels.length).slice(0));
  back.destroy(); readBuf.unmap(); work.release();
  const ms = {};
  labels.forEach((l, n) => { ms[l] = (ms[l] ?? 0) + Number(t[2 * n + 1] - t[2 * n]) / 1e6; });
  return { words, ms, span: Number(t[2 * labels.length - 1] - t[0]) / 1e6, wall };
}

// Blobs as make-blobs draws them: CENTERS centres uniform in ±10, normal spread STD.
const rng = new Rng(1, 'bounded bench');
const at = Array.from({ length: CENTERS * D }, () => rng.uniform(-10, 10));
const x = new Float64Array(ROWS * D);
for (let r = 0; r < ROWS; r++) { const b = rng.nextInt(CENTERS) * D; for (let j = 0; j < D; j++) x[r * D + j] = at[b + j] + STD * rng.normal(); }
const ring = new StagingRing(ctx), parts = [], per = Math.ceil(ROWS / PARTS);
for (let s = 0; s < ROWS; s += per) { const e = Math.min(ROWS, s + per); parts.push(await uploadMatrix(ctx, ring, x.subarray(s * D, e * D), null, e - s, D)); }
const maxAbs = new Float64Array(D);
for (let i = 0; i < x.length; i++) maxAbs[i % D] = Math.max(maxAbs[i % D], Math.abs(Math.fround(x[i])));
console.log(`${ROWS} x ${D} in ${parts.length} partitions, k ${K}`);

const pairs = km.stepPairs(K, D), local = km.stepSumsLocal(ctx, K, D);
const centresBuf = storageBuffer(ctx, K * D * 4, 'centres'), maxBits = storageBuffer(ctx, D * 4, 'maxima');
writeBuffer(ctx, maxBits, 0, km.maxBitsOf(maxAbs));
const out = storageBuffer(ctx, pairs * 8, 'full out'), totals = storageBuffer(ctx, pairs * 8, 'bounded totals');
const drift = storageBuffer(ctx, (2 * K + 4) * 4, 'drift');
const state = parts.map((m) => ({ labels: storageBuffer(ctx, 4 * m.rows, 'labels'), bounds: storageBuffer(ctx, 8 * m.rows, 'bounds'),
  list: storageBuffer(ctx, 4 * (m.rows + 1), 'list'), checkParams: uniformWords(ctx, km.boundCheckParams(m.rows, K, D)) }));
const first = Float64Array.from({ length: K * D }, (_, i) => x[Math.floor((i / D | 0) * ROWS / K) * D + (i % D)]);
const fullStep = (work, params) => {
  work.encoder.clearBuffer(out);
  parts.forEach((m, i) => km.recordStepWith(work, m, params[i], maxBits, centresBuf, K, out, { countsOnly: false }));
};
{
  writeBuffer(ctx, centresBuf, 0, new Float32Array(first));
  const params = parts.map((m) => uniformWords(ctx, km.stepParams(m, ROWS, km.centreExponent(new Float32Array(first)), 0)));
  const t0 = performance.now();
  for (let w = 0; w < WARM; w += 10) {
    const work = new GpuWork(ctx);
    for (let n = 0; n < 10; n++) fullStep(work, params);
    submit(ctx, work.encoder.finish());
    await ctx.device.queue.onSubmittedWorkDone();
    work.release();
  }
  console.log(`warm-up: ${WARM} full steps in ${(performance.now() - t0).toFixed(0)} ms`);
  for (const p of params) p.destroy();
}
const summary = [];
for (const perThread of VARIANTS) {
  const bounded = kmWgsl.kmeansStepWgsl(D, K, local, { bounded: true, rowsPerThread: perThread });
  const check = kmWgsl.kmeansBoundCheckWgsl(D);
  const stepGroups = (rows) => Math.max(1, local ? Math.min(Math.ceil(rows / (256 * perThread)), 4096, Math.ceil(rows / km.STEP_ROWS_PER_WORKGROUP)) : Math.ceil(rows / (256 * perThread)));
  state.forEach((p, i) => fillU32(ctx, p.labels, 0xffffffff, parts[i].rows));
  { const e = ctx.device.createCommandEncoder(); e.clearBuffer(totals); submit(ctx, e.finish()); }
  let centres = first, before = null;
  const med = [];
  console.log(`== bounded step, ${perThread} row(s) a thread`);
  for (let round = 0; round < ROUNDS; round++) {
    const f32 = new Float32Array(centres);
    writeBuffer(ctx, centresBuf, 0, f32);
    const params = parts.map((m) => uniformWords(ctx, km.stepParams(m, ROWS, km.centreExponent(f32), 0)));
    writeBuffer(ctx, drift, 0, km.centreDrifts(before ?? f32, f32, K, D));
    const b = await timedRun((work) => {
      for (const p of state) work.encoder.clearBuffer(p.list, 0, 4);
      parts.forEach((m, i) => {
        const s = state[i];
        work.dispatch(`bound-check-${D}`, check, 'bound_check', [s.checkParams, s.labels, s.bounds, drift, s.list, m.xr, centresBuf], Math.ceil(m.rows / 256));
        work.dispatch(`bounded-step-r${perThread}`, bounded, 'step', [params[i], m.xr, centresBuf, maxBits, totals, s.list, s.labels, s.bounds], stepGroups(m.rows));
      });
    }, totals, pairs * 8);
    before = f32;
    const full = await timedRun((work) => fullStep(work, params), out, pairs * 8);
    let listed = 0;
    for (const p of state) {
      const rb = ctx.device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const e = ctx.device.createCommandEncoder(); e.copyBufferToBuffer(p.list, 0, rb, 0, 4); submit(ctx, e.finish());
      await rb.mapAsync(GPUMapMode.READ); listed += new Uint32Array(rb.getMappedRange())[0]; rb.destroy();
    }
    const a = km.stepResultOf(b.words, K, D), f = km.stepResultOf(full.words, K, D);
    const same = a.counts.every((v, i) => v === f.counts[i]) && a.sums.hi.every((v, i) => v === f.sums.hi[i] && a.sums.lo[i] === f.sums.lo[i]);
    const fmt = (r) => Object.entries(r.ms).map(([l, v]) => `${l.replace(/^kmeans-?/, '')} ${v.toFixed(3)}`).join(', ');
    console.log(`round ${round}: listed ${listed} (${(100 * listed / ROWS).toFixed(1)}%) ${same ? 'same words' : 'DIFFERENT WORDS'} | bounded: ${fmt(b)}; span ${b.span.toFixed(3)} wall ${b.wall.toFixed(2)} ms | full: ${fmt(full)}; span ${full.span.toFixed(3)} wall ${full.wall.toFixed(2)} ms`);
    if (round >= 2) med.push([b.span, full.span, b.wall, full.wall, listed, b.ms[`bound-check-${D}`], b.ms[`bounded-step-r${perThread}`]]);
    const next = new Float64Array(K * D);
    for (let c = 0; c < K; c++) for (let j = 0; j < D; j++) next[c * D + j] = f.counts[c] > 0 ? (f.sums.hi[c * D + j] + f.sums.lo[c * D + j]) / f.counts[c] : centres[c * D + j];
    centres = next;
    for (const p of params) p.destroy();
  }
  const m = (i) => { const s = med.map((r) => r[i]).sort((p, q) => p - q); return s[s.length >> 1]; };
  summary.push(`${perThread} row(s) a thread, medians from round 2: bounded span ${m(0).toFixed(3)} ms (check ${m(5).toFixed(3)}, step ${m(6).toFixed(3)}; wall ${m(2).toFixed(2)}), full span ${m(1).toFixed(3)} ms (wall ${m(3).toFixed(2)}), listed ${m(4)}`);
}
for (const line of summary) console.log(line);
process.exit(0);
