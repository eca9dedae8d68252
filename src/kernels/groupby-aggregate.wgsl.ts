// Hash aggregation by a 64-bit key given as two u32 words per row.
//
// Table: open addressing with linear probing over `capacity` (a power of two) slots, plus one
// slot (index capacity) for null keys. A slot's owner is the row that claimed it (row + 1, by
// atomicCompareExchangeWeak); rows compare their full key words with the owner row's words in
// the read-only key input, so distinct keys with the same hash never merge and no thread waits
// for another to publish its key.
//
// Aggregates are integer atomics only (WGSL has no float atomics), so results do not depend on
// the order threads run in:
//   counts       two words with carry;
//   int64 sums   four u32 limbs of the sum of the values' unsigned bit patterns, plus a count
//                of negative values (sum = limbs − 2^64·negatives), exact;
//   float64 sums fixed point: a first pass takes the largest binary exponent per group, a second
//                adds each mantissa, shifted to 64 bits below that exponent's unit, into five
//                limbs (positive and negative values apart); exact except for bits more than
//                2^64 below the group's largest value;
//   min/max      on an order-preserving 64-bit image of the value: hi word first (atomicMax/Min),
//                then the lo word among rows whose hi word won.
import { WGSL_GRID, WGSL_HASH2, WGSL_VALID } from './wgsl-common.js';

const INSERT = /* wgsl */ `
struct Params { n: u32, capacity: u32, hasNulls: u32, _pad: u32 }
@group(0) @binding(0) var<storage, read> keys: array<u32>;
@group(0) @binding(1) var<storage, read> validMask: array<u32>;
@group(0) @binding(2) var<storage, read_write> owner: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> firstRow: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> rowSlot: array<u32>;
@group(0) @binding(6) var<storage, read_write> overflow: atomic<u32>;
@group(0) @binding(7) var<uniform> p: Params;

fn findSlot(i: u32) -> u32 {
  let k0 = keys[2u * i];
  let k1 = keys[2u * i + 1u];
  let mask = p.capacity - 1u;
  var s = hash2(k0, k1) & mask;
  // Bounded: a probe this long means the table is (nearly) full, so the host retries with a
  // larger one; the bound keeps a full table from costing every row a walk of the whole table.
  let maxSteps = min(4u * p.capacity + 16u, 4096u);
  for (var step = 0u; step < maxSteps; step++) {
    var o = atomicLoad(&owner[s]);
    if (o == 0u) {
      let r = atomicCompareExchangeWeak(&owner[s], 0u, i + 1u);
      if (r.exchanged) { return s; }
      o = r.old_value;
      if (o == 0u) { continue; }
    }
    if (keys[2u * (o - 1u)] == k0 && keys[2u * (o - 1u) + 1u] == k1) { return s; }
    s = (s + 1u) & mask;
  }
  atomicStore(&overflow, 1u);
  return 0xffffffffu;
}

@compute @workgroup_size(256)
fn insert_keys(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    var s = p.capacity;
    if (isPresent(p.hasNulls, i)) { s = findSlot(i); }
    rowSlot[i] = s;
    if (s == 0xffffffffu) { continue; }
    let old = atomicAdd(&counts[2u * s], 1u);
    if (old == 0xffffffffu) { atomicAdd(&counts[2u * s + 1u], 1u); }
    atomicMin(&firstRow[s], i);
  }
}
`;

const COMPACT = /* wgsl */ `
struct Params { capacity: u32, groups: u32, width: u32, _pad: u32 }
@group(0) @binding(0) var<storage, read> owner: array<u32>;
@group(0) @binding(1) var<storage, read> counts: array<u32>;
@group(0) @binding(2) var<storage, read_write> flags: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

// flags[s] = 1 for a used slot (the null slot is used when it counted rows).
@compute @workgroup_size(256)
fn mark_used(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var s = gid.x; s <= p.capacity; s += gridStride(nwg)) {
    flags[s] = select(0u, 1u, owner[s] != 0u || counts[2u * s] != 0u || counts[2u * s + 1u] != 0u);
  }
}
`;

const GATHER = /* wgsl */ `
struct Params { capacity: u32, groups: u32, width: u32, _pad: u32 }
@group(0) @binding(0) var<storage, read> scanned: array<u32>;
@group(0) @binding(1) var<storage, read_write> slotOfGroup: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

// After an exclusive scan of the used flags (capacity + 2 words), slot s is used when its
// prefix differs from the next one, and that prefix is its group number.
@compute @workgroup_size(256)
fn compact(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var s = gid.x; s <= p.capacity; s += gridStride(nwg)) {
    if (scanned[s + 1u] != scanned[s]) { slotOfGroup[scanned[s]] = s; }
  }
}
`;

const GATHER_ROWS = /* wgsl */ `
struct Params { srcOffset: u32, groups: u32, width: u32, dstOffset: u32 }
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read> slotOfGroup: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

// dst[dstOffset + g·width ...] = src[srcOffset + index[g]·width ...], each entry \`width\` words.
@compute @workgroup_size(256)
fn gather(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let total = p.groups * p.width;
  for (var j = gid.x; j < total; j += gridStride(nwg)) {
    let g = j / p.width;
    dst[p.dstOffset + j] = src[p.srcOffset + slotOfGroup[g] * p.width + (j - g * p.width)];
  }
}
`;

const COLUMN_HEAD = /* wgsl */ `
struct Params { n: u32, hasNulls: u32, isFloat: u32, _pad: u32 }
@group(0) @binding(0) var<storage, read> rowSlot: array<u32>;
@group(0) @binding(1) var<storage, read> values: array<u32>;
@group(0) @binding(2) var<storage, read> validMask: array<u32>;
@group(0) @binding(3) var<storage, read_write> acc: array<atomic<u32>>;
@group(0) @binding(4) var<uniform> p: Params;

// Adds v into limb k of the limbs at base (nl limbs), carrying into higher limbs.
fn addLimb(base: u32, first: u32, v: u32, nl: u32) {
  var k = first;
  var add = v;
  loop {
    if (add == 0u || k >= nl) { break; }
    let old = atomicAdd(&acc[base + k], add);
    add = select(0u, 1u, old + add < old);
    k += 1u;
  }
}

fn rowOf(i: u32) -> u32 {
  if (!isPresent(p.hasNulls, i)) { return 0xffffffffu; }
  return rowSlot[i];
}
`;

// Per slot: [count lo, count hi, sum limbs 0..3, negatives lo, negatives hi]
const INT_SUM = /* wgsl */ `
@compute @workgroup_size(256)
fn sum_int(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    let s = rowOf(i);
    if (s == 0xffffffffu) { continue; }
    let base = s * 8u;
    let lo = values[2u * i];
    let hi = values[2u * i + 1u];
    addLimb(base, 0u, 1u, 2u);
    addLimb(base + 2u, 0u, lo, 4u);
    addLimb(base + 2u, 1u, hi, 4u);
    if ((hi & 0x80000000u) != 0u) { addLimb(base + 6u, 0u, 1u, 2u); }
  }
}
`;

// Per slot: [count lo, count hi, max biased exponent, special flags (1 NaN, 2 +inf, 4 -inf),
//            positive limbs 0..4, negative limbs 0..4]; the unit is 2^(maxExp − 1075 − 64).
const FLOAT_SUM = /* wgsl */ `
@compute @workgroup_size(256)
fn float_exponents(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    let s = rowOf(i);
    if (s == 0xffffffffu) { continue; }
    let base = s * 14u;
    let hi = values[2u * i + 1u];
    let e = (hi >> 20u) & 0x7ffu;
    addLimb(base, 0u, 1u, 2u);
    if (e == 0x7ffu) {
      let isNan = (hi & 0xfffffu) != 0u || values[2u * i] != 0u;
      atomicOr(&acc[base + 3u], select(select(2u, 4u, (hi >> 31u) == 1u), 1u, isNan));
    } else {
      atomicMax(&acc[base + 2u], max(e, 1u));
    }
  }
}

@compute @workgroup_size(256)
fn float_sum(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    let s = rowOf(i);
    if (s == 0xffffffffu) { continue; }
    let base = s * 14u;
    let lo = values[2u * i];
    let hi = values[2u * i + 1u];
    let e = (hi >> 20u) & 0x7ffu;
    if (e == 0x7ffu) { continue; }
    var m1 = hi & 0xfffffu;
    if (e != 0u) { m1 = m1 | 0x100000u; }
    let m0 = lo;
    if (m0 == 0u && m1 == 0u) { continue; }
    let limbs = base + select(4u, 9u, (hi >> 31u) == 1u);
    let shift = i32(max(e, 1u)) - i32(atomicLoad(&acc[base + 2u])) + 64;
    if (shift >= 0) {
      let q = u32(shift) / 32u;
      let r = u32(shift) % 32u;
      if (r == 0u) {
        addLimb(limbs, q, m0, 5u);
        addLimb(limbs, q + 1u, m1, 5u);
      } else {
        addLimb(limbs, q, m0 << r, 5u);
        addLimb(limbs, q + 1u, (m1 << r) | (m0 >> (32u - r)), 5u);
        addLimb(limbs, q + 2u, m1 >> (32u - r), 5u);
      }
    } else {
      // More than 64 bits below the group's largest value: keep what lands above the unit.
      let t = u32(-shift);
      var w0 = 0u;
      var w1 = 0u;
      if (t < 32u) { w0 = (m0 >> t) | (m1 << (32u - t)); w1 = m1 >> t; }
      else if (t < 64u) { w0 = m1 >> (t - 32u); }
      addLimb(limbs, 0u, w0, 5u);
      addLimb(limbs, 1u, w1, 5u);
    }
  }
}
`;

// Per slot: [max hi, max lo, min hi, min lo] of the order-preserving image (init 0,0,~0,~0).
const MIN_MAX = /* wgsl */ `
fn ordered(i: u32) -> vec2u {
  let lo = values[2u * i];
  let hi = values[2u * i + 1u];
  if (p.isFloat == 0u) { return vec2u(hi ^ 0x80000000u, lo); }
  if ((hi >> 31u) == 1u) { return vec2u(~hi, ~lo); }
  return vec2u(hi | 0x80000000u, lo);
}

fn isNanAt(i: u32) -> bool {
  let hi = values[2u * i + 1u];
  return p.isFloat == 1u && ((hi >> 20u) & 0x7ffu) == 0x7ffu && ((hi & 0xfffffu) != 0u || values[2u * i] != 0u);
}

// Initial accumulators; here p.n is the number of slots.
@compute @workgroup_size(256)
fn minmax_init(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var s = gid.x; s < p.n; s += gridStride(nwg)) {
    atomicStore(&acc[4u * s], 0u);
    atomicStore(&acc[4u * s + 1u], 0u);
    atomicStore(&acc[4u * s + 2u], 0xffffffffu);
    atomicStore(&acc[4u * s + 3u], 0xffffffffu);
  }
}

@compute @workgroup_size(256)
fn minmax_hi(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    let s = rowOf(i);
    if (s == 0xffffffffu || isNanAt(i)) { continue; }
    let o = ordered(i);
    atomicMax(&acc[4u * s], o.x);
    atomicMin(&acc[4u * s + 2u], o.x);
  }
}

@compute @workgroup_size(256)
fn minmax_lo(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    let s = rowOf(i);
    if (s == 0xffffffffu || isNanAt(i)) { continue; }
    let o = ordered(i);
    if (atomicLoad(&acc[4u * s]) == o.x) { atomicMax(&acc[4u * s + 1u], o.y); }
    if (atomicLoad(&acc[4u * s + 2u]) == o.x) { atomicMin(&acc[4u * s + 3u], o.y); }
  }
}
`;

export const GROUPBY_INSERT_WGSL = WGSL_GRID + WGSL_HASH2 + WGSL_VALID + INSERT;
export const GROUPBY_MARK_WGSL = WGSL_GRID + COMPACT;
export const GROUPBY_COMPACT_WGSL = WGSL_GRID + GATHER;
export const GROUPBY_GATHER_WGSL = WGSL_GRID + GATHER_ROWS;
export const GROUPBY_INT_SUM_WGSL = WGSL_GRID + WGSL_VALID + COLUMN_HEAD + INT_SUM;
export const GROUPBY_FLOAT_SUM_WGSL = WGSL_GRID + WGSL_VALID + COLUMN_HEAD + FLOAT_SUM;
export const GROUPBY_MIN_MAX_WGSL = WGSL_GRID + WGSL_VALID + COLUMN_HEAD + MIN_MAX;
