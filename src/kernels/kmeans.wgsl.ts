// WGSL of k-means on a device matrix (ml-matrix.wgsl.ts layout), generated per feature count D so
// that a row lives in registers. Distances are f32, summed over features in order; the nearest
// centre is the lowest index among equal distances (strict <), as the CPU code.
//   assign:       nearest centre and its squared distance per row (centres staged in workgroup
//                 memory as vec4s, several rows per thread)
//   sums:         per block of sumBlockRows(k) rows, entries e = j × k + c (sum of feature j over
//                 rows of cluster c), then k counts, then k inertias: partial[b × entries + e];
//                 each entry follows its cluster's rows through per-sub-tile lists (generated per
//                 D and k); for small k × d the same kernel first assigns each staged sub-tile
//                 itself (fused), so the rows are read once
//   pp_update:    each row's nearest squared distance over centres [from, to), kept between calls
//   pp_potential: min(nearest, distance to candidate t) per row, for each candidate t

import { WGSL_GRID } from './wgsl-common.js';
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
export function kmeansAssignWgsl(d: number, rowsPerThread = assignRowsPerThread(d)): string {
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

/**
 * Rows of one block of the per-cluster sums: a function of k alone, so the sums do not depend on
 * the device; at least 16 rows per cluster, so the per-block partials (k × d + 2k double-floats)
 * stay near a sixteenth of the block's feature values.
 */
export function sumBlockRows(k: number): number {
  return Math.max(1024, 2 ** Math.ceil(Math.log2(16 * k)));
}
/** Feature values of a sub-tile of rows staged in workgroup memory by the sums kernel (8 KiB). */
const SUM_TILE = 2048;
/** Clusters the sums kernel takes (a list head per cluster in workgroup memory, 4 KiB); more run on the CPU. */
export const MAX_SUM_CLUSTERS = 1024;
/** Centre values (padded to vec4s) the fused kernel keeps in workgroup memory (8 KiB). */
const FUSED_CENTRES = 2048;

function sumTileRows(d: number): number {
  return Math.min(256, Math.floor(SUM_TILE / d)); // at most one row of a sub-tile per thread
}

/**
 * Workgroup memory of the fused kernel (assignment and sums in one), or null when its centres do
 * not fit: then the assignment runs first, on its own.
 */
export function fusedAssignBytes(d: number, k: number): number | null {
  const centreFloats = k * Math.ceil(d / 4) * 4;
  if (centreFloats > FUSED_CENTRES) return null;
  const t = sumTileRows(d);
  return 4 * (t * d + centreFloats + 3 * t + 2 * 256 + k);
}

/** Accumulators per thread, and passes over a block, for k × d + 2k entries. */
export function sumsShape(k: number, d: number): { perThread: number; passes: number } {
  const entries = k * d + 2 * k;
  const perThread = Math.min(16, Math.ceil(entries / 256));
  return { perThread, passes: Math.ceil(entries / (256 * perThread)) };
}

/**
 * Per-cluster counts and feature sums per block of sumBlockRows(k) rows, without comparing every row
 * with every cluster: the block is walked in sub-tiles of T rows (features staged in workgroup
 * memory); in each, the rows of one cluster form a list in row order (head = the cluster's first
 * row, by workgroup atomicMin; next = its next row with the same label, the minimum of what
 * several threads each find in a segment of the sub-tile), and the thread of entry
 * (cluster c, feature j) follows c's list. Each entry is thus summed in row order, one thread per
 * entry, in double-float: no float atomics, the same bits on any device or run.
 * Entries: e = j × k + c (sum of feature j over cluster c), then k × d + c (count of cluster c),
 * then k × d + k + c (Σ distance over cluster c, so the inertia is balanced over threads like the
 * rest); partial[b × entries + e] (block-major).
 */
export function kmeansSumsWgsl(d: number, k: number, fused: boolean): string {
  const { perThread, passes } = sumsShape(k, d);
  const t = sumTileRows(d), d4 = Math.ceil(d / 4);
  if (fused && (fusedAssignBytes(d, k) === null || passes !== 1)) throw new Error(`no fused k-means kernel for k ${k}, d ${d}`);
  const bindings = fused ? /* wgsl */ `
@group(0) @binding(2) var<storage, read> centres: array<f32>;
@group(0) @binding(3) var<storage, read_write> labels: array<u32>;
@group(0) @binding(4) var<storage, read_write> dist: array<f32>;
@group(0) @binding(5) var<storage, read_write> partials: array<vec2f>;
const D4: u32 = ${d4}u;
/** Centres [g × KG, (g + 1) × KG) go to thread group g of a row (G groups of T threads). */
const G: u32 = WG / T;
const KG: u32 = (K + G - 1u) / G;
var<workgroup> cent: array<vec4f, K * D4>;
var<workgroup> candD: array<f32, WG>;
var<workgroup> candC: array<u32, WG>;
` : /* wgsl */ `
@group(0) @binding(2) var<storage, read> labels: array<u32>;
@group(0) @binding(3) var<storage, read> dist: array<f32>;
@group(0) @binding(4) var<storage, read_write> partials: array<vec2f>;
`;
  // Fused: each row's nearest centre from the staged sub-tile, a group of threads per range of
  // centres (ascending, strict <), then the groups' winners in group order: the lowest index
  // among equal distances, as the assignment kernel.
  const tileValue = (j: number) => (j < d ? `tile[${j}u * T + t]` : '0.0');
  const assignInTile = fused ? /* wgsl */ `
      {
        let t = lid.x % T;
        let g = lid.x / T;
        var best = 0u;
        var bestD = MAX_F32;
        if (g < G && t < n) {
          var row: array<vec4f, D4>;
${Array.from({ length: d4 }, (_, q) => `          row[${q}] = vec4f(${[0, 1, 2, 3].map((i) => tileValue(4 * q + i)).join(', ')});`).join('\n')}
          for (var c = g * KG; c < min(K, (g + 1u) * KG); c++) {
            var s = 0.0;
            for (var q = 0u; q < D4; q++) {
              let u = row[q] - cent[c * D4 + q];
              s = s + u.x * u.x;
              s = s + u.y * u.y;
              s = s + u.z * u.z;
              s = s + u.w * u.w;
            }
            if (s < bestD) { bestD = s; best = c; }
          }
        }
        candD[lid.x] = bestD;
        candC[lid.x] = best;
      }
      workgroupBarrier();
      if (lid.x < n) {
        var bestD = candD[lid.x];
        var best = candC[lid.x];
        for (var g = 1u; g < G; g++) { if (candD[g * T + lid.x] < bestD) { bestD = candD[g * T + lid.x]; best = candC[g * T + lid.x]; } }
        lab[lid.x] = best;
        rowDist[lid.x] = bestD;
        labels[s0 + lid.x] = best;
        dist[s0 + lid.x] = bestD;
      }
      workgroupBarrier();` : '';
  const stageCentres = fused ? /* wgsl */ `
  for (var i = lid.x; i < K * D4; i += WG) {
    let c = i / D4;
    let j = (i % D4) * 4u;
    var v = vec4f(0.0);
    for (var u = 0u; u < 4u; u++) { if (j + u < D) { v[u] = centres[c * D + j + u]; } }
    cent[i] = v;
  }` : '';
  return /* wgsl */ `${header(d)}
const K: u32 = ${k}u;
const T: u32 = ${t}u;
const E: u32 = ${perThread}u;
const PASSES: u32 = ${passes}u;
const SUM_ROWS: u32 = ${sumBlockRows(k)}u;
const NONE: u32 = 0xffffffffu;
/** The links are found by SEGS threads per row, each looking through SEG_LEN rows. */
const SEGS: u32 = WG / T;
const SEG_LEN: u32 = (T + SEGS - 1u) / SEGS;
const FEATURE: u32 = 0u;
const COUNT: u32 = 1u;
const DISTANCE: u32 = 2u;
var<workgroup> tile: array<f32, T * D>;
var<workgroup> lab: array<u32, T>;
var<workgroup> rowDist: array<f32, T>;
var<workgroup> next: array<atomic<u32>, T>;
var<workgroup> head: array<atomic<u32>, K>;
${bindings}
@compute @workgroup_size(256)
fn sums(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let blocks = (p.rows + SUM_ROWS - 1u) / SUM_ROWS;
  let entries = K * D + 2u * K;
  for (var c = lid.x; c < K; c += WG) { atomicStore(&head[c], NONE); }
  if (lid.x < T) { atomicStore(&next[lid.x], NONE); }${stageCentres}
  for (var w = wid.x; w < blocks * PASSES; w += nwg.x) {
    let b = w % blocks;
    let e0 = (w / blocks) * WG * E;
    let r0 = b * SUM_ROWS;
    let r1 = min(p.rows, r0 + SUM_ROWS);
    var acc: array<vec2f, E>;
    for (var m = 0u; m < E; m++) { acc[m] = vec2f(0.0); } // explicitly, as s in assign
    for (var s0 = r0; s0 < r1; s0 += T) {
      let n = min(T, r1 - s0);
      workgroupBarrier(); // the previous sub-tile's lists are cleared and no longer read
      for (var i = lid.x; i < n * D; i += WG) { tile[(i / n) * T + i % n] = x[(i / n) * p.rows + s0 + i % n]; }
      ${fused ? '' : 'if (lid.x < n) { lab[lid.x] = labels[s0 + lid.x]; rowDist[lid.x] = dist[s0 + lid.x]; }'}
      workgroupBarrier();${assignInTile}
      // next[t] = the first later row of t's cluster: the minimum over segments of each one's first.
      let t = lid.x % T;
      let seg = lid.x / T;
      if (seg < SEGS && t < n) {
        let l = lab[t];
        for (var u = max(t + 1u, seg * SEG_LEN); u < min(n, (seg + 1u) * SEG_LEN); u++) {
          if (lab[u] == l) { atomicMin(&next[t], u); break; }
        }
        if (seg == 0u) { atomicMin(&head[l], t); }
      }
      workgroupBarrier();
      for (var m = 0u; m < E; m++) {
        let e = e0 + m * WG + lid.x;
        if (e < entries) {
          let kind = select(select(FEATURE, COUNT, e >= K * D), DISTANCE, e >= K * D + K);
          let c = select(e % K, (e - K * D) % K, kind != FEATURE);
          let at = min(e / K, D - 1u) * T;
          var r = atomicLoad(&head[c]);
          while (r != NONE) {
            var v = tile[at + r];
            if (kind == COUNT) { v = 1.0; } else if (kind == DISTANCE) { v = rowDist[r]; }
            acc[m] = dfAddF(acc[m], v);
            r = atomicLoad(&next[r]);
          }
        }
      }
      workgroupBarrier();
      if (lid.x < n) { atomicStore(&head[lab[lid.x]], NONE); atomicStore(&next[lid.x], NONE); }
    }
    for (var m = 0u; m < E; m++) {
      let e = e0 + m * WG + lid.x;
      if (e < entries) { partials[b * entries + e] = acc[m]; }
    }
  }
}
`;
}

export function kmeansPpUpdateWgsl(d: number): string {
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

export function kmeansPpPotentialWgsl(d: number): string {
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
