// Prototype: the linreg Gram matrix (Xᵀ X over C columns) from the GPU's integer matrix units
// through WebGPU subgroup matrices (Dawn's chromium-experimental-subgroup-matrix, behind its
// allow_unsafe_apis toggle). Each value is scaled by a power of two per column, rounded to an
// integer below 2^30 and split into four signed base-256 digits (i8 "limbs"); the limb matrix's
// Gram, i8 × i8 → i32 on the matrix units, is exact, and the host combines its limb products into
// each column pair's exact integer sum (BigInt). Checked word for word against the same integers
// summed on the CPU, and against the float64 Gram of the unrounded values; timed per pass (marginal
// time of REPS more passes in one submission, after 1.5 s of warming). Not yet the engine's: the
// engine does not ask Dawn for unsafe APIs, and its Gram is of float64 values (xr + xl), which four
// limbs of an f32 do not hold (BENCHMARKS.md, seventeenth session).
//   node bench/gpu-tensor.mjs            (env: ROWS=1e7 COLS=17 REPS=20; PREFETCH=1 loads the next
//   chunk while this one's products run; WG (threads a workgroup), ROWS_PER_THREAD, GROUPS; MODE=quantise or products for the
//   halves alone (other sums); DAWN_FEATURES=… more Dawn toggles; PRINT_WGSL=1 prints the kernel)

import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
const ROWS = Number(process.env.ROWS ?? 1e7), C = Number(process.env.COLS ?? 17), REPS = Number(process.env.REPS ?? 20);
const LIMBS = 4, NP = Math.ceil((C * LIMBS) / 16) * 16, NB = NP / 16, WG = Number(process.env.WG ?? 256), CHUNK = WG * Number(process.env.ROWS_PER_THREAD ?? 1);
const blocks = [];
for (let i = 0; i < NB; i++) for (let j = i; j < NB; j++) blocks.push([i, j]);
const SUBGROUPS = WG / 32;

const PREFETCH = process.env.PREFETCH === '1'; // each thread loads its next chunk's values while this chunk's products run (one row a thread)
if (PREFETCH && CHUNK !== WG) throw new Error('PREFETCH=1 takes one row a thread (ROWS_PER_THREAD=1)');
const MODE = process.env.MODE ?? 'full'; // diagnostics (other sums): 'quantise' (products for the first chunk only), 'products' (limbs made for the first chunk only)
if (process.env.PRINT_WGSL) { console.log(gramWgsl('chromium_experimental.subgroup_matrix_uniformity')); process.exit(0); }
const gpu = create([`enable-dawn-features=allow_unsafe_apis${process.env.DAWN_FEATURES ? ',' + process.env.DAWN_FEATURES : ''}`]);
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
const configs = (adapter.info.subgroupMatrixConfigs ?? []).map((c) => `${c.componentType}->${c.resultComponentType} ${c.M}x${c.N}x${c.K}`);
console.log(JSON.stringify({ adapter: adapter.info.description, configs }));
if (!configs.includes('i8->i32 16x16x32')) { console.log('no i8 16x16x32 subgroup matrices here'); process.exit(0); }
const device = await adapter.requestDevice({
  requiredFeatures: ['chromium-experimental-subgroup-matrix', 'subgroups'],
  requiredLimits: { maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize, maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize, maxBufferSize: adapter.limits.maxBufferSize },
});
const errors = [];
device.onuncapturederror = (e) => errors.push(e.error.message);

/**
 * The Gram kernel. A workgroup takes CHUNK rows at a time: its threads turn them into limbs in
 * workgroup memory (each thread's values loaded together), then subgroup s multiplies the limbs of
 * rows 32 s … 32 s + 31 (and every SUBGROUPS × 32 further on) for all upper blocks of the limb Gram:
 * each block row's left matrix and block column's right matrix loaded once for all its products,
 * every block its own accumulator (independent chains). Each subgroup stores its blocks to its own
 * partials, summed on the host. The i8 loads' offsets and strides count bytes
 * (checked: offsets in u32 elements give other sums).
 */
function gramWgsl(rule = UNIFORMITY_RULE) {
  const cols = Array.from({ length: C }, (_, j) => j);
  const perThread = CHUNK / WG;
  return /* wgsl */ `
enable chromium_experimental_subgroup_matrix;
diagnostic(off, ${rule});
const NP: u32 = ${NP}u;
const NPW: u32 = ${NP / 4}u;
const CHUNK: u32 = ${CHUNK}u;
struct Params { rows: u32, _a: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> scales: array<f32>;
@group(0) @binding(3) var<storage, read_write> partials: array<i32>;
/** A chunk of rows as limbs: row r's limb-column c (column c / 4, digit c % 4) is byte r × NP + c. */
var<workgroup> q: array<i32, ${CHUNK * (NP / 4)}>;

/** round(v × s) (below 2^30 in magnitude) as four signed base-256 digits, one byte each, lowest first. */
fn limbs(v: f32, s: f32) -> i32 {
  let t = i32(round(v * s));
  let d0 = (t << 24u) >> 24u;
  let t1 = (t - d0) >> 8u;
  let d1 = (t1 << 24u) >> 24u;
  let t2 = (t1 - d1) >> 8u;
  let d2 = (t2 << 24u) >> 24u;
  let d3 = (t2 - d2) >> 8u;
  return bitcast<i32>((u32(d0) & 0xffu) | ((u32(d1) & 0xffu) << 8u) | ((u32(d2) & 0xffu) << 16u) | (u32(d3) << 24u));
}

@compute @workgroup_size(${WG})
fn gram(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(subgroup_id) sid: u32) {
${blocks.map((_, b) => `  var acc${b} = subgroup_matrix_result<i32, 16, 16>();`).join('\n')}
  let chunks = (p.rows + CHUNK - 1u) / CHUNK;
${PREFETCH ? cols.map((j) => `  var v${j} = x[${j}u * p.rows + min(wid.x * CHUNK + lid, p.rows - 1u)];`).join('\n') : ''}
  for (var ch = wid.x; ch < chunks; ch += nwg.x) {
    workgroupBarrier();
${PREFETCH ? `    {
      let row = lid;
      let ok = ch * CHUNK + row < p.rows;
${cols.map((j) => `      q[row * NPW + ${j}u] = select(0, limbs(v${j}, scales[${j}u]), ok);`).join('\n')}
${Array.from({ length: NP / 4 - C }, (_, z) => `      q[row * NPW + ${C + z}u] = 0;`).join('\n')}
      // The next chunk's values, loaded while this chunk's products run.
      let next = min((ch + nwg.x) * CHUNK + lid, p.rows - 1u);
${cols.map((j) => `      v${j} = x[${j}u * p.rows + next];`).join('\n')}
    }` : `${MODE === 'products' ? '    if (ch == wid.x) {' : '    {'}
${Array.from({ length: perThread }, (_, t) => `      {
        let row = ${t * WG}u + lid;
        let r = ch * CHUNK + row;
        let ok = r < p.rows;
        let rr = select(0u, r, ok);
${cols.map((j) => `        let v${j} = x[${j}u * p.rows + rr];`).join('\n')}
${cols.map((j) => `        q[row * NPW + ${j}u] = select(0, limbs(v${j}, scales[${j}u]), ok);`).join('\n')}
${Array.from({ length: NP / 4 - C }, (_, z) => `        q[row * NPW + ${C + z}u] = 0;`).join('\n')}
      }`).join('\n')}
    }`}
    workgroupBarrier();
    for (var k0 = sid * 32u; k0 < ${MODE === 'quantise' ? 'select(0u, CHUNK, ch == wid.x)' : 'CHUNK'}; k0 += ${WG}u) {
${Array.from({ length: NB }, (_, i) => `      let l${i} = subgroupMatrixLoad<subgroup_matrix_left<i8, 32, 16>>(&q, k0 * NP + ${i * 16}u, true, NP);`).join('\n')}
${Array.from({ length: NB }, (_, j) => `      let r${j} = subgroupMatrixLoad<subgroup_matrix_right<i8, 16, 32>>(&q, k0 * NP + ${j * 16}u, false, NP);`).join('\n')}
${blocks.map(([i, j], b) => `      acc${b} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${b});`).join('\n')}
    }
  }
  let base = (wid.x * ${SUBGROUPS}u + sid) * NP * NP;
${blocks.map(([i, j], b) => `  subgroupMatrixStore(&partials, base + ${i * 16 * NP + j * 16}u, acc${b}, false, NP);`).join('\n')}
}
`;
}

const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
const buffer = (bytes, data) => {
  const b = device.createBuffer({ size: Math.ceil(Math.max(bytes, 16) / 16) * 16, usage });
  if (data) device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
  return b;
};
async function read(b, bytes) {
  const r = device.createBuffer({ size: Math.ceil(bytes / 4) * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const e = device.createCommandEncoder();
  e.copyBufferToBuffer(b, 0, r, 0, r.size);
  device.queue.submit([e.finish()]);
  await r.mapAsync(GPUMapMode.READ);
  const out = r.getMappedRange().slice(0);
  r.unmap();
  r.destroy();
  return out;
}

/** Column-major f32 data: column j normal with mean j − 8 and spread 1 + j / 4 (y, the last, a noisy sum of the rest). */
function makeData(rows) {
  const x = new Float32Array(rows * C);
  let s = 1;
  const rand = () => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return (s + 0.5) / 4294967296; };
  const normal = () => Math.sqrt(-2 * Math.log(rand())) * Math.cos(2 * Math.PI * rand());
  for (let r = 0; r < rows; r++) {
    let y = 0;
    for (let j = 0; j < C - 1; j++) { const v = (j - 8) + (1 + j / 4) * normal(); x[j * rows + r] = v; y += v * (j % 3 - 1); }
    x[(C - 1) * rows + r] = y + 0.1 * normal();
  }
  return x;
}

/** Per column the scale 2^F with max|x| × 2^F < 2^30 (round() then stays below 2^30). */
function scalesOf(x, rows) {
  return Float32Array.from({ length: C }, (_, j) => {
    let m = 0;
    for (let r = 0; r < rows; r++) m = Math.max(m, Math.abs(x[j * rows + r]));
    return 2 ** (29 - Math.ceil(Math.log2(m || 1)));
  });
}

/** WGSL's round(): to the nearest integer, ties to even. */
const roundEven = (v) => { const f = Math.floor(v), d = v - f; return d > 0.5 || (d === 0.5 && f % 2 !== 0) ? f + 1 : f; };

/** The exact integer Gram Σ_r t_i t_j (BigInt, upper triangle) of t = round(x × scale), on the CPU. */
function integerGramCpu(x, rows, scales) {
  const t = Array.from({ length: C }, (_, j) => Float64Array.from({ length: rows }, (_, r) => roundEven(x[j * rows + r] * scales[j])));
  const out = [];
  for (let i = 0; i < C; i++) for (let j = i; j < C; j++) {
    // Split each 30-bit integer into 15-bit halves, so that every product and sum stays exact in float64.
    let hh = 0, hl = 0, ll = 0;
    for (let r = 0; r < rows; r++) {
      const a = t[i][r], b = t[j][r];
      const ah = Math.floor(a / 32768), al = a - ah * 32768, bh = Math.floor(b / 32768), bl = b - bh * 32768;
      hh += ah * bh; hl += ah * bl + al * bh; ll += al * bl;
    }
    out.push((BigInt(hh) << 30n) + (BigInt(hl) << 15n) + BigInt(ll));
  }
  return out;
}

/** The Gram's integer entries (upper triangle, BigInt) from the kernel's partials: limb products weighted by 2^(8(u + v)). */
function integerGramOf(partials, groups) {
  const at = (pa, pb) => { let s = 0; for (let g = 0; g < groups * SUBGROUPS; g++) s += partials[g * NP * NP + pa * NP + pb]; return s; };
  const out = [];
  for (let i = 0; i < C; i++) for (let j = i; j < C; j++) {
    let s = 0n;
    for (let u = 0; u < LIMBS; u++) for (let v = 0; v < LIMBS; v++) {
      const pa = i * LIMBS + u, pb = j * LIMBS + v;
      s += BigInt(pa <= pb || Math.floor(pa / 16) === Math.floor(pb / 16) ? at(pa, pb) : at(pb, pa)) << BigInt(8 * (u + v));
    }
    out.push(s);
  }
  return out;
}

async function pipelineOf(code) {
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  for (const m of info.messages) if (m.type === 'error') console.log(`compile ${m.type} ${m.lineNum}: ${m.message}`);
  return device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'gram' } });
}

/** Runs `n` dispatches of `pipeline` (bound to `buffers`, `groups` workgroups each) in one submission, after `before(encoder)`, and waits for them. */
function dispatcher(pipeline, buffers, groups, before = () => {}) {
  const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: buffers.map((b, i) => ({ binding: i, resource: { buffer: b } })) });
  return async (n) => {
    const e = device.createCommandEncoder();
    before(e);
    for (let i = 0; i < n; i++) { const pass = e.beginComputePass(); pass.setPipeline(pipeline); pass.setBindGroup(0, bind); pass.dispatchWorkgroups(groups); pass.end(); }
    device.queue.submit([e.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
}

/**
 * Milliseconds a dispatch of `run` (a dispatcher) takes: the marginal time of `reps` more in one
 * submission of `base + reps` against one of `base`, after 1.5 s of the same work (a GPU left idle
 * runs at a low clock until about a second of steady work; BENCHMARKS.md, fourth session).
 */
async function marginalMs(run, base, reps) {
  for (const w0 = performance.now(); performance.now() - w0 < 1500;) await run(base);
  const t0 = performance.now(); await run(base); const t1 = performance.now(); await run(base + reps); const t2 = performance.now();
  return ((t2 - t1) - (t1 - t0)) / reps;
}

/** A Gram pass over `rows` rows: `run` (a dispatcher, clearing the partials first) and `integerGram`, the entries its last run left. */
function gramPass(pipeline, xBuf, rows, scalesBuf) {
  const groups = Number(process.env.GROUPS ?? Math.max(264, Math.ceil(rows / (SUBGROUPS * 65536))));
  const partials = buffer(groups * SUBGROUPS * NP * NP * 4);
  const paramsU = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(paramsU, 0, new Uint32Array([rows, 0, 0, 0]));
  const run = dispatcher(pipeline, [paramsU, xBuf, scalesBuf, partials], groups, (e) => e.clearBuffer(partials));
  const integerGram = async () => integerGramOf(new Int32Array(await read(partials, groups * SUBGROUPS * NP * NP * 4)), groups);
  return { groups, partials, run, integerGram };
}

// The name of the uniformity diagnostic this Dawn knows (the kernel's loads are uniform per subgroup, not per workgroup).
let UNIFORMITY_RULE = null;
for (const rule of ['chromium_experimental.subgroup_matrix_uniformity', 'chromium.subgroup_matrix_uniformity', 'subgroup_matrix_uniformity']) {
  const info = await device.createShaderModule({ code: gramWgsl(rule) }).getCompilationInfo();
  const bad = info.messages.filter((m) => m.type === 'error');
  if (info.messages.length) console.log('first message:', info.messages[0].message.slice(0, 400));
  console.log(JSON.stringify({ rule, errors: bad.map((m) => m.message.slice(0, 1500)).slice(0, 1), warnings: info.messages.filter((m) => m.type === 'warning').length }));
  if (!bad.length) { UNIFORMITY_RULE = rule; break; }
}
if (!UNIFORMITY_RULE) process.exit(1);

/** The matrix units' rate alone: every subgroup multiplies one left and one right held in registers into 8 accumulators, ITER times. */
async function peakTops() {
  const ITER = 2048, ACC = 8, groups = 132 * 8;
  const code = /* wgsl */ `
enable chromium_experimental_subgroup_matrix;
@group(0) @binding(0) var<storage, read_write> data: array<i32>;
@compute @workgroup_size(${WG})
fn gram(@builtin(workgroup_id) wid: vec3u, @builtin(subgroup_id) sid: u32) {
  let l = subgroupMatrixLoad<subgroup_matrix_left<i8, 32, 16>>(&data, 0u, false, 32u);
  let r = subgroupMatrixLoad<subgroup_matrix_right<i8, 16, 32>>(&data, 0u, false, 16u);
${Array.from({ length: ACC }, (_, a) => `  var c${a} = subgroup_matrix_result<i32, 16, 16>();`).join('\n')}
  for (var i = 0u; i < ${ITER}u; i++) {
${Array.from({ length: ACC }, (_, a) => `    c${a} = subgroupMatrixMultiplyAccumulate(l, r, c${a});`).join('\n')}
  }
  if (wid.x == 0u && sid == 0u) {
${Array.from({ length: ACC }, (_, a) => `    subgroupMatrixStore(&data, 0u, c${a}, false, 16u);`).join('\n')}
  }
}
`;
  const data = buffer(4096);
  const ms = await marginalMs(dispatcher(await pipelineOf(code), [data], groups), 2, 10);
  const ops = 2 * 16 * 16 * 32 * ITER * ACC * SUBGROUPS * groups;
  data.destroy();
  return ops / (ms / 1e3) / 1e12;
}
if (MODE === 'full') console.log(JSON.stringify({ kernel: 'i8 16x16x32 products from registers (the matrix units\' rate)', tops: Number((await peakTops()).toFixed(0)) }));

// Exactness on a small matrix: the kernel's integer Gram against the CPU's.
{
  const small = 40000, xs = makeData(small), ss = scalesOf(xs, small);
  const want = integerGramCpu(xs, small, ss);
  const xb = buffer(xs.byteLength, xs), sb = buffer(ss.byteLength, ss);
  const pass = gramPass(await pipelineOf(gramWgsl()), xb, small, sb);
  await pass.run(1);
  const got = await pass.integerGram();
  const same = got.every((g, i) => g === want[i]);
  console.log(JSON.stringify({ check: `integer Gram of ${small} rows against the CPU's`, same, firstDiffering: same ? null : got.findIndex((g, i) => g !== want[i]) }));
  xb.destroy(); sb.destroy(); pass.partials.destroy();
  if (errors.length) console.log('device errors:', errors.slice(0, 3));
  if (!same && MODE === 'full') process.exit(1);
}

// The full matrix: time per pass, and the Gram against the float64 Gram of the unrounded values.
const x = makeData(ROWS), scales = scalesOf(x, ROWS);
const pipeline = await pipelineOf(gramWgsl());
const xb = buffer(x.byteLength, x), sb = buffer(scales.byteLength, scales);
const pass = gramPass(pipeline, xb, ROWS, sb);
const ms = await marginalMs(pass.run, 5, REPS);
const bytes = ROWS * C * 4;
console.log(JSON.stringify({ kernel: `gram on integer matrix units (${MODE}${PREFETCH ? ', prefetch' : ''}, ${WG} threads a workgroup, ${CHUNK / WG} rows a thread; ${process.env.DAWN_FEATURES ?? ''}), ${ROWS} x ${C}, ${LIMBS} limbs, ${pass.groups} workgroups`, ms: Number(ms.toFixed(4)), ofHbm: `${(100 * bytes / 4.2e12 / (ms / 1e3)).toFixed(1)}% of 4.2 TB/s` }));
if (MODE !== 'full') process.exit(0);
await pass.run(1);
const got = await pass.integerGram();
let worst = 0, e = 0;
for (let i = 0; i < C; i++) for (let j = i; j < C; j++, e++) {
  let ref = 0;
  for (let r = 0; r < ROWS; r++) ref += x[i * ROWS + r] * x[j * ROWS + r];
  const value = Number(got[e]) / (scales[i] * scales[j]);
  worst = Math.max(worst, Math.abs(value - ref) / Math.abs(ref));
}
console.log(JSON.stringify({ check: 'Gram from the integer limbs against the float64 Gram of the unrounded values', worstRelative: worst }));
if (errors.length) console.log('device errors:', errors.slice(0, 3));
process.exit(0);
