// WGSL of k-means on a device matrix (ml-matrix.wgsl.ts layout), generated per feature count D so
// that a row lives in registers. Distances are f32, summed over features in order; the nearest
// centre is the lowest index among equal distances (strict <), as the CPU code.
//   assign:       nearest centre and its squared distance per row (centres staged in workgroup
//                 memory as vec4s, several rows per thread)
//   sums:         per block of sumBlockRows(k) rows, entries e = j × k + c (sum of feature j over
//                 rows of cluster c), then k counts, then k inertias: partial[b × entries + e];
//                 each sub-tile of rows is put in (label, row) order in workgroup memory and each
//                 entry's thread adds its cluster's run, so every entry is summed in row order
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
 */
export function kmeansAssignWgsl(d: number): string {
  const d4 = Math.ceil(d / 4), rowsPerThread = assignRowsPerThread(d);
  const load = (q: number) => [0, 1, 2, 3].map((i) => (4 * q + i < d ? `x[${4 * q + i}u * p.rows + r]` : '0.0')).join(', ');
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

fn loadRow4(r: u32) -> array<vec4f, D4> {
  var row: array<vec4f, D4>;
${Array.from({ length: d4 }, (_, q) => `  row[${q}] = vec4f(${load(q)});`).join('\n')}
  return row;
}

@compute @workgroup_size(256)
fn assign(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let oneTile = p.k <= PER_TILE;
  if (oneTile) { stage(0u, lid.x); }
  for (var base = wid.x * WG * R; base < p.rows; base += nwg.x * WG * R) {
    var rows: array<array<vec4f, D4>, R>;
    var best: array<u32, R>;
    var bestD: array<f32, R>;
    for (var i = 0u; i < R; i++) {
      let r = base + i * WG + lid.x;
      best[i] = 0u;
      bestD[i] = MAX_F32;
      if (r < p.rows) { rows[i] = loadRow4(r); }
    }
    for (var c0 = 0u; c0 < p.k; c0 += PER_TILE) {
      if (!oneTile) { stage(c0, lid.x); }
      let n = min(PER_TILE, p.k - c0);
      for (var c = 0u; c < n; c++) {
        var s: array<f32, R>;
        for (var i = 0u; i < R; i++) { s[i] = 0.0; } // explicitly: Mesa keeps a loop-local array from the previous iteration
        for (var q = 0u; q < D4; q++) {
          let cv = tile[c * D4 + q];
          for (var i = 0u; i < R; i++) {
            let t = rows[i][q] - cv;
            s[i] = s[i] + t.x * t.x;
            s[i] = s[i] + t.y * t.y;
            s[i] = s[i] + t.z * t.z;
            s[i] = s[i] + t.w * t.w;
          }
        }
        for (var i = 0u; i < R; i++) { if (s[i] < bestD[i]) { bestD[i] = s[i]; best[i] = c0 + c; } }
      }
    }
    for (var i = 0u; i < R; i++) {
      let r = base + i * WG + lid.x;
      if (r < p.rows) { labels[r] = best[i]; dist[r] = bestD[i]; }
    }
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
/** Values of a sub-tile of rows (its features, a constant 1 and the distance) kept in workgroup memory (16 KiB). */
const SUM_TILE = 4096;
/** Clusters the sums kernel takes (start and count per cluster in workgroup memory, 8 KiB); more run on the CPU. */
export const MAX_SUM_CLUSTERS = 1024;

/**
 * Rows of a sub-tile of the sums: at most 64 (each of the sub-tile's threads compares its row's
 * label with every other row's), and an even number, so that a column of T + 1 values is odd and
 * the threads of one cluster, reading one row's features, read distinct banks.
 */
export function sumTileRows(d: number): number {
  return Math.min(64, 2 * Math.floor((Math.floor(SUM_TILE / (d + 2)) - 1) / 2));
}

/** Accumulators per thread, and passes over a block, for k × (d + 2) entries. */
export function sumsShape(k: number, d: number): { perThread: number; passes: number } {
  const entries = k * (d + 2);
  const perThread = Math.min(16, Math.ceil(entries / 256));
  return { perThread, passes: Math.ceil(entries / (256 * perThread)) };
}

/**
 * Per-cluster counts and feature sums per block of sumBlockRows(k) rows. The block is walked in
 * sub-tiles of T rows; in each, the rows are put in (label, row) order in workgroup memory (a
 * row's place: the rows of lower label, plus the earlier rows of its label, counted by the row's
 * own thread), so a cluster's rows are one run of the tile. Each entry (cluster c, column q) is
 * one thread's, which adds c's run of column q to a double-float accumulator: rows in row order,
 * so each entry is summed in row order over the block, as a CPU loop would (no float atomics; the
 * same bits on any device or run). Threads of neighbouring slots s = c × (D + 2) + q share a
 * cluster, so a warp's loop lengths agree. Columns q: the D features, a constant 1 (count), the
 * row's distance (inertia). Entries: e = q × K + c (feature j of cluster c at j × K + c, then the
 * K counts, then the K inertias); partial[b × entries + e] (block-major).
 */
export function kmeansSumsWgsl(d: number, k: number): string {
  const { perThread, passes } = sumsShape(k, d);
  return /* wgsl */ `${header(d)}
@group(0) @binding(2) var<storage, read> labels: array<u32>;
@group(0) @binding(3) var<storage, read> dist: array<f32>;
@group(0) @binding(4) var<storage, read_write> partials: array<vec2f>;
const K: u32 = ${k}u;
const Q: u32 = D + 2u;
const T: u32 = ${sumTileRows(d)}u;
const TP: u32 = T + 1u;
const E: u32 = ${perThread}u;
const PASSES: u32 = ${passes}u;
const SUM_ROWS: u32 = ${sumBlockRows(k)}u;
/** Column q of the sub-tile's rows in (label, row) order at q × TP. */
var<workgroup> tile: array<f32, Q * TP>;
var<workgroup> lab: array<u32, T>;
/** Cluster c's run in the tile: [start[c], start[c] + count[c]); count is 0 for clusters absent from the sub-tile. */
var<workgroup> start: array<u32, K>;
var<workgroup> count: array<u32, K>;

@compute @workgroup_size(256)
fn sums(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let blocks = (p.rows + SUM_ROWS - 1u) / SUM_ROWS;
  let entries = K * Q;
  for (var c = lid.x; c < K; c += WG) { count[c] = 0u; start[c] = 0u; }
  for (var i = lid.x; i < T; i += WG) { tile[D * TP + i] = 1.0; } // the count column, never overwritten
  for (var w = wid.x; w < blocks * PASSES; w += nwg.x) {
    let b = w % blocks;
    let s0 = (w / blocks) * WG * E;
    let r0 = b * SUM_ROWS;
    let r1 = min(p.rows, r0 + SUM_ROWS);
    var acc: array<vec2f, E>;
    for (var m = 0u; m < E; m++) { acc[m] = vec2f(0.0); } // explicitly: Mesa keeps a loop-local array from the previous iteration
    for (var t0 = r0; t0 < r1; t0 += T) {
      let n = min(T, r1 - t0);
      let t = lid.x;
      if (t < n) { lab[t] = labels[t0 + t]; }
      workgroupBarrier();
      // Thread t places row t: after the rows of lower label and the earlier rows of its own.
      var first = false;
      var l = 0u;
      if (t < n) {
        l = lab[t];
        var lower = 0u;
        var before = 0u;
        var same = 0u;
        for (var u = 0u; u < n; u++) {
          let lu = lab[u];
          lower += select(0u, 1u, lu < l);
          if (lu == l) { same++; if (u < t) { before++; } }
        }
        let at = lower + before;
        for (var j = 0u; j < D; j++) { tile[j * TP + at] = x[j * p.rows + t0 + t]; }
        tile[(D + 1u) * TP + at] = dist[t0 + t];
        first = before == 0u;
        if (first) { start[l] = lower; count[l] = same; }
      }
      workgroupBarrier();
      for (var m = 0u; m < E; m++) {
        let s = s0 + m * WG + lid.x;
        if (s < entries) {
          let c = s / Q;
          let col = (s % Q) * TP;
          let i0 = start[c];
          let i1 = i0 + count[c];
          for (var i = i0; i < i1; i++) { acc[m] = dfAddF(acc[m], tile[col + i]); }
        }
      }
      workgroupBarrier();
      if (first) { count[l] = 0u; }
    }
    for (var m = 0u; m < E; m++) {
      let s = s0 + m * WG + lid.x;
      if (s < entries) { partials[b * entries + (s % Q) * K + s / Q] = acc[m]; }
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
