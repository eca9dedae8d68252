// WGSL of k-means on a device matrix (ml-matrix.wgsl.ts layout), generated per feature count D.
// Distances are f32, s = fma(t, t, s) over features in order (t = row - centre); the nearest
// centre is the lowest index among equal distances (strict <), as the CPU twin.
//   assign:       nearest centre and its squared distance per row (tiles of rows and centres in
//                 workgroup memory, 4 rows × 4 centres per thread)
//   sums:         per block of sumBlockRows(k) rows, entries e = j × k + c (sum of feature j over
//                 rows of cluster c), then k counts, then k inertias: partial[b × entries + e];
//                 each sub-tile of rows is put in (label, row) order in workgroup memory and each
//                 entry's thread adds its cluster's run, so every entry is summed in row order
//   pp_update:    each row's nearest squared distance over centres [from, to), kept between calls
//   pp_potential: min(nearest, distance to candidate t) per row, for each candidate t

import { WGSL_GRID } from './wgsl-common.js';
import { WGSL_DOUBLE_FLOAT } from './ml-matrix.wgsl.js';

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

/** Row and centre values of one feature chunk of the assignment, in workgroup memory (8 KiB). */
const ASSIGN_TILE = 2048;

/**
 * Shape of the assignment for k centres: TC groups of threads each take 4 centres of a tile of
 * 4 × TC centres, and 256 / TC row lanes each take 4 rows of a tile of 4 × 256 / TC rows (so each
 * thread keeps 4 × 4 distances); features are staged JC at a time. Fewer centre groups for small k,
 * so that few padded centres are computed.
 */
export function assignShape(k: number): { groups: number; tileRows: number; tileCentres: number; chunk: number } {
  const groups = k <= 16 ? 4 : k <= 32 ? 8 : 16;
  const tileRows = 4 * (256 / groups), tileCentres = 4 * groups;
  return { groups, tileRows, tileCentres, chunk: Math.floor(ASSIGN_TILE / (tileRows + tileCentres)) };
}

/** Workgroups of the assignment of `rows` rows to k centres. */
export function assignWorkgroups(rows: number, k: number): number {
  return Math.ceil(rows / assignShape(k).tileRows);
}

/**
 * Nearest centre per row, tiled as a matrix product: a tile of rows and a tile of centres are
 * staged in workgroup memory a chunk of features at a time (feature-major, so a thread reads its
 * 4 rows and its 4 centres of a feature as two vec4s), and each thread accumulates the 4 × 4
 * squared distances of its rows and centres in registers, feature by feature in order
 * (s = fma(t, t, s), t = row - centre: the CPU twin's arithmetic). Then each row's best over the
 * thread groups of the centre tile, in centre order, and over centre tiles in order: the lowest
 * index among equal distances. Padded centres (past k) are never chosen; padded rows never written.
 */
export function kmeansAssignWgsl(d: number, k: number): string {
  const { groups, tileRows, tileCentres, chunk } = assignShape(k);
  return /* wgsl */ `${header(d)}
@group(0) @binding(2) var<storage, read> centres: array<f32>;
@group(0) @binding(3) var<storage, read_write> labels: array<u32>;
@group(0) @binding(4) var<storage, read_write> dist: array<f32>;
const TC: u32 = ${groups}u;
const TR: u32 = WG / TC;
const RT: u32 = ${tileRows}u;
const CT: u32 = ${tileCentres}u;
const JC: u32 = ${chunk}u;
/** Feature jj of the chunk: rows [4 × lane, 4 × lane + 4) at rowTile[jj × TR + lane], centres of group g at centreTile[jj × TC + g]. */
var<workgroup> rowTile: array<vec4f, JC * TR>;
var<workgroup> centreTile: array<vec4f, JC * TC>;
/** Each centre group's best (distance, centre) per row of the tile. */
var<workgroup> candD: array<f32, TC * RT>;
var<workgroup> candC: array<u32, TC * RT>;

/** Best of 4 distances to centres c0 .. c0 + 3 (ascending, strict <; centres past k skipped). */
fn bestOf4(s: vec4f, c0: u32, row: u32, g: u32) {
  var bd = MAX_F32;
  var bc = 0u;
  for (var u = 0u; u < 4u; u++) { if (c0 + u < p.k && s[u] < bd) { bd = s[u]; bc = c0 + u; } }
  candD[g * RT + row] = bd;
  candC[g * RT + row] = bc;
}

@compute @workgroup_size(256)
fn assign(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let lane = lid.x % TR;
  let g = lid.x / TR;
  for (var base = wid.x * RT; base < p.rows; base += nwg.x * RT) {
    var best = 0u;
    var bestD = MAX_F32;
    for (var c0 = 0u; c0 < p.k; c0 += CT) {
      var s0 = vec4f(0.0);
      var s1 = vec4f(0.0);
      var s2 = vec4f(0.0);
      var s3 = vec4f(0.0);
      for (var j0 = 0u; j0 < D; j0 += JC) {
        let jn = min(JC, D - j0);
        workgroupBarrier(); // the previous chunk (and candidates) are no longer read
        for (var i = lid.x; i < jn * RT; i += WG) {
          let r = base + i % RT;
          var v = 0.0;
          if (r < p.rows) { v = x[(j0 + i / RT) * p.rows + r]; }
          rowTile[(i / RT) * TR + (i % RT) / 4u][i % 4u] = v;
        }
        for (var i = lid.x; i < jn * CT; i += WG) {
          let c = c0 + i % CT;
          var v = 0.0;
          if (c < p.k) { v = centres[c * D + j0 + i / CT]; }
          centreTile[(i / CT) * TC + (i % CT) / 4u][i % 4u] = v;
        }
        workgroupBarrier();
        for (var jj = 0u; jj < jn; jj++) {
          let cv = centreTile[jj * TC + g];
          let rv = rowTile[jj * TR + lane];
          let t0 = vec4f(rv.x) - cv;
          s0 = fma(t0, t0, s0);
          let t1 = vec4f(rv.y) - cv;
          s1 = fma(t1, t1, s1);
          let t2 = vec4f(rv.z) - cv;
          s2 = fma(t2, t2, s2);
          let t3 = vec4f(rv.w) - cv;
          s3 = fma(t3, t3, s3);
        }
      }
      let cg = c0 + 4u * g;
      bestOf4(s0, cg, 4u * lane, g);
      bestOf4(s1, cg, 4u * lane + 1u, g);
      bestOf4(s2, cg, 4u * lane + 2u, g);
      bestOf4(s3, cg, 4u * lane + 3u, g);
      workgroupBarrier();
      // Thread r of the tile keeps row r's best: earlier tiles first, then the groups in centre order.
      if (lid.x < RT) {
        for (var h = 0u; h < TC; h++) {
          let dh = candD[h * RT + lid.x];
          if (dh < bestD) { bestD = dh; best = candC[h * RT + lid.x]; }
        }
      }
    }
    let r = base + lid.x;
    if (lid.x < RT && r < p.rows) { labels[r] = best; dist[r] = bestD; }
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
/** Clusters the sums kernel takes (start and count per cluster in workgroup memory, 8 KiB); more run on the CPU. */
export const MAX_SUM_CLUSTERS = 1024;

/**
 * Rows of a sub-tile of the sums: as many as fit 16 KiB of workgroup memory with k clusters' start
 * and count, but at most 64 (each of the sub-tile's threads compares its row's label with every
 * other row's), and an even number, so that a column of T + 1 values is odd and the threads of
 * one cluster, reading one row's features, read distinct banks.
 */
export function sumTileRows(d: number, k: number): number {
  const floats = Math.floor((16384 - 8 * k - 4 * 64) / 4);
  return Math.max(2, Math.min(64, 2 * Math.floor((Math.floor(floats / (d + 2)) - 1) / 2)));
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
const T: u32 = ${sumTileRows(d, k)}u;
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
      for (var j = 0u; j < D; j++) { let t = row[j] - centres[c * D + j]; s = fma(t, t, s); }
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
      for (var j = 0u; j < D; j++) { let u = row[j] - candidates[t * D + j]; s = fma(u, u, s); }
      potential[t * p.rows + r] = min(m, s);
    }
  }
}
`;
}

/** fma(v[0], v[0], v[1]) into out[0], for deviceFmaIsFused. */
export const FMA_PROBE_WGSL = /* wgsl */ `
@group(0) @binding(0) var<storage, read> v: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(1)
fn probe() { out[0] = fma(v[0], v[0], v[1]); }
`;
