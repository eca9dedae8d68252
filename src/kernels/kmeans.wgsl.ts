// WGSL of k-means on a device matrix (ml-matrix.wgsl.ts layout), generated per feature count D so
// that a row lives in registers. Distances are f32, summed over features in order; the nearest
// centre is the lowest index among equal distances (strict <), as the CPU code.
//   assign:       nearest centre and its squared distance per row (centres staged in workgroup
//                 memory as vec4s, several rows per thread)
//   sums:         per block of sumBlockRows(k) rows, entries e = j × k + c (sum of feature j over
//                 rows of cluster c), then k counts, then k inertias: partial[b × entries + e];
//                 each thread adds its clusters' rows in row order, found through bit masks
//   pp_update:    each row's nearest squared distance over centres [from, to), kept between calls
//   pp_potential: min(nearest, distance to candidate t) per row, for each candidate t

import { memoWgsl, WGSL_GRID, WGSL_MIX32 } from './wgsl-common.js';
import { WGSL_DOUBLE_FLOAT } from './ml-matrix.wgsl.js';

/** Centre values staged per workgroup (16 KiB). */
export const CENTRE_TILE = 4096;

function header(d: number): string {
  return /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
const D: u32 = ${d}u;
const MAX_F32: f32 = 3.4028234663852886e38;
struct Params { rows: u32, k: u32, first: u32, end: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
fn loadRow(r: u32) -> array<f32, D> {
  var row: array<f32, D>;
  for (var j = 0u; j < D; j++) { row[j] = x[j * p.rows + r]; }
  return row;
}
`;
}

/** Rows per thread in the assignment: each centre value read from workgroup memory serves them all. */
export function assignRowsPerThread(d: number): number {
  return d <= 16 ? 4 : d <= 64 ? 2 : 1;
}

/**
 * Nearest centre per row. Centres are staged in workgroup memory as vec4s (each centre padded
 * with zeros to a multiple of 4 features; the padding adds (0 - 0)² = +0, which changes no sum),
 * each thread keeps R rows in registers (rows base + lane + i × WG, so loads stay coalesced).
 * The rows, their sums and best centres are separate variables written out per row and feature
 * quad here, not private arrays indexed in loops: a driver that does not unroll such loops keeps
 * the arrays in local memory. The order of operations is the CPU twin's (kmeansAssignCpu).
 */
function buildKmeansAssignWgsl(d: number, rowsPerThread = assignRowsPerThread(d)): string {
  const d4 = Math.ceil(d / 4);
  const rows = Array.from({ length: rowsPerThread }, (_, i) => i);
  const quads = Array.from({ length: d4 }, (_, q) => q);
  const load = (q: number, i: number) => [0, 1, 2, 3].map((t) => (4 * q + t < d ? `x[${4 * q + t}u * p.rows + r${i}]` : '0.0')).join(', ');
  const each = (f: (i: number) => string, indent: string) => rows.map((i) => indent + f(i)).join('\n');
  return /* wgsl */ `${header(d)}
@group(0) @binding(2) var<storage, read> centres: array<f32>;
@group(0) @binding(3) var<storage, read_write> labels: array<u32>;
@group(0) @binding(4) var<storage, read_write> dist: array<f32>;
const D4: u32 = ${d4}u;
const R: u32 = ${rowsPerThread}u;
const PER_TILE: u32 = ${CENTRE_TILE}u / (D4 * 4u);
var<workgroup> tile: array<vec4f, PER_TILE * D4>;

fn stage(c0: u32, lane: u32) {
  let n = min(PER_TILE, p.k - c0) * D4;
  workgroupBarrier();
  for (var i = lane; i < n; i += WG) {
    let c = c0 + i / D4;
    let j = (i % D4) * 4u;
    var v = vec4f(0.0);
    for (var t = 0u; t < 4u; t++) { if (j + t < D) { v[t] = centres[c * D + j + t]; } }
    tile[i] = v;
  }
  workgroupBarrier();
}

@compute @workgroup_size(256)
fn assign(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let oneTile = p.k <= PER_TILE;
  if (oneTile) { stage(0u, lid.x); }
  for (var base = wid.x * WG * R; base < p.rows; base += nwg.x * WG * R) {
${each((i) => `let r${i} = base + ${i}u * WG + lid.x;`, '    ')}
${rows.map((i) => quads.map((q) => `    var x${i}_${q} = vec4f(0.0);`).join('\n')).join('\n')}
${each((i) => `if (r${i} < p.rows) { ${quads.map((q) => `x${i}_${q} = vec4f(${load(q, i)});`).join(' ')} }`, '    ')}
${each((i) => `var best${i} = 0u; var bestD${i} = MAX_F32;`, '    ')}
    for (var c0 = 0u; c0 < p.k; c0 += PER_TILE) {
      if (!oneTile) { stage(c0, lid.x); }
      let n = min(PER_TILE, p.k - c0);
      for (var c = 0u; c < n; c++) {
${each((i) => `var s${i} = 0.0;`, '        ')}
${quads.map((q) => `        {
          let cv = tile[c * D4 + ${q}u];
${each((i) => `let t${i} = x${i}_${q} - cv; s${i} = s${i} + t${i}.x * t${i}.x; s${i} = s${i} + t${i}.y * t${i}.y; s${i} = s${i} + t${i}.z * t${i}.z; s${i} = s${i} + t${i}.w * t${i}.w;`, '          ')}
        }`).join('\n')}
${each((i) => `if (s${i} < bestD${i}) { bestD${i} = s${i}; best${i} = c0 + c; }`, '        ')}
      }
    }
${each((i) => `if (r${i} < p.rows) { labels[r${i}] = best${i}; dist[r${i}] = bestD${i}; }`, '    ')}
  }
}
`;
}
export const kmeansAssignWgsl = memoWgsl(buildKmeansAssignWgsl);

/**
 * Rows of one block of the per-cluster sums: a function of k alone, so the sums do not depend on
 * the device; at least 16 rows per cluster, so the per-block partials (k × d + 2k double-floats)
 * stay near a sixteenth of the block's feature values.
 */
export function sumBlockRows(k: number): number {
  return Math.max(1024, 2 ** Math.ceil(Math.log2(16 * k)));
}
/** Workgroup memory the sums kernel may use: WebGPU's default limit (16 KiB). */
const SUM_WORKGROUP_BYTES = 16384;
/** Clusters the sums kernel takes (more run on the CPU): beyond it, passes over each block multiply. */
export const MAX_SUM_CLUSTERS = 1024;
/** Accumulators (clusters) one thread of the sums kernel keeps. */
const MAX_CLUSTERS_PER_THREAD = 16;

/** A sums kernel's layout: see sumsShape. */
export interface SumsShape { lanes: number; groups: number; perThread: number; valueRanges: number; clusterRanges: number; passes: number }

/**
 * How the sums kernel shares out a block's entries. A cluster has d + 2 values (its d feature
 * sums, its count, its summed distance); a group of `lanes` threads (d + 2, at most 256) takes one
 * value range of its perThread clusters: thread t has value v0 + t mod lanes, group g = t div lanes,
 * clusters c = c0 + g + groups × i, i < perThread. Lanes past the last value idle. A pass is one
 * (value range, cluster range) pair; passes = valueRanges × clusterRanges.
 */
export function sumsShape(k: number, d: number): SumsShape {
  const lanes = Math.min(256, d + 2);
  const groups = Math.floor(256 / lanes);
  const perThread = Math.min(MAX_CLUSTERS_PER_THREAD, Math.ceil(k / groups));
  const valueRanges = Math.ceil((d + 2) / lanes), clusterRanges = Math.ceil(k / (groups * perThread));
  return { lanes, groups, perThread, valueRanges, clusterRanges, passes: valueRanges * clusterRanges };
}

/** Workgroups of a sums dispatch over `rows` rows: one per block and pass. */
export function sumsWorkgroups(rows: number, k: number, d: number): number {
  return Math.ceil(rows / sumBlockRows(k)) * sumsShape(k, d).passes;
}

/** Workgroup memory of the sums kernel with sub-tiles of t rows: features (stride t + 1), labels, distances, k bit masks. */
function sumsWorkgroupBytes(d: number, k: number, t: number): number {
  return 4 * ((t + 1) * d + 2 * t + k * Math.ceil(t / 32));
}

/** Rows per sub-tile: 64 (the fastest on the H200 for 32 features, 64 clusters), fewer where the workgroup memory would not hold them. */
function sumTileRows(d: number, k: number): number {
  let t = 64;
  while (t > 1 && sumsWorkgroupBytes(d, k, t) > SUM_WORKGROUP_BYTES) t = Math.floor(t / 2);
  return t;
}

/**
 * Per-cluster counts, feature sums and distance sums per block of sumBlockRows(k) rows. The block
 * is walked in sub-tiles of T rows, T a constant of the module (t, by default sumTileRows(d, k);
 * other values for tests): features, labels and distances staged in workgroup memory, the staging
 * indexed by i / T and i % T (shifts for a power of two), the last, partial sub-tile guarded by a
 * bounds check. In each sub-tile, the rows of every cluster are marked in a bit mask per cluster
 * (atomicOr, which no order changes), and a thread visits its clusters' rows lowest bit first,
 * adding each to that cluster's accumulator: its feature, 1.0 (the count lane) or the row's
 * distance (sumsShape: groups of d + 2 lanes). So each entry is summed over its cluster's rows in
 * row order, in double-float, one thread per entry: the same bits on any device or run. The threads
 * of a warp mostly share their clusters, so their additions do not diverge. The next sub-tile is
 * loaded into registers while this one is summed. (10^7 × 32, k = 64 on an H200: 2.28–2.30 ms;
 * without the prefetch 2.65–2.78 ms; with the sub-tile rows a runtime value, 2.85 ms; warp-aligned
 * groups with counts from atomics 4.12 ms, one mask per group of clusters 3.28–3.78 ms, the distance
 * on lane 0 2.86–3.05 ms; every thread reading every label, 3.84 ms; lists linked by atomicMin,
 * 4.07 ms; 128- to 256-row sub-tiles 4.9–9.4 ms.)
 * Entries: e = j × k + c (sum of feature j over cluster c), then k × d + c (count of cluster c),
 * then k × d + k + c (Σ distance over cluster c); partial[b × entries + e] (block-major).
 * Dispatch sumsWorkgroups(rows, k, d) workgroups.
 */
function buildKmeansSumsWgsl(d: number, k: number, t = sumTileRows(d, k)): string {
  const { lanes, groups, perThread, clusterRanges, passes } = sumsShape(k, d);
  // The accumulators are separate variables, not an array indexed in a loop (kept in local memory by drivers that do not unroll).
  const slots = Array.from({ length: perThread }, (_, i) => i);
  if (t > 256) throw new Error(`sums sub-tiles take at most 256 rows (one label per thread), not ${t}`);
  const pre = Array.from({ length: Math.ceil((t * d) / 256) }, (_, q) => q);
  return /* wgsl */ `${header(d)}
@group(0) @binding(2) var<storage, read> labels: array<u32>;
@group(0) @binding(3) var<storage, read> dist: array<f32>;
@group(0) @binding(4) var<storage, read_write> partials: array<vec2f>;
const K: u32 = ${k}u;
const T: u32 = ${t}u;
const V: u32 = ${lanes}u;
const GROUPS: u32 = ${groups}u;
const E: u32 = ${perThread}u;
const CLUSTER_RANGES: u32 = ${clusterRanges}u;
const PASSES: u32 = ${passes}u;
const SUM_ROWS: u32 = ${sumBlockRows(k)}u;
/** Row stride of a feature in the tile: T + 1, so the threads of a row's values read different banks. */
const TS: u32 = T + 1u;
var<workgroup> tile: array<f32, TS * D>;
var<workgroup> lab: array<u32, T>;
var<workgroup> rowDist: array<f32, T>;
/** Bit r % 32 of word r / 32 of cluster c's MW words: row r of the sub-tile is in c. */
const MW: u32 = (T + 31u) / 32u;
var<workgroup> masks: array<atomic<u32>, K * MW>;

/** Loads sub-tile s0's values this thread stages (those of rows past r1 stay as they were: never read). */
fn prefetch(s0: u32, r1: u32, lane: u32, ${pre.map((q) => `v${q}: ptr<function, f32>`).join(', ')}, lab0: ptr<function, u32>, dist0: ptr<function, f32>) {
${pre.map((q) => `  { let i = lane + ${q}u * WG; let r = i % T; if (i < T * D && s0 + r < r1) { *v${q} = x[(i / T) * p.rows + s0 + r]; } }`).join('\n')}
  if (lane < T && s0 + lane < r1) { *lab0 = labels[s0 + lane]; *dist0 = dist[s0 + lane]; }
}

@compute @workgroup_size(256)
fn sums(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let blocks = (p.rows + SUM_ROWS - 1u) / SUM_ROWS;
  let entries = K * D + 2u * K;
  let g = lid.x / V;
  for (var w = wid.x; w < blocks * PASSES; w += nwg.x) {
    let b = w % blocks;
    let pw = w / blocks; // the pass
    let v = (pw / CLUSTER_RANGES) * V + lid.x % V; // this thread's value: feature v, count (D) or distance (D + 1)
    let c0 = (pw % CLUSTER_RANGES) * GROUPS * E;
    let live = g < GROUPS && v < D + 2u;
    let r0 = b * SUM_ROWS;
    let r1 = min(p.rows, r0 + SUM_ROWS);
${slots.map((i) => `    var acc${i} = vec2f(0.0);`).join('\n')}
    // The next sub-tile's values are loaded into registers (pre*) before this one is summed, so
    // their memory latency passes while the workgroup adds (a thread stages ceil(T × D / 256)
    // values and at most one label and distance).
${pre.map((q) => `    var pre${q} = 0.0;`).join('\n')}
    var preLab = 0u; var preDist = 0.0;
    prefetch(r0, r1, lid.x, ${pre.map((q) => `&pre${q}`).join(', ')}, &preLab, &preDist);
    for (var s0 = r0; s0 < r1; s0 += T) {
      let n = min(T, r1 - s0);
      workgroupBarrier(); // the previous sub-tile is no longer read
${pre.map((q) => `      { let i = lid.x + ${q}u * WG; if (i < T * D) { tile[(i / T) * TS + i % T] = pre${q}; } }`).join('\n')}
      if (lid.x < n) { lab[lid.x] = preLab; rowDist[lid.x] = preDist; }
      for (var i = lid.x; i < K * MW; i += WG) { atomicStore(&masks[i], 0u); }
      workgroupBarrier();
      if (s0 + T < r1) { prefetch(s0 + T, r1, lid.x, ${pre.map((q) => `&pre${q}`).join(', ')}, &preLab, &preDist); }
      for (var r = lid.x; r < n; r += WG) { atomicOr(&masks[lab[r] * MW + r / 32u], 1u << (r % 32u)); }
      workgroupBarrier();
      if (live) {
${slots.map((i) => `        {
          let c = c0 + g + GROUPS * ${i}u;
          for (var mw = 0u; mw < select(0u, MW, c < K); mw++) {
            var bits = atomicLoad(&masks[c * MW + mw]);
            while (bits != 0u) {
              let r = mw * 32u + firstTrailingBit(bits);
              bits &= bits - 1u;
              var value = 1.0;
              if (v < D) { value = tile[v * TS + r]; } else if (v == D + 1u) { value = rowDist[r]; }
              acc${i} = dfAddF(acc${i}, value);
            }
          }
        }`).join('\n')}
      }
    }
    if (live) {
${slots.map((i) => `      {
        let c = c0 + g + GROUPS * ${i}u;
        if (c < K) { partials[b * entries + select(select(K * D + K + c, K * D + c, v == D), v * K + c, v < D)] = acc${i}; }
      }`).join('\n')}
    }
  }
}
`;
}
export const kmeansSumsWgsl = memoWgsl(buildKmeansSumsWgsl);

function buildKmeansPpUpdateWgsl(d: number): string {
  return /* wgsl */ `${header(d)}
@group(0) @binding(2) var<storage, read> centres: array<f32>;
@group(0) @binding(3) var<storage, read_write> minD2: array<f32>;

@compute @workgroup_size(256)
fn pp_update(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  for (var r = gid.x; r < p.rows; r += gridStride(nwg)) {
    let row = loadRow(r);
    var m = select(minD2[r], MAX_F32, p.first == 0u);
    for (var c = p.first; c < p.end; c++) {
      var s = 0.0;
      for (var j = 0u; j < D; j++) { let t = row[j] - centres[c * D + j]; s = s + t * t; }
      if (s < m) { m = s; }
    }
    minD2[r] = m;
  }
}
`;
}
export const kmeansPpUpdateWgsl = memoWgsl(buildKmeansPpUpdateWgsl);

function buildKmeansPpPotentialWgsl(d: number): string {
  return /* wgsl */ `${header(d)}
@group(0) @binding(2) var<storage, read> candidates: array<f32>;
@group(0) @binding(3) var<storage, read> minD2: array<f32>;
@group(0) @binding(4) var<storage, read_write> potential: array<f32>;

/** p.k is the number of candidates here; potential[t × rows + r]. */
@compute @workgroup_size(256)
fn pp_potential(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  for (var r = gid.x; r < p.rows; r += gridStride(nwg)) {
    let row = loadRow(r);
    let m = minD2[r];
    for (var t = 0u; t < p.k; t++) {
      var s = 0.0;
      for (var j = 0u; j < D; j++) { let u = row[j] - candidates[t * D + j]; s = s + u * u; }
      potential[t * p.rows + r] = min(m, s);
    }
  }
}
`;
}
export const kmeansPpPotentialWgsl = memoWgsl(buildKmeansPpPotentialWgsl);

/**
 * The row with the smallest rowUniform(key, row) hash (random.ts) among rows firstRow + r, r < rows:
 * each row's hash as its top 27 and next 26 bits (a >> 5, b >> 6), which order rows as the float64
 * score does; ties go to the lower row. Each workgroup writes its best as (a >> 5, b >> 6, row lo,
 * row hi) to best[workgroup]; the host takes the best of those (kmeans.ts smallestHashRow).
 */
export const KMEANS_SMALLEST_HASH_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_MIX32}
struct Params { rows: u32, key: u32, firstLo: u32, firstHi: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> best: array<vec4u>;
var<workgroup> lanes: array<vec4u, 256>;

/** Whether (score, row) s comes before t: score words, then row hi, then row lo. */
fn before(s: vec4u, t: vec4u) -> bool {
  if (s.x != t.x) { return s.x < t.x; }
  if (s.y != t.y) { return s.y < t.y; }
  if (s.w != t.w) { return s.w < t.w; }
  return s.z < t.z;
}

@compute @workgroup_size(256)
fn smallest_hash(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  var mine = vec4u(0xffffffffu); // after every row: a real score word is below 2^27
  for (var r = wid.x * WG + lid.x; r < p.rows; r += nwg.x * WG) {
    let lo = p.firstLo + r;
    let hi = p.firstHi + select(0u, 1u, lo < r); // the carry of firstRow + r
    let a = mix32(p.key ^ mix32(lo + 0x632be5abu));
    let b = mix32(a + (hi ^ p.key) * 0x9e3779b1u + lo);
    let s = vec4u(a >> 5u, b >> 6u, lo, hi);
    if (before(s, mine)) { mine = s; }
  }
  lanes[lid.x] = mine;
  workgroupBarrier();
  for (var half = 128u; half > 0u; half >>= 1u) {
    if (lid.x < half && before(lanes[lid.x + half], lanes[lid.x])) { lanes[lid.x] = lanes[lid.x + half]; }
    workgroupBarrier();
  }
  if (lid.x == 0u) { best[wid.x] = lanes[0]; }
}
`;
