// Hash join kernels. Build: the right side's keys go into the group-by key table
// (groupby-aggregate.wgsl.ts: slot owner, rows per slot, slot per row); each slot's rows then get
// a contiguous segment, placed in arbitrary order and re-ordered by rank so that duplicates of a
// key are listed in right-row order. Probe: each left row finds its slot and match count; an
// exclusive scan of the counts places its output pairs, so pairs come out in left-row order.
import { WGSL_GRID, WGSL_HASH2, WGSL_VALID } from './wgsl-common.js';

const PARAMS = `struct Params { n: u32, capacity: u32, hasNulls: u32, _pad: u32 }`;

const SEGMENT_SIZES = /* wgsl */ `
${PARAMS}
@group(0) @binding(0) var<storage, read> counts: array<u32>;
@group(0) @binding(1) var<storage, read_write> segStart: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

// Rows per key slot (the null-key slot and the total word get 0); scanned afterwards.
@compute @workgroup_size(256)
fn segment_sizes(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var s = gid.x; s < p.capacity + 2u; s += gridStride(nwg)) {
    segStart[s] = select(0u, counts[2u * s], s < p.capacity);
  }
}
`;

const PLACE = /* wgsl */ `
${PARAMS}
@group(0) @binding(0) var<storage, read> rowSlot: array<u32>;
@group(0) @binding(1) var<storage, read> segStart: array<u32>;
@group(0) @binding(2) var<storage, read_write> cursor: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> unordered: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(256)
fn place_rows(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var r = gid.x; r < p.n; r += gridStride(nwg)) {
    let s = rowSlot[r];
    if (s >= p.capacity) { continue; }
    unordered[segStart[s] + atomicAdd(&cursor[s], 1u)] = r;
  }
}
`;

// A row's rank in its segment is the number of rows of that segment before it: O(duplicates)
// per row, cheap for the usual few duplicates per key.
const RANK = /* wgsl */ `
${PARAMS}
@group(0) @binding(0) var<storage, read> rowSlot: array<u32>;
@group(0) @binding(1) var<storage, read> segStart: array<u32>;
@group(0) @binding(2) var<storage, read> unordered: array<u32>;
@group(0) @binding(3) var<storage, read_write> sorted: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(256)
fn rank_rows(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var r = gid.x; r < p.n; r += gridStride(nwg)) {
    let s = rowSlot[r];
    if (s >= p.capacity) { continue; }
    let start = segStart[s];
    let end = segStart[s + 1u];
    var rank = 0u;
    for (var j = start; j < end; j++) { rank += select(0u, 1u, unordered[j] < r); }
    sorted[start + rank] = r;
  }
}
`;

const PROBE = /* wgsl */ `
${PARAMS}
@group(0) @binding(0) var<storage, read> leftKeys: array<u32>;
@group(0) @binding(1) var<storage, read> validMask: array<u32>;
@group(0) @binding(2) var<storage, read> rightKeys: array<u32>;
@group(0) @binding(3) var<storage, read> owner: array<u32>;
@group(0) @binding(4) var<storage, read> segStart: array<u32>;
@group(0) @binding(5) var<storage, read_write> matchSlot: array<u32>;
@group(0) @binding(6) var<storage, read_write> matchCount: array<u32>;
@group(0) @binding(7) var<uniform> p: Params;

fn lookup(k0: u32, k1: u32) -> u32 {
  let mask = p.capacity - 1u;
  var s = hash2(k0, k1) & mask;
  for (var step = 0u; step < p.capacity; step++) {
    let o = owner[s];
    if (o == 0u) { return 0xffffffffu; }
    if (rightKeys[2u * (o - 1u)] == k0 && rightKeys[2u * (o - 1u) + 1u] == k1) { return s; }
    s = (s + 1u) & mask;
  }
  return 0xffffffffu;
}

@compute @workgroup_size(256)
fn probe_rows(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var l = gid.x; l < p.n; l += gridStride(nwg)) {
    var s = 0xffffffffu;
    if (isPresent(p.hasNulls, l)) { s = lookup(leftKeys[2u * l], leftKeys[2u * l + 1u]); }
    matchSlot[l] = s;
    matchCount[l] = select(0u, segStart[s + 1u] - segStart[s], s != 0xffffffffu);
  }
}
`;

const EMIT = /* wgsl */ `
${PARAMS}
@group(0) @binding(0) var<storage, read> matchSlot: array<u32>;
@group(0) @binding(1) var<storage, read> outStart: array<u32>;
@group(0) @binding(2) var<storage, read> segStart: array<u32>;
@group(0) @binding(3) var<storage, read> sorted: array<u32>;
@group(0) @binding(4) var<storage, read_write> outLeft: array<u32>;
@group(0) @binding(5) var<storage, read_write> outRight: array<u32>;
@group(0) @binding(6) var<uniform> p: Params;

@compute @workgroup_size(256)
fn emit_pairs(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var l = gid.x; l < p.n; l += gridStride(nwg)) {
    let s = matchSlot[l];
    if (s == 0xffffffffu) { continue; }
    let at = outStart[l];
    let segFrom = segStart[s];
    let count = outStart[l + 1u] - at;
    for (var j = 0u; j < count; j++) {
      outLeft[at + j] = l;
      outRight[at + j] = sorted[segFrom + j];
    }
  }
}
`;

export const JOIN_SEGMENT_SIZES_WGSL = WGSL_GRID + SEGMENT_SIZES;
export const JOIN_PLACE_WGSL = WGSL_GRID + PLACE;
export const JOIN_RANK_WGSL = WGSL_GRID + RANK;
export const JOIN_PROBE_WGSL = WGSL_GRID + WGSL_HASH2 + WGSL_VALID + PROBE;
export const JOIN_EMIT_WGSL = WGSL_GRID + EMIT;
