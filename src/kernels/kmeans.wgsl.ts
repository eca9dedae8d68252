// WGSL of k-means on a device matrix (ml-matrix.wgsl.ts layout), generated per feature count D so
// that a row lives in registers. Distances are f32, summed over features in order; the nearest
// centre is the lowest index among equal distances (strict <), as the CPU code.
//   assign:       nearest centre and its squared distance per row (centres staged in workgroup memory)
//   sums:         per block of BLOCK_ROWS rows, entries e = j × k + c (sum of feature j over rows of
//                 cluster c), then k counts, then the inertia: partial[e × blocks + b]
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

export function kmeansAssignWgsl(d: number): string {
  return /* wgsl */ `${header(d)}
@group(0) @binding(2) var<storage, read> centres: array<f32>;
@group(0) @binding(3) var<storage, read_write> labels: array<u32>;
@group(0) @binding(4) var<storage, read_write> dist: array<f32>;
const TILE: u32 = ${CENTRE_TILE}u;
const PER_TILE: u32 = TILE / D;
var<workgroup> tile: array<f32, TILE>;

fn stage(c0: u32, lane: u32) {
  let n = min(PER_TILE, p.k - c0) * D;
  workgroupBarrier();
  for (var i = lane; i < n; i += WG) { tile[i] = centres[c0 * D + i]; }
  workgroupBarrier();
}

@compute @workgroup_size(256)
fn assign(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let oneTile = p.k <= PER_TILE;
  if (oneTile) { stage(0u, lid.x); }
  for (var base = wid.x * WG; base < p.rows; base += nwg.x * WG) {
    let r = base + lid.x;
    let live = r < p.rows;
    var row: array<f32, D>;
    if (live) { row = loadRow(r); }
    var best = 0u;
    var bestD = MAX_F32;
    for (var c0 = 0u; c0 < p.k; c0 += PER_TILE) {
      if (!oneTile) { stage(c0, lid.x); }
      let n = min(PER_TILE, p.k - c0);
      if (live) {
        for (var c = 0u; c < n; c++) {
          var s = 0.0;
          for (var j = 0u; j < D; j++) { let t = row[j] - tile[c * D + j]; s = s + t * t; }
          if (s < bestD) { bestD = s; best = c0 + c; }
        }
      }
    }
    if (live) { labels[r] = best; dist[r] = bestD; }
  }
}
`;
}

export function kmeansSumsWgsl(d: number): string {
  return /* wgsl */ `${header(d)}
@group(0) @binding(2) var<storage, read> labels: array<u32>;
@group(0) @binding(3) var<storage, read> dist: array<f32>;
@group(0) @binding(4) var<storage, read_write> partials: array<vec2f>;
var<workgroup> blockLabels: array<u32, BLOCK_ROWS>;

@compute @workgroup_size(256)
fn sums(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  let blocks = (p.rows + BLOCK_ROWS - 1u) / BLOCK_ROWS;
  let featureEntries = p.k * D;
  let entries = featureEntries + p.k + 1u;
  for (var b = wid.x; b < blocks; b += nwg.x) {
    let r0 = b * BLOCK_ROWS;
    let n = min(BLOCK_ROWS, p.rows - r0);
    workgroupBarrier();
    for (var i = lid.x; i < n; i += WG) { blockLabels[i] = labels[r0 + i]; }
    workgroupBarrier();
    for (var e = lid.x; e < entries; e += WG) {
      var acc = vec2f(0.0);
      if (e < featureEntries) {
        let c = e % p.k;
        let col = (e / p.k) * p.rows + r0;
        for (var i = 0u; i < n; i++) { if (blockLabels[i] == c) { acc = dfAddF(acc, x[col + i]); } }
      } else if (e < featureEntries + p.k) {
        let c = e - featureEntries;
        var count = 0u;
        for (var i = 0u; i < n; i++) { count += select(0u, 1u, blockLabels[i] == c); }
        acc = vec2f(f32(count), 0.0);
      } else {
        for (var i = 0u; i < n; i++) { acc = dfAddF(acc, dist[r0 + i]); }
      }
      partials[e * blocks + b] = acc;
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
