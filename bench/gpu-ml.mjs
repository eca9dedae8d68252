// ML on the GPU machine: k-means (ROWS x 32, k = 64, 20 Lloyd iterations) and linreg (ROWS_LINREG
// x 16) with --device cpu, one GPU and two GPUs; checks that the 1- and 2-GPU model files are
// byte-identical and that GPU results match the CPU's (inertia within 1e-4, coefficients within
// 1e-6); compares with scikit-learn and PyTorch through python3 on data of the same shape.
//   source .devkit/env.sh; node bench/gpu-ml.mjs          (env: ROWS=1e7 ROWS_LINREG=1e7 DIR=/tmp/gpuframe-ml TIMEOUT=150
//   CONFIGS=cpu,gpu_0,gpu_0_1,gpus_cpu_workers to choose runs, RUNS=2 runs of each (the last reported), PEERS=0 to skip scikit-learn and PyTorch,
//   BLOCKSIZE=128MB by default, auto for no --blocksize, KERNELS=0 to skip the kernels alone)
// Time per Lloyd iteration comes from the run's --trace: the starts of successive 'ml kmeans.assign'
// rounds, so loading and seeding are not counted, nor the first round (it compiles the kernels).
// The blobs have fewer true centres (BLOB_CENTERS) than k, so Lloyd keeps moving for all 20
// iterations (well-separated blobs with one centre each converge after 2). Times are also given as
// a fraction of the roofline: max(bytes / HBM bandwidth, f32 flops / f32 peak). Last, the kernels
// alone on one device matrix of all rows (a child process, `node bench/gpu-ml.mjs --kernels`): the
// k-means column maxima and step (and variants of it), the step over 8 partitions, the Gram pass
// and its sum over blocks, each the marginal time of REPS (20) more in one submission after WARM_S (1.5) s
// of the same work (the GPU's clock ramps up), so the CLI's per-partition and per-round costs can
// be told apart from the kernels'. The step's variants there: STEP_VARIANTS (rows a thread, carry
// batch, features from registers), STEP_WG with STEP_GROUPS (workgroup sizes and counts), KM_DATA=blobs.
// Progress lines go to stdout as they happen.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dist, log, marginalMs, resultTable, runGpuframe, traceSpanSeconds } from './common.mjs';

const ROWS = Number(process.env.ROWS ?? 1e7);
const ROWS_LINREG = Number(process.env.ROWS_LINREG ?? ROWS);
const DIR = process.env.DIR ?? '/tmp/gpuframe-ml';
const TIMEOUT_S = Number(process.env.TIMEOUT ?? 150);
const K = 64, D = 32, D_LINREG = 16, ITERS = 20, BLOB_CENTERS = 8;
const HBM_BYTES_PER_S = 4.2e12, F32_FLOPS_PER_S = 67e12; // H200 SXM: HBM3e, FP32 without tensor cores
/** BLOCKSIZE=auto: no --blocksize flag (what a user gets: GPU training partitions from the input size alone). */
const BLOCKSIZE = process.env.BLOCKSIZE === 'auto' ? [] : ['--blocksize', process.env.BLOCKSIZE ?? '128MB'];

/** Runs the CLI; `progressFlag` false for commands without --progress (devices). */
const gpuframe = (args, progressFlag = true) => runGpuframe([...args, ...(progressFlag ? ['--no-progress'] : [])], { timeoutS: TIMEOUT_S });

/**
 * A configuration's command, RUNS times (default 2): the last run is the one reported, the first
 * (`firstSeconds`) compiles the kernels into the driver's cache and wakes GPUs that idled at their
 * lowest clock, which a single sample on a fresh machine mixes into a 1- against 2-GPU ratio.
 */
const RUNS = Math.max(1, Number(process.env.RUNS ?? 2));
function measured(args) {
  let first = null, r = null;
  for (let i = 0; i < RUNS; i++) {
    r = gpuframe(args);
    first ??= r.seconds;
    if (r.code !== 0) break;
  }
  return { ...r, firstSeconds: first };
}

/**
 * Seconds per round of a map task: the starts of its successive rounds (one slice per worker per
 * round). Only the last `lastRounds` count (k-means: the Lloyd steps and the final inertia, not the
 * k-means|| weights before them), and of those the first, which compiles the kernels, is left out
 * when there are 3 or more.
 */
function perRound(tracePath, name, lastRounds = Infinity) {
  const events = JSON.parse(readFileSync(tracePath, 'utf8')).traceEvents.filter((e) => e.ph === 'X' && e.name.startsWith(name));
  const workers = new Set(events.map((e) => e.tid)).size;
  const all = events.map((e) => e.ts).sort((a, b) => a - b);
  const starts = all.slice(Math.max(0, all.length - lastRounds * workers));
  const rounds = Math.floor(starts.length / workers);
  if (rounds < 2) return { rounds, seconds: NaN };
  const first = rounds >= 3 ? 1 : 0;
  const roundStart = (i) => starts[i * workers];
  // The median round too: the H200s sit near their idle clock during rounds with host gaps and
  // speed up over the run (BENCHMARKS.md), so the mean mixes slow early rounds with later ones.
  const lengths = Array.from({ length: rounds - 1 - first }, (_, i) => roundStart(first + i + 1) - roundStart(first + i)).sort((a, b) => a - b);
  return { rounds, seconds: (roundStart(rounds - 1) - roundStart(first)) / (rounds - 1 - first) / 1e6, medianSeconds: lengths[Math.floor(lengths.length / 2)] / 1e6 };
}

function python(script) {
  const t0 = performance.now();
  const r = spawnSync('python3', ['-c', script], { encoding: 'utf8', timeout: TIMEOUT_S * 1000 });
  return { ok: r.status === 0, out: (r.stdout ?? '').trim(), err: (r.stderr ?? '').trim().split('\n').slice(-2).join(' | '), seconds: (performance.now() - t0) / 1000 };
}

if (process.argv[2] === '--kernels') {
  await kernelTimings();
  process.exit(0);
}

/**
 * Child mode: times the ML kernels on device matrices of ROWS rows; prints one JSON line per kernel.
 * A GPU left idle runs at a low clock and takes about a second of steady work to reach its full
 * one (BENCHMARKS.md, fourth session), so the GPU is kept busy for WARM_S seconds first, and each
 * time is the marginal time of REPS more in one submission.
 */
async function kernelTimings() {
  const { openGpu } = await dist('engine/gpu/device.js');
  const { StagingRing, storageBuffer } = await dist('engine/gpu/buffers.js');
  const { GpuWork, uploadMatrix, freeMatrix, recordReduceBlocks } = await dist('kernels/ml-matrix.js');
  const { centreExponent, kmeansStepCpu, recordMaxAbs, recordStep, stepPairs, stepParams, stepWorkgroups } = await dist('kernels/kmeans.js');
  const { kmeansStepWgsl, stepLayout, stepRowsPerThread, STEP_CARRY_BATCH } = await dist('kernels/kmeans.wgsl.js');
  const { gramPairs, recordGram } = await dist('kernels/linreg.js');
  const { GRAM_BLOCK_ROWS } = await dist('kernels/linreg.wgsl.js');
  const { Rng } = await dist('engine/ml/random.js');
  const ctx = await openGpu({ allowSoftware: true });
  await ctx.checked; // the fma check picks the Gram's form
  const ring = new StagingRing(ctx);
  const limit = ctx.device.limits.maxStorageBufferBindingSize;
  const reps = Number(process.env.REPS ?? 20), warmS = Number(process.env.WARM_S ?? 1.5);
  const marginal = (record) => marginalMs(ctx, GpuWork, record, reps);
  const warm = async (record) => { const t0 = performance.now(); while (performance.now() - t0 < warmS * 1e3) await marginalMs(ctx, GpuWork, record, 5); };
  const uniform = (n) => { const a = new Float64Array(n); for (let i = 0; i < n; i++) a[i] = Math.random() * 20 - 10; return a; };
  const report = (kernel, rows, ms) => console.log(JSON.stringify({ kernel, rows, ms }));

  // The k-means step on one device matrix of all rows: its column maxima (found once, with the column statistics), then
  // the step (nearest centres, per-cluster counts and exact sums) as the CLI records it, with sums
  // in device memory, and other rows per thread, carry batches and feature reads (STEP_VARIANTS=
  // "rows,batch,registers;..."), each the same words. Uniform data in ±10 unless KM_DATA=blobs.
  const kmRows = Math.min(ROWS, Math.floor(limit / (D * 4)));
  // KM_DATA=blobs: 8 blobs of unit spread, their centres uniform in ±10 (make-blobs' shape), so that
  // the k centres (rows of the data) crowd in the blobs and rows lie near ties between them.
  const blobRows = (rows) => {
    const rng = new Rng(1, 'bench blobs');
    const at = Array.from({ length: 8 }, () => Array.from({ length: D }, () => rng.uniform(-10, 10)));
    const a = new Float64Array(rows * D);
    for (let r = 0; r < rows; r++) {
      const b = at[rng.nextInt(8)];
      for (let j = 0; j < D; j++) a[r * D + j] = b[j] + rng.normal();
    }
    return a;
  };
  const x = process.env.KM_DATA === 'blobs' ? blobRows(kmRows) : uniform(kmRows * D);
  const m = await uploadMatrix(ctx, ring, x, null, kmRows, D);
  const centres = new Float32Array(x.subarray(0, K * D)), centreExp = centreExponent(centres);
  const maxBits = storageBuffer(ctx, D * 4, 'column maxima');
  report('kmeans column maxima (with the column statistics, once per matrix)', kmRows, await marginal((work) => { work.encoder.clearBuffer(maxBits); recordMaxAbs(work, m, maxBits, 0); }));
  const stepOut = storageBuffer(ctx, stepPairs(K, D) * 8, 'step out');
  const step = (options) => (work) => { work.encoder.clearBuffer(stepOut); recordStep(work, m, maxBits, kmRows, work.input(centres, 'centres'), centreExp, K, stepOut, 0, options); };
  await warm(step());
  report('kmeans step (nearest centres, per-cluster counts and exact sums)', kmRows, await marginal(step()));
  report('kmeans step, sums in device memory (not the default here)', kmRows, await marginal(step({ local: false })));
  // The counts alone (what k-means|| weighs candidates with): the same pass without the sums of the
  // features and distances, so the difference is what those sums cost.
  report('kmeans step, counts only (no sums: the distances, nearest centres and counts)', kmRows, await marginal(step({ countsOnly: true })));
  // A variant of the step (its WGSL) over the whole matrix, bound as recordStep binds the default one.
  const dispatchStep = (work, label, code, centresBuffer, out, groups = stepWorkgroups(kmRows, D, true)) =>
    work.dispatch(label, code, 'step', [work.params(stepParams(m, kmRows, centreExp, 0)), m.xr, centresBuffer, maxBits, out], groups);
  // Whether a variant of the step (record(work, out)) gives the default step's words.
  const checkWords = async (name, record) => {
    const work = new GpuWork(ctx), words = stepPairs(K, D) * 2;
    const a = work.temp(words * 4, 'a'), b = work.temp(words * 4, 'b');
    recordStep(work, m, maxBits, kmRows, work.input(centres, 'centres'), centreExp, K, a, 0);
    record(work, b);
    const [wa, wb] = await work.finish([{ buf: a, floats: words }, { buf: b, floats: words }]);
    const ua = new Uint32Array(wa.buffer), ub = new Uint32Array(wb.buffer);
    console.log(JSON.stringify({ kernel: `check: step ${name}: ${ua.every((v, i) => v === ub[i]) ? 'the default step\'s words' : 'WORDS DIFFER from the default step\'s'}`, rows: kmRows, ms: 0 }));
  };
  // The centres read from a uniform buffer (vec4s, each centre padded to whole quads) in the
  // distance loop instead of the workgroup tile: the same words (checked).
  if (K * Math.ceil(D / 4) * 16 <= ctx.device.limits.maxUniformBufferBindingSize) {
    const d4 = Math.ceil(D / 4);
    const code = kmeansStepWgsl(D, K, true)
      .replace(/@binding\(2\) var<storage, read> centres: array<f32>;/, `@binding(2) var<uniform> centresU: array<vec4f, ${K * d4}>;`)
      .replace(/fn stage\(c0: u32, lane: u32\) \{[\s\S]*?\n\}\n/, 'fn stage(c0: u32, lane: u32) { workgroupBarrier(); }\n')
      .replace(/tile\[c\]\[(\d+)u\]/g, 'centresU[(c0 + c) * D4 + $1u]');
    if (!code.includes('centresU[')) throw new Error('the distance loop\'s tile reads were not found');
    const padded = new Float32Array(K * d4 * 4);
    for (let c = 0; c < K; c++) for (let j = 0; j < D; j++) padded[c * d4 * 4 + j] = centres[c * D + j];
    const uniformCentres = ctx.device.createBuffer({ size: padded.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    ctx.device.queue.writeBuffer(uniformCentres, 0, padded);
    const record = (work, out) => dispatchStep(work, 'kmeans-step-uniform-centres', code, uniformCentres, out);
    report('kmeans step, centres from a uniform buffer in the distance loop (no workgroup tile)', kmRows, await marginal((work) => { work.encoder.clearBuffer(stepOut); record(work, stepOut); }));
    await checkWords('with uniform centres', record);
    uniformCentres.destroy();
  }
  // Diagnostics with other words (not checked): the high words added without the carry out of the
  // low word's addition (no atomic then waits on another's result), and the high words left out.
  for (const [name, replace] of [['high words without carries (other words)', 'fn addHigh(i: u32, w: vec2u, old: u32) { atomicAdd(&acc[HI + i], w.y); }'], ['low words only (other words)', 'fn addHigh(i: u32, w: vec2u, old: u32) { }']]) {
    const code = kmeansStepWgsl(D, K, true).replace(/fn addHigh\(i: u32, w: vec2u, old: u32\) \{[^}]*\}\n\}/, replace);
    if (code === kmeansStepWgsl(D, K, true)) throw new Error('addHigh not found');
    report(`kmeans step, ${name}`, kmRows, await marginal((work) => { work.encoder.clearBuffer(stepOut); dispatchStep(work, `kmeans-step-diag-${name}`, code, work.input(centres, 'centres'), stepOut); }));
  }
  const variants = (process.env.STEP_VARIANTS ?? '2,8,1;4,8,0;4,4,1').split(';').filter(Boolean).map((v) => v.split(',').map(Number));
  for (const [rowsPerThread, batch, registers] of variants) {
    const record = (work, out) => {
      dispatchStep(work, `kmeans-step-${D}-${K}-r${rowsPerThread}-b${batch}-${registers}`, kmeansStepWgsl(D, K, true, { rowsPerThread, batch, fromRegisters: registers === 1 }), work.input(centres, 'centres'), out);
    };
    const name = `${rowsPerThread} rows per thread, carries ${batch} at a time, features ${registers ? 'from registers' : 'read again'}`;
    report(`kmeans step, ${name} (defaults ${stepRowsPerThread(D)}, ${STEP_CARRY_BATCH}, ${D <= 32 ? 'registers' : 'read again'})`, kmRows, await marginal((work) => { work.encoder.clearBuffer(stepOut); record(work, stepOut); }));
    await checkWords(name, record);
  }
  // Other workgroup sizes (STEP_WG, e.g. "128") with STEP_GROUPS workgroups each (e.g. "396,1056"):
  // the same words (checked). Fewer threads a workgroup let more workgroups share an SM (registers
  // allowing); fewer workgroups add their sums to device memory fewer times.
  for (const wg of (process.env.STEP_WG ?? '').split(',').filter(Boolean).map(Number)) {
    for (const groups of (process.env.STEP_GROUPS ?? String(stepWorkgroups(kmRows, D, true))).split(',').filter(Boolean).map(Number)) {
      const code = kmeansStepWgsl(D, K, true).replace('const WG: u32 = 256u;', `const WG: u32 = ${wg}u;`).replace(/@workgroup_size\(256\)/g, `@workgroup_size(${wg})`);
      if (!code.includes(`const WG: u32 = ${wg}u;`)) throw new Error('the workgroup size was not found');
      const record = (work, out) => dispatchStep(work, `kmeans-step-wg${wg}`, code, work.input(centres, 'centres'), out, groups);
      const name = `${wg} threads a workgroup, ${groups} workgroups`;
      await warm((work) => { work.encoder.clearBuffer(stepOut); record(work, stepOut); });
      report(`kmeans step, ${name}`, kmRows, await marginal((work) => { work.encoder.clearBuffer(stepOut); record(work, stepOut); }));
      await checkWords(name, record);
    }
  }
  {
    // On this device, the words of a 2^17-row slice against the CPU twin (NVIDIA's driver contracts
    // the distances into FMAs, so the distance sums' low words may differ; nothing else should).
    const n = Math.min(kmRows, 1 << 17), sub = await uploadMatrix(ctx, ring, x.subarray(0, n * D), null, n, D);
    const work = new GpuWork(ctx);
    const subMax = work.temp(D * 4, 'maxima'), out = work.temp(stepPairs(K, D) * 8, 'out');
    recordMaxAbs(work, sub, subMax, 0);
    recordStep(work, sub, subMax, n, work.input(centres, 'centres'), centreExp, K, out, 0);
    const [words, cols] = await work.finish([{ buf: out, floats: stepPairs(K, D) * 2 }, { buf: sub.xr, floats: n * D }]);
    const want = kmeansStepCpu(cols, n, D, centres, K).words, got = new Uint32Array(words.buffer);
    const layout = stepLayout(K, D), differ = (from, to) => { let c = 0; for (let i = from; i < to; i++) if (got[i] !== want[i]) c++; return c; };
    console.log(JSON.stringify({ kernel: `check: step words against the CPU twin: differing low words of features ${differ(0, K * D)}, of distances ${differ(K * D, layout.hi)}, high words ${differ(layout.hi, layout.counts)}, counts ${differ(layout.counts, layout.scales)}, scales ${differ(layout.scales, layout.words)}`, rows: n, ms: 0 }));
    freeMatrix(ctx, sub);
  }
  stepOut.destroy();
  freeMatrix(ctx, m);

  // The same rows in PARTS partitions, as a GPU worker holds them (scaled as the whole matrix): a submission per partition (mapPartitions).
  const parts = Number(process.env.PARTS ?? 8), partRows = Math.ceil(kmRows / parts);
  const held = [];
  for (let i = 0; i < parts; i++) {
    const rows = Math.min(partRows, kmRows - i * partRows);
    const pm = await uploadMatrix(ctx, ring, x.subarray(i * partRows * D, (i * partRows + rows) * D), null, rows, D);
    held.push({ m: pm });
  }
  const partitionSteps = (work, out) => {
    const c = work.input(centres, 'centres');
    held.forEach((h, i) => { recordStep(work, h.m, maxBits, kmRows, c, centreExp, K, out, i * stepPairs(K, D)); work.flush(); });
  };
  await warm(partitionSteps); // the uploads above left the GPU idle
  report(`kmeans step over ${parts} partitions, a submission per partition (mapPartitions)`, kmRows, await marginal(partitionSteps));
  // Each partition adding to an output buffer of its own (all cleared first): no dispatch then
  // writes a buffer an earlier one wrote, so none has to wait for another to finish.
  const ownOuts = held.map(() => storageBuffer(ctx, stepPairs(K, D) * 8, 'step out'));
  const ownSteps = (flush) => (work) => {
    const c = work.input(centres, 'centres');
    for (const o of ownOuts) work.encoder.clearBuffer(o);
    held.forEach((h, i) => { recordStep(work, h.m, maxBits, kmRows, c, centreExp, K, ownOuts[i], 0); if (flush) work.flush(); });
    return ownOuts[0];
  };
  await warm(ownSteps(true));
  report(`kmeans step over ${parts} partitions, each to its own output buffer, a submission per partition`, kmRows, await marginal(ownSteps(true)));
  report(`kmeans step over ${parts} partitions, each to its own output buffer, one submission`, kmRows, await marginal(ownSteps(false)));
  for (const o of ownOuts) o.destroy();
  for (const h of held) freeMatrix(ctx, h.m);
  maxBits.destroy();

  const lrRows = Math.min(ROWS_LINREG, Math.floor(limit / ((D_LINREG + 1) * 4)));
  const lr = await uploadMatrix(ctx, ring, uniform(lrRows * D_LINREG), uniform(lrRows), lrRows, D_LINREG);
  const pairs = gramPairs(D_LINREG), shift = new Array(D_LINREG + 1).fill(0.25);
  const gram = (work, out) => { recordGram(work, lr, shift, pairs, out, 0); };
  await warm(gram);
  report(`linreg Gram pass (per-block sums, then the sum over blocks; fma ${ctx.fusedFma ? 'fused' : 'not fused: Dekker\'s split'})`, lrRows, await marginal(gram));
  if (ctx.fusedFma) {
    // The same pass with Dekker's split for the products' errors (what devices without a fused fma run): the same words.
    report('linreg Gram pass, Dekker\'s split (this device\'s fma is fused: not the default here)', lrRows, await marginal((work, out) => { recordGram(work, lr, shift, pairs, out, 0, { fused: false }); }));
    const work = new GpuWork(ctx), n = pairs.length / 2;
    const outs = [true, false].map((fused) => { const out = work.temp(n * 8, 'gram'); recordGram(work, lr, shift, pairs, out, 0, { fused }); return { buf: out, floats: 2 * n }; });
    const [fused, split] = await work.finish(outs);
    console.log(JSON.stringify({ kernel: `check: Gram words with fma and with Dekker's split ${fused.every((v, i) => Object.is(v, split[i])) ? 'identical' : 'DIFFER'}`, rows: lrRows, ms: 0 }));
  }
  // The Gram pass over the same rows in PARTS partitions: as mapPartitions records it (each
  // partition's temporaries recycled for the next, results at offsets of one buffer), and with
  // temporaries and an output buffer of each partition's own (no dispatch waits for another's writes).
  {
    const x = uniform(lrRows * D_LINREG), y = uniform(lrRows), partRows = Math.ceil(lrRows / parts), n = pairs.length / 2;
    const lrHeld = [];
    for (let i = 0; i < parts; i++) {
      const rows = Math.min(partRows, lrRows - i * partRows);
      lrHeld.push(await uploadMatrix(ctx, ring, x.subarray(i * partRows * D_LINREG, (i * partRows + rows) * D_LINREG), y.subarray(i * partRows, i * partRows + rows), rows, D_LINREG));
    }
    const recycled = (work, out) => { lrHeld.forEach((pm, i) => { const mark = work.mark(); recordGram(work, pm, shift, pairs, out, i * n); work.recycle(mark); }); };
    const ownOuts = lrHeld.map(() => storageBuffer(ctx, n * 8, 'gram out'));
    const own = (work) => { for (const o of ownOuts) work.encoder.clearBuffer(o); lrHeld.forEach((pm, i) => { recordGram(work, pm, shift, pairs, ownOuts[i], 0); work.flush(); }); return ownOuts[0]; };
    await warm(recycled);
    report(`linreg Gram pass over ${parts} partitions, as mapPartitions records it`, lrRows, await marginal(recycled));
    await warm(own);
    report(`linreg Gram pass over ${parts} partitions, each with temporaries and output of its own`, lrRows, await marginal(own));
    for (const o of ownOuts) o.destroy();
    for (const pm of lrHeld) freeMatrix(ctx, pm);
  }
  const gramBlocks = Math.ceil(lrRows / GRAM_BLOCK_ROWS), partials = storageBuffer(ctx, gramBlocks * pairs.length * 4, 'gram partials');
  report(`linreg sum over ${gramBlocks} blocks of ${pairs.length / 2} entries`, lrRows, await marginal((work, out) => { recordReduceBlocks(work, partials, gramBlocks, pairs.length / 2, out, 0, 'block-major'); }));
  partials.destroy();
  freeMatrix(ctx, lr);
}

mkdirSync(DIR, { recursive: true });
const { add, print } = resultTable();
/** The roofline of a pass moving `bytes` and doing `flops` f32 operations, in seconds. */
const roofline = (bytes, flops) => Math.max(bytes / HBM_BYTES_PER_S, flops / F32_FLOPS_PER_S);
const ofRoofline = (seconds, bytes, flops) => `${(100 * roofline(bytes, flops) / seconds).toPrecision(3)}% of roofline`;

log('gpuframe devices --json --device gpu');
let gpuCount = 0;
try {
  const r = gpuframe(['devices', '--json', '--device', 'gpu'], false);
  if (r.code !== 0) throw new Error(`exit ${r.code}: ${r.stderr.slice(-300)}`);
  const d = JSON.parse(r.stdout);
  gpuCount = d.gpus.filter((g) => g.name !== null).length;
  for (const g of d.gpus) log(`  GPU ${g.index}: ${g.name} software=${g.isSoftware}`);
} catch (err) {
  log(`devices failed: ${err.message}`);
}
const configs = [
  { name: 'cpu', flags: ['--device', 'cpu', '--workers', String(availableParallelism())] },
  { name: 'gpu 0', flags: ['--device', 'gpu', '--gpus', '0', '--workers', '0'] },
  ...(gpuCount >= 2 ? [{ name: 'gpu 0,1', flags: ['--device', 'gpu', '--gpus', '0,1', '--workers', '0'] }] : []),
  { name: 'gpus + cpu workers', flags: ['--device', 'gpu'] },
].filter((c) => !process.env.CONFIGS || process.env.CONFIGS.split(',').includes(c.name.replace(/\W+/g, '_')));

/** Whether every GPU configuration wrote the same model file (the contract: whatever --gpus and --workers). */
function sameModels(kind, models) {
  const gpu = Object.keys(models).filter((name) => name !== 'cpu');
  if (gpu.length < 2) return;
  const same = gpu.every((name) => models[name].text === models[gpu[0]].text);
  add(`${kind} model files of ${gpu.join(' / ')}`, same ? 'identical bytes' : 'DIFFERENT');
}

function generate(kind, rows, d, path, extra) {
  if (existsSync(path)) { log(`reusing ${path}`); return true; }
  log(`${kind} ${rows} x ${d} -> ${path}`);
  const r = gpuframe([kind, '--n-samples', String(rows), '--n-features', String(d), '--seed', '1', ...extra, '-o', path]);
  if (r.code !== 0) { add(`${kind} ${rows} x ${d}`, `failed (exit ${r.code})`, r.stderr.slice(-300)); return false; }
  add(`${kind} ${rows} x ${d}`, `${r.seconds.toFixed(1)} s`);
  return true;
}

// ---- k-means ----
const blobs = join(DIR, `blobs-${ROWS}x${D}-c${BLOB_CENTERS}.arrow`);
if (generate('make-blobs', ROWS, D, blobs, ['--centers', String(BLOB_CENTERS), '--cluster-std', '2'])) {
  // The k-means step reads xr once (the per-cluster sums are added in the same pass). Distances: a subtract and a multiply-add (3 flops) per feature and centre, as the
  // kernel computes them. The dot form (|c|² - 2 x·c, one multiply-add: 2 flops) needs 2/3 of
  // that, a stricter bound printed beside it (kmFlopsDot); measured slower on the H200 (BENCHMARKS.md).
  // Lloyd rounds but the last run the bounded step (kmeans.wgsl.ts), which measures only rows whose
  // nearest centre may have changed: the fraction is of the full step's work, of which those rounds
  // do a part (`GPUFRAME_GPU_PHASES=1` and bench/kmeans-rounds.mjs print how many rows each measured).
  const kmBytes = ROWS * D * 4, kmFlops = 3 * ROWS * K * D, kmFlopsDot = 2 * ROWS * K * D;
  const models = {};
  for (const c of configs) {
    const model = join(DIR, `km-${c.name.replace(/\W+/g, '_')}.json`), trace = join(DIR, `km-${c.name.replace(/\W+/g, '_')}.trace.json`);
    log(`kmeans with ${c.flags.join(' ')} ...`);
    const r = measured(['kmeans', blobs, '--exclude', 'y', '--k', String(K), '--max-iter', String(ITERS), '--n-init', '1', '--tol', '0', '--seed', '1', '--json', '--model-out', model, '--trace', trace, ...BLOCKSIZE, ...c.flags]);
    if (r.code !== 0) { add(`kmeans ${c.name}`, `failed (exit ${r.code})`, r.stderr.slice(-400)); continue; }
    const summary = JSON.parse(r.stdout);
    const it = perRound(trace, 'ml kmeans.assign', ITERS + 1);
    models[c.name] = { text: readFileSync(model, 'utf8'), inertia: summary.inertia, seconds: it.seconds, medianSeconds: it.medianSeconds };
    const fraction = c.name === 'cpu' ? '' : `, ${ofRoofline(it.seconds, kmBytes, kmFlops)} (dot form: ${ofRoofline(it.seconds, kmBytes, kmFlopsDot)})`;
    add(`kmeans ${c.name}`, `${r.seconds.toFixed(2)} s total (first of ${RUNS} runs ${r.firstSeconds.toFixed(2)} s), ${(it.seconds * 1e3).toFixed(2)} ms per Lloyd iteration (median ${(it.medianSeconds * 1e3).toFixed(2)} ms)${fraction}`,
      `${summary.iterations} iterations (${it.rounds} assignment rounds, the first left out), inertia ${summary.inertia}${summary.iterations < ITERS ? ' — CONVERGED EARLY' : ''}`);
  }
  sameModels('kmeans', models);
  if (models['gpu 0'] && models['gpu 0,1']) {
    // Both ratios: one slow round moves a mean of 20 rounds, not a median.
    const [one, two] = [models['gpu 0'], models['gpu 0,1']];
    add('kmeans 2 GPUs speed-up', `${(one.seconds / two.seconds).toFixed(2)}× by the means, ${(one.medianSeconds / two.medianSeconds).toFixed(2)}× by the medians`, 'per Lloyd iteration; goal ≥ 1.8×');
  }
  if (models.cpu && models['gpu 0']) {
    const rel = Math.abs(models['gpu 0'].inertia - models.cpu.inertia) / models.cpu.inertia;
    add('kmeans inertia GPU vs CPU', rel.toExponential(2), rel <= 1e-4 ? 'within 1e-4' : 'OVER 1e-4');
  }
  add('kmeans roofline per iteration', `${(roofline(kmBytes, kmFlops) * 1e3).toFixed(2)} ms`,
    `${(kmBytes / 1e9).toFixed(2)} GB / 4.2 TB/s = ${(kmBytes / HBM_BYTES_PER_S * 1e3).toFixed(2)} ms; ${(kmFlops / 1e9).toFixed(0)} GFLOP / 67 TFLOP/s = ${(kmFlops / F32_FLOPS_PER_S * 1e3).toFixed(2)} ms`);
  add('kmeans roofline per iteration, dot form', `${(roofline(kmBytes, kmFlopsDot) * 1e3).toFixed(2)} ms`, `${(kmFlopsDot / 1e9).toFixed(0)} GFLOP (one multiply-add per feature and centre) / 67 TFLOP/s`);
}

// ---- linreg ----
const reg = join(DIR, `reg-${ROWS_LINREG}x${D_LINREG}.arrow`);
if (generate('make-regression', ROWS_LINREG, D_LINREG, reg, ['--n-informative', String(D_LINREG), '--bias', '3', '--noise', '1'])) {
  // The Gram pass reads xr and xl of every column (y too); each of its d(d+1)/2 + d entries is a
  // double-float multiply-add per row (about 40 f32 operations).
  const entries = D_LINREG * (D_LINREG + 1) / 2 + D_LINREG;
  const lrBytes = ROWS_LINREG * (D_LINREG + 1) * 8, lrFlops = 40 * ROWS_LINREG * entries;
  const models = {};
  for (const c of configs) {
    const model = join(DIR, `lr-${c.name.replace(/\W+/g, '_')}.json`), trace = join(DIR, `lr-${c.name.replace(/\W+/g, '_')}.trace.json`);
    log(`linreg with ${c.flags.join(' ')} ...`);
    const r = measured(['linreg', reg, '--target', 'y', '--json', '--model-out', model, '--trace', trace, ...BLOCKSIZE, ...c.flags]);
    if (r.code !== 0) { add(`linreg ${c.name}`, `failed (exit ${r.code})`, r.stderr.slice(-400)); continue; }
    const gramMs = traceSpanSeconds(trace, 'ml linreg.gram') * 1e3;
    models[c.name] = { text: readFileSync(model, 'utf8'), summary: JSON.parse(r.stdout), gramMs };
    const fraction = c.name === 'cpu' ? '' : `, ${ofRoofline(gramMs / 1e3, lrBytes, lrFlops)}`;
    add(`linreg ${c.name}`, `${r.seconds.toFixed(2)} s total (first of ${RUNS} runs ${r.firstSeconds.toFixed(2)} s), Gram pass ${gramMs.toFixed(2)} ms${fraction}`, `R² ${models[c.name].summary.r2}`);
  }
  sameModels('linreg', models);
  if (models['gpu 0'] && models['gpu 0,1']) {
    add('linreg 2 GPUs speed-up', `${(models['gpu 0'].gramMs / models['gpu 0,1'].gramMs).toFixed(2)}×`, 'Gram pass; goal ≥ 1.8×');
  }
  if (models.cpu && models['gpu 0']) {
    const a = models.cpu.summary.coefficients, b = models['gpu 0'].summary.coefficients;
    const norm = Math.hypot(...Object.values(a));
    const worst = Math.max(...Object.keys(a).map((k) => Math.abs(a[k] - b[k]) / norm));
    add('linreg coefficients GPU vs CPU', worst.toExponential(2), worst <= 1e-6 ? 'within 1e-6' : 'OVER 1e-6');
  }
  add('linreg Gram roofline', `${(roofline(lrBytes, lrFlops) * 1e3).toFixed(2)} ms`,
    `${(lrBytes / 1e9).toFixed(2)} GB (xr + xl) / 4.2 TB/s = ${(lrBytes / HBM_BYTES_PER_S * 1e3).toFixed(2)} ms; ${(lrFlops / 1e9).toFixed(0)} GFLOP / 67 TFLOP/s = ${(lrFlops / F32_FLOPS_PER_S * 1e3).toFixed(2)} ms`);
}

// ---- the kernels alone (KERNELS=0 skips them) ----
if (process.env.KERNELS !== '0') {
  log('kernels alone (node bench/gpu-ml.mjs --kernels) ...');
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--kernels'], { encoding: 'utf8', timeout: TIMEOUT_S * 1000, maxBuffer: 16 << 20 });
  const lines = (r.stdout ?? '').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  for (const k of lines) {
    // The whole passes (the k-means step, the Gram pass) against their rooflines; their parts as times alone.
    const [bytes, flops] = k.kernel.startsWith('kmeans') ? [k.rows * D * 4, 3 * k.rows * K * D]
        : [k.rows * (D_LINREG + 1) * 8, 40 * k.rows * (D_LINREG * (D_LINREG + 1) / 2 + D_LINREG)];
    const whole = /^kmeans step|^linreg Gram pass/.test(k.kernel);
    const dot = k.kernel.startsWith('kmeans') ? ` (dot form: ${ofRoofline(k.ms / 1e3, bytes, flops * 2 / 3)})` : '';
    add(`${k.kernel} alone, ${k.rows} rows, one partition`, `${k.ms.toFixed(2)} ms`, whole ? ofRoofline(k.ms / 1e3, bytes, flops) + dot : '');
  }
  if (r.status !== 0) add('kernels alone', `failed (exit ${r.status ?? r.signal})`, (r.stderr ?? '').split('\n').filter((l) => l && !/^Warning: maxDynamic/.test(l)).join(' ').slice(-400));
}

// ---- peers ----
const sklearn = `
import time, numpy as np
from sklearn.cluster import KMeans
rng = np.random.default_rng(1)
x = rng.standard_normal((${ROWS}, ${D}), dtype=np.float32)
init = x[rng.choice(${ROWS}, ${K}, replace=False)]
t = time.perf_counter()
km = KMeans(n_clusters=${K}, init=init, n_init=1, max_iter=${ITERS}, tol=0, algorithm='lloyd').fit(x)
print(f"{(time.perf_counter() - t) / km.n_iter_ * 1e3:.1f} ms per iteration over {km.n_iter_} iterations")`;
const torchKmeans = `
import time, torch
dev = torch.device('cuda:0')
g = torch.Generator(device=dev).manual_seed(1)
x = torch.randn(${ROWS}, ${D}, device=dev, generator=g)
c = x[torch.randperm(${ROWS}, device=dev, generator=g)[:${K}]].clone()
def step(c):
    d = (x * x).sum(1, keepdim=True) - 2 * x @ c.T + (c * c).sum(1)
    lab = d.argmin(1)
    sums = torch.zeros_like(c).index_add_(0, lab, x)
    counts = torch.bincount(lab, minlength=${K}).clamp(min=1).unsqueeze(1)
    return sums / counts
c = step(c); torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(${ITERS}): c = step(c)
torch.cuda.synchronize()
print(f"{(time.perf_counter() - t) / ${ITERS} * 1e3:.2f} ms per iteration")`;
const torchGram = `
import time, torch
dev = torch.device('cuda:0')
x = torch.randn(${ROWS_LINREG}, ${D_LINREG + 1}, device=dev)
g = x.T @ x; torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(10): g = x.T @ x
torch.cuda.synchronize()
f32 = (time.perf_counter() - t) / 10
x = x.double(); g = x.T @ x; torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(10): g = x.T @ x
torch.cuda.synchronize()
print(f"{f32 * 1e3:.2f} ms f32, {(time.perf_counter() - t) / 10 * 1e3:.2f} ms f64")`;
const peers = process.env.PEERS === '0' ? [] : [['scikit-learn KMeans (lloyd), all cores', 'sklearn', sklearn], ['PyTorch k-means iteration, GPU 0', 'torch', torchKmeans], [`PyTorch X^T X, ${ROWS_LINREG} x ${D_LINREG + 1}, GPU 0`, 'torch', torchGram]];
for (const [name, module, script] of peers) {
  const probe = python(`import ${module}${module === 'torch' ? '\nassert torch.cuda.is_available()' : ''}`);
  if (!probe.ok) { add(name, 'skipped', `python3 cannot use ${module}: ${probe.err}`); continue; }
  log(`${name} ...`);
  const r = python(script);
  add(name, r.ok ? r.out : 'failed', r.ok ? `${r.seconds.toFixed(1)} s with data generation` : r.err);
}

print();
log('done');
