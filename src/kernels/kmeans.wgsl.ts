// WGSL of k-means on a device matrix (ml-matrix.wgsl.ts layout), generated per feature count D so
// that a row lives in registers. Distances are f32, summed over features in order; the nearest
// centre is the lowest index among equal distances (strict <), as the CPU code.
//   assign:       nearest centre and its squared distance per row (centres staged in workgroup
//                 memory as vec4s, several rows per thread)
//   sums:         per block of sumBlockRows(k) rows, entries e = j × k + c (sum of feature j over
//                 rows of cluster c), then k counts, then k inertias: partial[b × entries + e];
//                 each thread adds its clusters' rows in row order, found through bit masks (variants:
//                 SumsVariant)
//   pp_update:    each row's nearest squared distance over centres [from, to), kept between calls
//   pp_potential: min(nearest, distance to candidate t) per row, for each candidate t

import { memoWgsl, WGSL_GRID } from './wgsl-common.js';
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

/**
 * Variants of the sums kernel, all giving the same bits (each entry summed over its cluster's
 * rows in row order, in double-float); they differ in how the threads find those rows. Each makes
 * one more change than the one before it, so timing them side by side shows what each is worth.
 *   masks:      a bit mask per cluster and sub-tile, walked by every thread of the cluster; groups
 *               of d + 2 lanes (the count adds 1.0 per row), so a warp holds lanes of two groups;
 *               the staging divides by the sub-tile's row count, a runtime value. The default.
 *   constTile:  masks, staged by the constant T (i / T, i % T: shifts for a power of two), the
 *               last, partial sub-tile guarded by a bounds check.
 *   warpLanes:  constTile, with groups of whole warps (lanes padded to a multiple of 32), so a
 *               warp's loops walk one set of masks and do not diverge; no count lane (a block's
 *               count is an integer below 2^24, so adding 1.0 per row in double-float from
 *               (+0, +0) gives exactly (count, +0): counted by atomicAdd in workgroup memory);
 *               the distances staged as a tile column after the features, so a lane reads its
 *               value without a branch; masks double-buffered (the next sub-tile's are cleared
 *               while this one's are set): two barriers per sub-tile instead of three.
 *   groupMasks: warpLanes, with one mask per group of clusters instead of one per cluster: a
 *               group walks its rows once per sub-tile, in row order, adding each to the
 *               accumulator of the row's cluster (a switch on the label, the same for the warp).
 *   distLane0:  groupMasks, where the features fill whole warps (d a multiple of 32, as the
 *               benchmark's 32), with lane 0 adding the distance besides its feature, instead of
 *               a warp more per group for the distance alone (31 of its 32 lanes idle). Other d:
 *               groupMasks.
 */
export type SumsVariant = 'masks' | 'constTile' | 'warpLanes' | 'groupMasks' | 'distLane0';
export const SUMS_VARIANTS: readonly SumsVariant[] = ['masks', 'constTile', 'warpLanes', 'groupMasks', 'distLane0'];
export const DEFAULT_SUMS_VARIANT: SumsVariant = 'masks';

/** A sums kernel's layout: see sumsShape. */
export interface SumsShape { lanes: number; distOnLane0: boolean; groups: number; perThread: number; valueRanges: number; clusterRanges: number; passes: number }

/**
 * How the sums kernel shares out a block's entries. A group of `lanes` threads takes one value
 * range of its perThread clusters: thread t has value v0 + t mod lanes, group g = t div lanes.
 * The values a lane each: masks, constTile: the d feature sums, the count and the summed distance
 * (lanes = d + 2); warpLanes, groupMasks: the features and the distance, padded to whole warps;
 * distLane0: the same, but where the features fill whole warps, the distance is lane 0's second
 * value (distOnLane0). Lanes past the last value idle. Clusters: masks, constTile: c = c0 + g +
 * groups × i; the others: c = c0 + g × perThread + i; i < perThread. A pass is one (value range,
 * cluster range) pair.
 */
export function sumsShape(k: number, d: number, variant: SumsVariant = DEFAULT_SUMS_VARIANT): SumsShape {
  const laneEach = variant === 'masks' || variant === 'constTile';
  const values = laneEach ? d + 2 : d + 1;
  const lanes = Math.min(256, laneEach ? values : 32 * Math.ceil((variant === 'distLane0' ? d : values) / 32));
  const distOnLane0 = variant === 'distLane0' && d % lanes === 0;
  const groups = Math.floor(256 / lanes);
  // distOnLane0: lane 0 keeps two accumulators per cluster, so half the clusters (as many registers as the others).
  const perThread = Math.min(MAX_CLUSTERS_PER_THREAD / (distOnLane0 ? 2 : 1), Math.ceil(k / groups));
  const valueRanges = Math.ceil((distOnLane0 ? d : values) / lanes), clusterRanges = Math.ceil(k / (groups * perThread));
  return { lanes, distOnLane0, groups, perThread, valueRanges, clusterRanges, passes: valueRanges * clusterRanges };
}

/** Workgroups of a sums dispatch over `rows` rows: one per block and pass. */
export function sumsWorkgroups(rows: number, k: number, d: number, variant: SumsVariant = DEFAULT_SUMS_VARIANT): number {
  return Math.ceil(rows / sumBlockRows(k)) * sumsShape(k, d, variant).passes;
}

/** Tile columns of the variants with whole-warp groups: a pass's features, then (its last) the distance. */
function tileColumns({ lanes, distOnLane0 }: SumsShape, d: number): number {
  return distOnLane0 ? lanes + 1 : Math.min(lanes, d + 1);
}

/**
 * Workgroup memory of the sums kernel with sub-tiles of t rows. masks, constTile: features (stride
 * t + 1), labels, distances, k bit masks. The others: a pass's values (stride t + 1), two sets of
 * masks (per cluster or per group of the pass), a count per cluster of the pass and (groupMasks,
 * distLane0) labels.
 */
function sumsWorkgroupBytes(d: number, k: number, t: number, variant: SumsVariant): number {
  const words = Math.ceil(t / 32);
  if (variant === 'masks' || variant === 'constTile') return 4 * ((t + 1) * d + 2 * t + k * words);
  const shape = sumsShape(k, d, variant), clusters = shape.groups * shape.perThread;
  const perGroup = variant !== 'warpLanes';
  return 4 * ((t + 1) * tileColumns(shape, d) + 2 * (perGroup ? shape.groups : clusters) * words + clusters + (perGroup ? t : 0));
}

/** Rows per sub-tile: 64 (the fastest on the H200 for 32 features, 64 clusters, variant masks), fewer where the workgroup memory would not hold them. */
function sumTileRows(d: number, k: number, variant: SumsVariant): number {
  let t = 64;
  while (t > 1 && sumsWorkgroupBytes(d, k, t, variant) > SUM_WORKGROUP_BYTES) t = Math.floor(t / 2);
  return t;
}

/** The sums kernel's variant and rows per sub-tile (by default the most up to 64 that fit). */
export interface SumsOptions { variant?: SumsVariant; tileRows?: number }

/**
 * Per-cluster counts, feature sums and distance sums per block of sumBlockRows(k) rows. The block
 * is walked in sub-tiles of T rows (features, labels and distances staged in workgroup memory);
 * in each, the rows of every cluster are marked in bit masks (atomicOr, which no order changes),
 * and a thread visits its clusters' rows lowest bit first, adding each to that cluster's
 * accumulator. So each entry is summed over its cluster's rows in row order, in double-float, one
 * thread per entry: the same bits on any device or run, whatever the variant (SumsVariant).
 * (variant masks, 10^7 × 32, k = 64 on an H200: 2.85 ms; every thread reading every label,
 * 3.84 ms; lists linked by atomicMin, 4.07 ms; 128-row sub-tiles were slower with either.)
 * Entries: e = j × k + c (sum of feature j over cluster c), then k × d + c (count of cluster c),
 * then k × d + k + c (Σ distance over cluster c); partial[b × entries + e] (block-major).
 * Dispatch sumsWorkgroups(rows, k, d, variant) workgroups.
 */
function buildKmeansSumsWgsl(d: number, k: number, { variant = DEFAULT_SUMS_VARIANT, tileRows }: SumsOptions = {}): string {
  const t = tileRows ?? sumTileRows(d, k, variant);
  return variant === 'masks' || variant === 'constTile' ? clusterSumsWgsl(d, k, t, variant) : warpSumsWgsl(d, k, t, variant);
}
export const kmeansSumsWgsl = memoWgsl(buildKmeansSumsWgsl);

/** Variants masks and constTile: groups of d + 2 lanes, a mask per cluster. */
function clusterSumsWgsl(d: number, k: number, t: number, variant: 'masks' | 'constTile'): string {
  const { lanes, groups, perThread, clusterRanges, passes } = sumsShape(k, d, variant);
  // The accumulators are separate variables, not an array indexed in a loop (kept in local memory by drivers that do not unroll).
  const slots = Array.from({ length: perThread }, (_, i) => i);
  const stage = variant === 'constTile'
    ? 'for (var i = lid.x; i < T * D; i += WG) { let r = i % T; if (s0 + r < r1) { tile[(i / T) * TS + r] = x[(i / T) * p.rows + s0 + r]; } }'
    : 'for (var i = lid.x; i < n * D; i += WG) { tile[(i / n) * TS + i % n] = x[(i / n) * p.rows + s0 + i % n]; }';
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
    for (var s0 = r0; s0 < r1; s0 += T) {
      let n = min(T, r1 - s0);
      workgroupBarrier(); // the previous sub-tile is no longer read
      ${stage}
      for (var i = lid.x; i < n; i += WG) { lab[i] = labels[s0 + i]; rowDist[i] = dist[s0 + i]; }
      for (var i = lid.x; i < K * MW; i += WG) { atomicStore(&masks[i], 0u); }
      workgroupBarrier();
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

/**
 * Variants warpLanes, groupMasks and distLane0: groups of whole warps, each with perThread
 * consecutive clusters; tile column `col` holds the pass's value v0 + col (features, then the
 * distance as value D); counts by atomicAdd; masks double-buffered, per cluster (warpLanes) or per
 * group (groupMasks, distLane0) of the pass's clusters.
 */
function warpSumsWgsl(d: number, k: number, t: number, variant: 'warpLanes' | 'groupMasks' | 'distLane0'): string {
  const shape = sumsShape(k, d, variant);
  const { lanes, groups, perThread, clusterRanges, passes, distOnLane0 } = shape;
  const slots = Array.from({ length: perThread }, (_, i) => i);
  const perGroup = variant !== 'warpLanes';
  // Lane 0's second value where the features fill every lane: the distance (tile column L), into accumulators dist0 … .
  const addDistance = (i: number) => (distOnLane0 ? ` if (distLane) { dist${i} = dfAddF(dist${i}, distance); }` : '');
  // Per group: one walk over the group's rows, each added to its cluster's accumulator (the switch
  // is on lab[r], the same for every thread of the warp). Per cluster: a walk per cluster.
  const walk = perGroup
    ? `        for (var mw = 0u; mw < MW; mw++) {
          var bits = atomicLoad(&masks[cur * MASKS + g * MW + mw]);
          while (bits != 0u) {
            let r = mw * 32u + firstTrailingBit(bits);
            bits &= bits - 1u;
            let value = tile[col * TS + r];${distOnLane0 ? '\n            let distance = tile[L * TS + r];' : ''}
            switch (lab[r] - g * E) {
${slots.map((i) => `              case ${i}u: { acc${i} = dfAddF(acc${i}, value);${addDistance(i)} }`).join('\n')}
              default: {}
            }
          }
        }`
    : slots.map((i) => `        for (var mw = 0u; mw < MW; mw++) {
          var bits = atomicLoad(&masks[cur * MASKS + (g * E + ${i}u) * MW + mw]);
          while (bits != 0u) {
            let r = mw * 32u + firstTrailingBit(bits);
            bits &= bits - 1u;
            acc${i} = dfAddF(acc${i}, tile[col * TS + r]);
          }
        }`).join('\n');
  const mark = perGroup
    ? `lab[r] = c;
            atomicOr(&masks[cur * MASKS + (c / E) * MW + r / 32u], 1u << (r % 32u));`
    : 'atomicOr(&masks[cur * MASKS + c * MW + r / 32u], 1u << (r % 32u));';
  return /* wgsl */ `${header(d)}
@group(0) @binding(2) var<storage, read> labels: array<u32>;
@group(0) @binding(3) var<storage, read> dist: array<f32>;
@group(0) @binding(4) var<storage, read_write> partials: array<vec2f>;
const K: u32 = ${k}u;
const T: u32 = ${t}u;
/** Lanes per group: a multiple of 32 (at most 256), so a warp holds one group. */
const L: u32 = ${lanes}u;
const GROUPS: u32 = ${groups}u;
const E: u32 = ${perThread}u;
/** Clusters of one pass: group g has c0 + g × E + i, i < E. */
const PC: u32 = GROUPS * E;
const CLUSTER_RANGES: u32 = ${clusterRanges}u;
const PASSES: u32 = ${passes}u;
const SUM_ROWS: u32 = ${sumBlockRows(k)}u;
/** Row stride of a value in the tile: T + 1, so the threads of a row's values read different banks. */
const TS: u32 = T + 1u;
/** Tile columns: values v0 … of the pass, feature j as value j, the distance as value D. */
const COLS: u32 = ${tileColumns(shape, d)}u;
var<workgroup> tile: array<f32, TS * COLS>;
/** Bit r % 32 of word r / 32 of a mask: row r of the sub-tile is in the mask's cluster (or group). */
const MW: u32 = (T + 31u) / 32u;
const MASKS: u32 = ${perGroup ? 'GROUPS' : 'PC'} * MW;
/** Two sets of masks: the sub-tile's (cur), and the next one's, cleared meanwhile. */
var<workgroup> masks: array<atomic<u32>, 2u * MASKS>;
/** Rows of each of the pass's clusters in the block so far. */
var<workgroup> counts: array<atomic<u32>, PC>;
${perGroup ? '/** The cluster of each row of the sub-tile, less c0 (set for rows of the pass\'s clusters only). */\nvar<workgroup> lab: array<u32, T>;\n' : ''}
@compute @workgroup_size(256)
fn sums(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let blocks = (p.rows + SUM_ROWS - 1u) / SUM_ROWS;
  let entries = K * D + 2u * K;
  let g = lid.x / L;
  let col = lid.x % L;
  for (var w = wid.x; w < blocks * PASSES; w += nwg.x) {
    let b = w % blocks;
    let pw = w / blocks; // the pass
    let v0 = (pw / CLUSTER_RANGES) * L; // its first value
    let c0 = (pw % CLUSTER_RANGES) * PC; // its first cluster
    let v = v0 + col; // this thread's value: feature v or the distance (D)
    let live = g < GROUPS && v <= D;${distOnLane0 ? '\n    let distLane = col == 0u && v0 + L == D; // the distance is this pass\'s column L, added by lane 0' : ''}
    let r0 = b * SUM_ROWS;
    let r1 = min(p.rows, r0 + SUM_ROWS);
    workgroupBarrier(); // the previous block's masks and counts are no longer read
    for (var i = lid.x; i < 2u * MASKS; i += WG) { atomicStore(&masks[i], 0u); }
    for (var i = lid.x; i < PC; i += WG) { atomicStore(&counts[i], 0u); }
${slots.map((i) => `    var acc${i} = vec2f(0.0);${distOnLane0 ? ` var dist${i} = vec2f(0.0);` : ''}`).join('\n')}
    var cur = 0u;
    for (var s0 = r0; s0 < r1; s0 += T) {
      workgroupBarrier(); // the previous sub-tile is no longer read; this one's masks are cleared
      for (var i = lid.x; i < T * COLS; i += WG) {
        let j = i / T;
        let r = i % T;
        if (j < L && v0 + j < D && s0 + r < r1) { tile[j * TS + r] = x[(v0 + j) * p.rows + s0 + r]; }
      }
      for (var r = lid.x; r < T; r += WG) {
        if (s0 + r < r1) {
          if (D - v0 < COLS) { tile[(D - v0) * TS + r] = dist[s0 + r]; }
          let c = labels[s0 + r] - c0; // past PC (wrapping) for clusters outside the pass's
          if (c < PC) {
            atomicAdd(&counts[c], 1u);
            ${mark}
          }
        }
      }
      for (var i = lid.x; i < MASKS; i += WG) { atomicStore(&masks[(1u - cur) * MASKS + i], 0u); }
      workgroupBarrier();
      if (live) {
${walk}
      }
      cur = 1u - cur;
    }
    if (live) {
${slots.map((i) => `      {
        let c = c0 + g * E + ${i}u;
        if (c < K) { partials[b * entries + select(K * D + K + c, v * K + c, v < D)] = acc${i};${distOnLane0 ? ' if (distLane) { partials[b * entries + K * D + K + c] = dist' + i + '; }' : ''} }
      }`).join('\n')}
    }
    if (v0 == 0u) {
      // The count of a block is below 2^24, exact in f32: (count, +0), as adding 1.0 per row in double-float gives.
      for (var i = lid.x; i < PC; i += WG) {
        if (c0 + i < K) { partials[b * entries + K * D + c0 + i] = vec2f(f32(atomicLoad(&counts[i])), 0.0); }
      }
    }
  }
}
`;
}

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
