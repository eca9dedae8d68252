#!/usr/bin/env node
// GPU kernel throughput against a measured HBM roofline (issue 3). Run after `npm run build`:
//   ROWS=50000000 CSV_BYTES=1e9 node bench/gpu-kernels.mjs
// Knobs: ROWS (group-by rows and join probe rows, default 4e6), GROUPS (300; bash drops a
// `GROUPS=…` prefix, its own variable: write `env GROUPS=5000 node …`), CSV_BYTES (1e8),
// BUILD_ROWS (join build rows, default ROWS/10), REPEAT (timed repetitions per kernel, 5),
// TIMING=wall (wall clock instead of timestamps, for comparison), PARTS (the sections to run, of
// groupby,csv,join,scan; all by default), CSV_PAD (a fifth CSV field of that many bytes, which
// split_rows walks past: records of ~30 + CSV_PAD bytes), SPLIT_BREAKDOWN=1 (split_rows again
// with less to do: the float as text, numbers as text, the key only, no key, no columns).
//
// 1. Roofline: a grid-stride vec4<f32> copy over min(1 GiB, binding limit), read + write, timed
//    by timestamp queries; the best of a few grid sizes is "the measured HBM rate". The device's
//    copyBufferToBuffer is timed too, for comparison.
// 2. Inputs are uploaded once through a StagingRing (upload rate reported apart), then each hot
//    kernel is dispatched on device-resident buffers, built here from the kernels' exported WGSL
//    and the binding layouts in their .wgsl.ts headers, and timed by timestamp queries (mean of
//    REPEAT passes, after an untimed warm-up). Without timestamp-query: wall clock over many
//    repetitions in one submit (src/engine/gpu/timing.ts).
// 3. Bytes per kernel: the arrays it must stream at least, each read once and written once at its
//    full width (a 2-word column counts 8 bytes a row even where a pass reads one word). Small
//    hash tables and accumulators, uniforms, and random lookups into a join's table are not
//    counted, so a table-bound kernel's fraction is an upper bound on its share of HBM time.
//
// Inputs are generated before the GPU device is opened, in per-chunk functions (dawn.node crash:
// notes/webgpu.md).
import { performance } from 'node:perf_hooks';

const ROWS = Number(process.env.ROWS ?? 4_000_000);
const GROUPS = Number(process.env.GROUPS ?? 300);
const CSV_BYTES = Number(process.env.CSV_BYTES ?? 1e8);
const BUILD_ROWS = Number(process.env.BUILD_ROWS ?? Math.max(1, Math.floor(ROWS / 10)));
const REPEAT = Math.max(1, Number(process.env.REPEAT ?? 5));
const PARTS = new Set((process.env.PARTS ?? 'groupby,csv,join,scan').split(','));
const CSV_PAD = Math.max(0, Number(process.env.CSV_PAD ?? 0));
const SPLIT_BREAKDOWN = process.env.SPLIT_BREAKDOWN === '1';
const CHUNK = 4096;

// ---- inputs, before the device -------------------------------------------------------------

const mix = (i) => Math.imul(i, 2654435761) >>> 0;

function groupChunk(keys, ints, floats, from, to) {
  for (let i = from; i < to; i++) {
    keys[2 * i] = mix(i) % GROUPS; keys[2 * i + 1] = 0;
    ints[2 * i] = (i * 7) >>> 0; ints[2 * i + 1] = 0;
    floats[i] = (i % 1000) * 0.25 - 100;
  }
}

// Build keys 0..BUILD_ROWS-1; probe keys fall in [0, 2 * BUILD_ROWS): about half find theirs.
function probeChunk(probe, from, to) {
  for (let i = from; i < to; i++) { probe[2 * i] = mix(i) % (2 * BUILD_ROWS); probe[2 * i + 1] = 0; }
}
function buildChunk(build, from, to) {
  for (let i = from; i < to; i++) { build[2 * i] = i; build[2 * i + 1] = 0; }
}

// CSV lines `id,float,int,key[,pad]`; returns the bytes written at `at`, or 0 when the chunk does not fit.
const CSV_WIDTH = CSV_PAD > 0 ? 5 : 4;
const encoder = new TextEncoder();
const padField = CSV_PAD > 0 ? `,${'p'.repeat(CSV_PAD)}` : '';
function csvChunk(out, at, from) {
  let text = '';
  for (let i = from; i < from + CHUNK; i++) text += `${i},${(i % 977) * 1.5 - 300},${i * 3},K${i % GROUPS}${padField}\n`;
  if (at + text.length > out.length) return 0;
  return encoder.encodeInto(text, out.subarray(at)).written;
}

const generating = performance.now();
const groupKeys = new Uint32Array(ROWS * 2), intWords = new Uint32Array(ROWS * 2), floats = new Float64Array(ROWS);
const probeKeys = new Uint32Array(ROWS * 2), buildKeys = new Uint32Array(BUILD_ROWS * 2);
for (let at = 0; at < ROWS; at += CHUNK) {
  groupChunk(groupKeys, intWords, floats, at, Math.min(ROWS, at + CHUNK));
  probeChunk(probeKeys, at, Math.min(ROWS, at + CHUNK));
}
for (let at = 0; at < BUILD_ROWS; at += CHUNK) buildChunk(buildKeys, at, Math.min(BUILD_ROWS, at + CHUNK));
const csvBuffer = new Uint8Array(CSV_BYTES);
let csvLength = 0, csvLines = 0;
for (;;) {
  const wrote = csvChunk(csvBuffer, csvLength, csvLines);
  if (wrote === 0) break;
  csvLength += wrote; csvLines += CHUNK;
}
const csvBytes = csvBuffer.subarray(0, csvLength);
const generatedMs = performance.now() - generating;

// ---- device --------------------------------------------------------------------------------

const { describeAdapter, openGpu } = await import('../dist/engine/gpu/device.js');
// Queue operations go through submit / writeBuffer / submittedWorkDone: the library records
// commands made without an encoder (clears of recycled buffers, single dispatches) for the next one.
const { StagingRing, storageBuffer, freeBuffer, uniformWords, kernelFor, readU32, workgroupsFor, submit, writeBuffer, submittedWorkDone } = await import('../dist/engine/gpu/buffers.js');
const { KernelTimer, timestampsUnavailable, wallClockNs } = await import('../dist/engine/gpu/timing.js');
const { exclusiveScan, scanVariant } = await import('../dist/kernels/prefix-scan.js');
const { PREFIX_SCAN_SUBGROUPS_WGSL, PREFIX_SCAN_WGSL } = await import('../dist/kernels/prefix-scan.wgsl.js');
const G = await import('../dist/kernels/groupby-aggregate.wgsl.js');
const J = await import('../dist/kernels/hash-join.wgsl.js');
const { CSV_BOUNDARIES_WGSL } = await import('../dist/kernels/csv-scan.wgsl.js');
const { CSV_ROWS_WGSL } = await import('../dist/kernels/csv-rows.wgsl.js');
// The reciprocal table of split_rows's decimal conversion (from the eleventh session's build on).
const decimalTable = (await import('../dist/kernels/csv-float.wgsl.js')).decimalTableWords?.() ?? [];
const { KEY_VERIFY_WGSL } = await import('../dist/kernels/key-hash.wgsl.js');

/**
 * A GpuContext (src/engine/gpu/device.ts) whose timestamps are exact: Dawn rounds them to 65.5 µs
 * unless its instance is created with this toggle (timing.ts), and openGpu creates its instance
 * without flags. Same features and limits as openGpu; switch to it once it passes the flag.
 */
const ctx = await openGpu({ allowSoftware: true }); // timestamps unquantised (device.ts)
await ctx?.checked;
if (!ctx) { console.error('no WebGPU adapter'); process.exit(1); }
const device = ctx.device;
const d = describeAdapter(ctx);
console.log(`adapter: ${d.name} (${d.vendor}, ${d.isSoftware ? 'software' : 'hardware'}), timestamp-query=${ctx.hasTimestamps}, maxStorageBufferBindingSize=${device.limits.maxStorageBufferBindingSize}`);
console.log(`subgroups: ${ctx.subgroupLayout.detail}; exclusiveScan uses the ${scanVariant(ctx)} scan_blocks (GPUFRAME_GPU_SUBGROUPS=0: plain)`);
console.log(`rows=${ROWS} groups=${GROUPS} build rows=${BUILD_ROWS} csv=${(csvLength / 1e6).toFixed(1)} MB (${csvLines} lines) repeat=${REPEAT}; inputs generated in ${(generatedMs / 1000).toFixed(1)} s`);
const noTimestamps = process.env.TIMING === 'wall' ? 'TIMING=wall: timing by wall clock' : timestampsUnavailable(ctx);
if (noTimestamps) console.log(`note: ${noTimestamps}`);
const timer = noTimestamps ? null : new KernelTimer(ctx, 2 * REPEAT + 8);

const results = []; // { name, ns, bytes } | { name, error }
let rooflineGBs = NaN;

const fmtLine = (name, ns, bytes) => {
  const gbs = bytes / ns;
  const frac = Number.isFinite(rooflineGBs) ? `${(100 * gbs / rooflineGBs).toFixed(1).padStart(6)}%` : '';
  return `${name.padEnd(30)} ${(ns / 1e6).toFixed(3).padStart(10)} ms ${(bytes / 1e6).toFixed(1).padStart(10)} MB ${gbs.toFixed(1).padStart(9)} GB/s ${frac}`;
};

/**
 * Times `record(encoder, timestampWrites)`, one pass per call, REPEAT times after a warm-up;
 * `prepare(encoder)` runs untimed before each (resetting state the kernel accumulates into).
 * Reports mean ns per pass; a kernel whose dispatch raised GPU errors is reported as failed.
 * By wall clock (no timestamps, or TIMING=wall) `prepare` is inside the time, and so is latency.
 */
async function timeKernel(name, bytes, record, prepare = () => {}) {
  const errorsBefore = ctx.errors.length;
  let ns;
  if (timer) {
    const warm = device.createCommandEncoder();
    prepare(warm); record(warm, undefined);
    submit(ctx, warm.finish());
    const enc = device.createCommandEncoder();
    for (let r = 0; r < REPEAT; r++) { prepare(enc); record(enc, timer.writes(name)); }
    submit(ctx, enc.finish());
    const t = (await timer.read()).get(name);
    ns = t.ns / t.passes;
    if (timer.quantized) console.log('warning: timestamps are rounded to 65.5 µs (Dawn timestamp_quantization is on)');
  } else {
    ns = await wallClockNs(ctx, (enc) => { prepare(enc); record(enc, undefined); }, Math.max(20, REPEAT));
  }
  await submittedWorkDone(ctx);
  if (ctx.lostReason || ctx.errors.length > errorsBefore) {
    const error = ctx.lostReason ?? ctx.errors[errorsBefore];
    results.push({ name, error });
    console.log(`${name.padEnd(30)} FAILED: ${error.split('\n')[0]}`);
    return;
  }
  results.push({ name, ns, bytes });
  console.log(fmtLine(name, ns, bytes));
}

/**
 * Builds the group-by key table (groupby-aggregate.wgsl.ts insert_keys) over n rows' key words,
 * timing insert_keys under `name`. firstRow is not reset between repetitions: atomicMin does
 * the same work on any old value. Returns the table's buffers; the caller frees them.
 */
async function timeInsertKeys(name, keys, mask, hasNulls, n, capacity) {
  const slots = capacity + 1;
  const t = {
    owner: storageBuffer(ctx, slots * 4, 'owners'), counts: storageBuffer(ctx, slots * 8, 'counts'),
    firstRow: storageBuffer(ctx, slots * 4, 'first rows'), rowSlot: storageBuffer(ctx, n * 4, 'row slots'),
    overflow: storageBuffer(ctx, 4, 'overflow'),
  };
  const params = uniformWords(ctx, [n, capacity, hasNulls ? 1 : 0]);
  await timeKernel(name, 12 * n + (hasNulls ? n / 8 : 0), (enc, tw) => kernelFor(ctx, 'groupby-insert', G.GROUPBY_INSERT_WGSL)
    .dispatch('insert_keys', [keys, mask, t.owner, t.counts, t.firstRow, t.rowSlot, t.overflow, params], workgroupsFor(n), enc, tw), clear(t.owner, t.counts));
  params.destroy();
  const [overflowed] = await readU32(ctx, t.overflow, 1);
  if (overflowed) console.log(`warning: ${name}: the key table overflowed`);
  return t;
}

const clear = (...bufs) => (enc) => { for (const b of bufs) enc.clearBuffer(b); };
const pow2AtLeast = (n) => { let c = 16; while (c < n) c *= 2; return c; };

// ---- roofline ------------------------------------------------------------------------------

const STREAM_COPY_WGSL = /* wgsl */ `
struct Params { n: u32, _a: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn stream_copy(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.n; i += nwg.x * 256u) { dst[i] = src[i]; }
}
`;

async function roofline() {
  const bytes = Math.floor(Math.min(1 << 30, device.limits.maxStorageBufferBindingSize) / 16) * 16;
  const src = storageBuffer(ctx, bytes, 'roofline src'), dst = storageBuffer(ctx, bytes, 'roofline dst');
  const params = uniformWords(ctx, [bytes / 16]);
  const kernel = kernelFor(ctx, 'bench-stream-copy', STREAM_COPY_WGSL);
  console.log(`\nroofline: vec4<f32> copy of ${(bytes / 2 ** 20).toFixed(0)} MiB (read + write = ${(2 * bytes / 1e6).toFixed(0)} MB per pass)`);
  const first = results.length;
  for (const wg of [1024, 4096, 16384, 65535]) {
    await timeKernel(`stream_copy ${wg} workgroups`, 2 * bytes, (enc, tw) => kernel.dispatch('stream_copy', [src, dst, params], wg, enc, tw));
  }
  const rates = results.slice(first).filter((r) => r.ns).map((r) => r.bytes / r.ns);
  rooflineGBs = Math.max(...rates);
  // copyBufferToBuffer between two empty timestamp passes (a span), or by wall clock.
  const copy = (enc) => enc.copyBufferToBuffer(src, 0, dst, 0, bytes);
  let copyNs;
  if (timer) {
    const enc = device.createCommandEncoder();
    copy(enc);
    for (let r = 0; r < REPEAT; r++) { timer.spanStart('copyBufferToBuffer', enc); copy(enc); timer.spanEnd('copyBufferToBuffer', enc); }
    submit(ctx, enc.finish());
    const t = (await timer.read()).get('copyBufferToBuffer');
    copyNs = t.ns / t.passes;
  } else {
    copyNs = await wallClockNs(ctx, copy, Math.max(20, REPEAT));
  }
  results.push({ name: 'copyBufferToBuffer', ns: copyNs, bytes: 2 * bytes });
  console.log(fmtLine('copyBufferToBuffer', copyNs, 2 * bytes));
  console.log(`roofline (best stream_copy): ${rooflineGBs.toFixed(1)} GB/s`);
  freeBuffer(ctx, src); freeBuffer(ctx, dst); params.destroy();
}

// ---- uploads -------------------------------------------------------------------------------

const ring = new StagingRing(ctx, 32 << 20, 4);
const uploads = { bytes: 0, ms: 0 };
async function upload(data, label) {
  const buf = storageBuffer(ctx, data.byteLength, label);
  const t0 = performance.now();
  await ring.upload(data, buf);
  await submittedWorkDone(ctx);
  uploads.ms += performance.now() - t0;
  uploads.bytes += data.byteLength;
  return buf;
}

// ---- group-by (groupby-aggregate.wgsl.ts) --------------------------------------------------

async function groupby() {
  const n = ROWS;
  const capacity = Math.min(pow2AtLeast(2 * n), pow2AtLeast(2 * GROUPS));
  const slots = capacity + 1;
  console.log(`\ngroup-by: ${n} rows, ${GROUPS} groups, ${capacity} slots`);
  const keys = await upload(groupKeys, 'keys');
  const ints = await upload(intWords, 'int64 values');
  const flts = await upload(new Uint32Array(floats.buffer), 'float64 values');
  const noNulls = storageBuffer(ctx, 16, 'validity (no nulls)');
  const { rowSlot, ...table } = await timeInsertKeys('insert_keys', keys, noNulls, false, n, capacity);

  const column = async (values, isFloat) => {
    const params = uniformWords(ctx, [n, 0, isFloat ? 1 : 0]);
    const sum = storageBuffer(ctx, slots * (isFloat ? 14 : 8) * 4, 'sums');
    const minMax = storageBuffer(ctx, slots * 16, 'min/max');
    writeBuffer(ctx, minMax, 0, new Uint32Array(slots * 4).map((_, i) => (i % 4 < 2 ? 0 : 0xffffffff)));
    const run = (k, entry, acc) => (enc, tw) => kernelFor(ctx, k, isFloat ? G.GROUPBY_FLOAT_SUM_WGSL : G.GROUPBY_INT_SUM_WGSL)
      .dispatch(entry, [rowSlot, values, noNulls, acc, params], workgroupsFor(n), enc, tw);
    if (isFloat) {
      await timeKernel('float_exponents', 12 * n, run('groupby-float-sum', 'float_exponents', sum), clear(sum));
      // float_sum needs this pass's maximum exponents: run untimed before each repetition.
      const exps = run('groupby-float-sum', 'float_exponents', sum);
      await timeKernel('float_sum', 12 * n, run('groupby-float-sum', 'float_sum', sum), (enc) => { enc.clearBuffer(sum); exps(enc); });
    } else {
      await timeKernel('sum_int', 12 * n, run('groupby-int-sum', 'sum_int', sum), clear(sum));
    }
    const mm = (entry) => (enc, tw) => kernelFor(ctx, 'groupby-min-max', G.GROUPBY_MIN_MAX_WGSL)
      .dispatch(entry, [rowSlot, values, noNulls, minMax, params], workgroupsFor(n), enc, tw);
    const kind = isFloat ? 'float64' : 'int64';
    await timeKernel(`minmax_hi (${kind})`, 12 * n, mm('minmax_hi'));
    await timeKernel(`minmax_lo (${kind})`, 12 * n, mm('minmax_lo'));
    for (const b of [sum, minMax]) freeBuffer(ctx, b);
    params.destroy();
  };
  await column(ints, false);
  await column(flts, true);
  for (const b of [keys, ints, flts, noNulls, rowSlot, ...Object.values(table)]) freeBuffer(ctx, b);
}

// ---- CSV (csv-scan.wgsl.ts boundaries, csv-rows.wgsl.ts split_rows) ------------------------

// Columns split_rows extracts: the text key (hashed), the float and the int; kinds 0 int64, 1 float64, 2 text.
const SPLIT_COLUMNS = [{ index: 3, kind: 2 }, { index: 1, kind: 1 }, { index: 2, kind: 0 }];

/** csv-rows.wgsl.ts Params: `columns` (the first one the key, when `keyed`), null text '' (empty fields), ',' delimiter. */
function splitParams(records, columns = SPLIT_COLUMNS, keyed = true) {
  const cols = new Array(16 * 4).fill(0);
  columns.forEach((c, j) => { cols[4 * j] = c.index; cols[4 * j + 1] = c.kind; });
  const nullLen = new Array(8).fill(0), nullText = new Array(8 * 4).fill(0);
  const keyCols = [keyed ? 0 : 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff];
  const flags = 44 << 8; // hashed (not exact int) key, no dropna, delimiter ','
  const validStride = Math.ceil(Math.max(1, records) / 32) * 8; // as csv-rows.ts: whole groups of 32 rows
  return [records, columns.length, CSV_WIDTH, keyed ? 1 : 0, 0xffffffff, 1, validStride, flags, ...keyCols, ...cols, ...nullLen, ...nullText, ...decimalTable];
}

async function csv() {
  const nbytes = csvLength, nwords = Math.ceil(nbytes / 4);
  console.log(`\nCSV: ${(nbytes / 1e6).toFixed(1)} MB, ${csvLines} records`);
  const data = await upload(csvBytes, 'csv bytes');
  const quotes = storageBuffer(ctx, (nwords + 1) * 4, 'quote counts'), recs = storageBuffer(ctx, (nwords + 1) * 4, 'record counts');
  const params = uniformWords(ctx, [nbytes, nwords]);
  const boundaries = kernelFor(ctx, 'csv-boundaries', CSV_BOUNDARIES_WGSL);
  const wg = workgroupsFor(nwords, 4); // as findRecords: a quad of words a thread
  await timeKernel('quote_counts', nbytes + 4 * nwords, (enc, tw) => boundaries.dispatch('quote_counts', [data, quotes, null, null, params], wg, enc, tw));
  exclusiveScan(ctx, quotes, nwords);
  await timeKernel('count_records', nbytes + 8 * nwords, (enc, tw) => boundaries.dispatch('count_records', [data, quotes, recs, null, params], wg, enc, tw));
  writeBuffer(ctx, recs, nwords * 4, new Uint32Array(1));
  exclusiveScan(ctx, recs, nwords + 1);
  const [records] = await readU32(ctx, recs, 1, nwords);
  if (records !== csvLines) console.log(`warning: ${records} records found, ${csvLines} written`);
  const recEnd = storageBuffer(ctx, Math.max(1, records) * 4, 'record ends');
  await timeKernel('list_records', nbytes + 8 * nwords + 4 * records, (enc, tw) => boundaries.dispatch('list_records', [data, quotes, recs, recEnd, params], wg, enc, tw));
  for (const b of [quotes, recs]) freeBuffer(ctx, b);

  const r = Math.max(1, records), ncols = SPLIT_COLUMNS.length;
  const out = {
    values: storageBuffer(ctx, r * ncols * 8, 'values'),
    validBytes: storageBuffer(ctx, Math.ceil(r / 32) * 32 * ncols, 'validity bytes'),
    keyWords: storageBuffer(ctx, r * 8, 'key words'),
    keyMask: storageBuffer(ctx, Math.ceil(r / 32) * 4, 'key validity'),
    keySpans: storageBuffer(ctx, r * 8, 'key spans'),
    counters: storageBuffer(ctx, 17 * 4, 'counters'),
  };
  const split = uniformWords(ctx, splitParams(records));
  const splitBytes = nbytes + 4 * r + r * ncols * 9 + 16 * r + r / 8;
  await timeKernel(`split_rows (3 of ${CSV_WIDTH} columns)`, splitBytes, (enc, tw) => kernelFor(ctx, 'csv-rows', CSV_ROWS_WGSL)
    .dispatch('split_rows', [data, recEnd, out.values, out.validBytes, out.keyWords, out.keyMask, out.keySpans, out.counters, split], workgroupsFor(records), enc, tw));
  const [problems] = await readU32(ctx, out.counters, 1);
  if (problems) console.log(`warning: split_rows reported problem bits ${problems}`);
  if (SPLIT_BREAKDOWN) {
    // The same kernel asked for less: where a record's time goes (bytes as counted above).
    const asText = SPLIT_COLUMNS.map((c) => ({ ...c, kind: 2 }));
    const floatAsText = SPLIT_COLUMNS.map((c) => ({ ...c, kind: c.kind === 1 ? 2 : c.kind }));
    const less = [['the float as text', floatAsText, true], ['numbers as text', asText, true], ['the key only', SPLIT_COLUMNS.slice(0, 1), true],
      ['no key, numbers as text', asText, false], ['no columns', [], false]];
    for (const [what, columns, keyed] of less) {
      const u = uniformWords(ctx, splitParams(records, columns, keyed));
      await timeKernel(`split_rows, ${what}`, splitBytes, (enc, tw) => kernelFor(ctx, 'csv-rows', CSV_ROWS_WGSL)
        .dispatch('split_rows', [data, recEnd, out.values, out.validBytes, out.keyWords, out.keyMask, out.keySpans, out.counters, u], workgroupsFor(records), enc, tw));
      u.destroy();
    }
  }

  // The GPU CSV group-by's next steps: the key table over the hashed keys, then the byte-exact
  // check of each row's key text against its slot owner's (key-hash.wgsl.ts).
  const capacity = pow2AtLeast(2 * Math.max(1024, 2 * GROUPS));
  const table = await timeInsertKeys('insert_keys (csv hashed keys)', out.keyWords, out.keyMask, true, records, capacity);
  const mismatch = storageBuffer(ctx, 4, 'key mismatch');
  const verifyParams = uniformWords(ctx, [records, 1]);
  // Bytes: spans, validity and row slots; the key texts themselves (a few bytes a row) are not counted.
  await timeKernel('verify_keys', 12 * r + r / 8, (enc, tw) => kernelFor(ctx, 'key-verify', KEY_VERIFY_WGSL)
    .dispatch('verify_keys', [data, out.keySpans, out.keyMask, table.owner, table.rowSlot, mismatch, verifyParams], workgroupsFor(records), enc, tw));
  const [mismatched] = await readU32(ctx, mismatch, 1);
  if (mismatched) console.log('warning: verify_keys found a key hash collision');
  for (const b of [data, recEnd, mismatch, ...Object.values(out), ...Object.values(table)]) freeBuffer(ctx, b);
  for (const u of [params, split, verifyParams]) u.destroy();
}

// ---- hash join (hash-join.wgsl.ts; the build inserts with the group-by's insert_keys) -------

async function join() {
  const nr = BUILD_ROWS, nl = ROWS;
  const capacity = pow2AtLeast(2 * nr);
  console.log(`\nhash join: probe ${nl} rows against build ${nr} rows (${capacity} slots)`);
  const right = await upload(buildKeys, 'build keys');
  const left = await upload(probeKeys, 'probe keys');
  const noNulls = storageBuffer(ctx, 16, 'validity (no nulls)');
  const { owner, counts, rowSlot, ...table } = await timeInsertKeys('build insert_keys', right, noNulls, false, nr, capacity);
  const buildParams = uniformWords(ctx, [nr, capacity, 0]);
  const segStart = storageBuffer(ctx, (capacity + 2) * 4, 'segments');
  kernelFor(ctx, 'join-segment-sizes', J.JOIN_SEGMENT_SIZES_WGSL).dispatch('segment_sizes', [counts, segStart, buildParams], workgroupsFor(capacity + 2));
  exclusiveScan(ctx, segStart, capacity + 2);
  const cursor = storageBuffer(ctx, capacity * 4, 'cursors');
  const unordered = storageBuffer(ctx, nr * 4, 'rows unordered'), sorted = storageBuffer(ctx, nr * 4, 'rows by key');
  await timeKernel('build place_rows', 8 * nr, (enc, tw) => kernelFor(ctx, 'join-place', J.JOIN_PLACE_WGSL)
    .dispatch('place_rows', [rowSlot, segStart, cursor, unordered, buildParams], workgroupsFor(nr), enc, tw), clear(cursor));
  await timeKernel('build rank_rows', 12 * nr, (enc, tw) => kernelFor(ctx, 'join-rank', J.JOIN_RANK_WGSL)
    .dispatch('rank_rows', [rowSlot, segStart, unordered, sorted, buildParams], workgroupsFor(nr), enc, tw));

  const probeParams = uniformWords(ctx, [nl, capacity, 0]);
  const matchSlot = storageBuffer(ctx, nl * 4, 'match slots'), outStart = storageBuffer(ctx, (nl + 1) * 4, 'output offsets');
  await timeKernel('probe_rows', 16 * nl, (enc, tw) => kernelFor(ctx, 'join-probe', J.JOIN_PROBE_WGSL)
    .dispatch('probe_rows', [left, noNulls, right, owner, segStart, matchSlot, outStart, probeParams], workgroupsFor(nl), enc, tw));
  writeBuffer(ctx, outStart, nl * 4, new Uint32Array(1));
  exclusiveScan(ctx, outStart, nl + 1);
  const [total] = await readU32(ctx, outStart, 1, nl);
  const outLeft = storageBuffer(ctx, Math.max(1, total) * 4, 'left rows'), outRight = storageBuffer(ctx, Math.max(1, total) * 4, 'right rows');
  await timeKernel(`emit_pairs (${total} pairs)`, 8 * nl + 12 * total, (enc, tw) => kernelFor(ctx, 'join-emit', J.JOIN_EMIT_WGSL)
    .dispatch('emit_pairs', [matchSlot, outStart, segStart, sorted, outLeft, outRight, probeParams], workgroupsFor(nl), enc, tw));
  for (const b of [right, left, noNulls, owner, counts, rowSlot, ...Object.values(table), segStart, cursor, unordered, sorted, matchSlot, outStart, outLeft, outRight]) freeBuffer(ctx, b);
  buildParams.destroy(); probeParams.destroy();
}

// ---- prefix scan (prefix-scan.wgsl.ts): the two full-size passes of one level ---------------

async function scan() {
  const n = ROWS, blocks = Math.ceil(n / 1024);
  console.log(`\nprefix scan: ${n} words`);
  const data = storageBuffer(ctx, n * 4, 'scan data'), sums = storageBuffer(ctx, blocks * 4, 'block sums');
  const params = uniformWords(ctx, [n]);
  const kernel = kernelFor(ctx, 'prefix-scan', PREFIX_SCAN_WGSL);
  await timeKernel('scan_blocks', 8 * n, (enc, tw) => kernel.dispatch('scan_blocks', [data, sums, params], Math.min(blocks, 8192), enc, tw));
  // The subgroup variant (same bindings and output), where the device's subgroups allow it.
  if (ctx.subgroupLayout.usable) {
    const sub = kernelFor(ctx, 'prefix-scan-subgroups', PREFIX_SCAN_SUBGROUPS_WGSL);
    await timeKernel(`scan_blocks (subgroups of ${ctx.subgroupLayout.size})`, 8 * n, (enc, tw) => sub.dispatch('scan_blocks', [data, sums, params], Math.min(blocks, 8192), enc, tw));
  }
  exclusiveScan(ctx, sums, blocks);
  await timeKernel('add_block_offsets', 8 * n, (enc, tw) => kernel.dispatch('add_block_offsets', [data, sums, params], workgroupsFor(n, 4), enc, tw));
  freeBuffer(ctx, data); freeBuffer(ctx, sums); params.destroy();
}

// ---- run -----------------------------------------------------------------------------------

const started = performance.now();
await roofline();
if (PARTS.has('groupby')) await groupby();
if (PARTS.has('csv')) await csv();
if (PARTS.has('join')) await join();
if (PARTS.has('scan')) await scan();
ring.destroy();
timer?.destroy();

console.log(`\nupload through StagingRing (4 × 32 MiB): ${(uploads.bytes / 1e6).toFixed(0)} MB in ${uploads.ms.toFixed(0)} ms = ${(uploads.bytes / uploads.ms / 1e6).toFixed(2)} GB/s`);
console.log(`GPU part took ${((performance.now() - started) / 1000).toFixed(1)} s; timing by ${timer ? 'timestamp queries (mean of ' + REPEAT + ' passes)' : 'wall clock'}`);
console.log(`\n| kernel | time (ms) | bytes (MB) | GB/s | % of roofline (${rooflineGBs.toFixed(0)} GB/s) |`);
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const r of results) {
  if (r.error) { console.log(`| ${r.name} | failed: ${r.error.split('\n')[0]} | | | |`); continue; }
  const gbs = r.bytes / r.ns;
  console.log(`| ${r.name} | ${(r.ns / 1e6).toFixed(3)} | ${(r.bytes / 1e6).toFixed(1)} | ${gbs.toFixed(1)} | ${(100 * gbs / rooflineGBs).toFixed(1)}% |`);
}
process.exit(results.some((r) => r.error) ? 1 : 0);
