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
//                then the lo word among rows whose hi word won. -0 and +0 are equal (as on the
//                CPU): both take one hi word of their own, and their lo word is the row's number
//                and sign, so that the group's first zero wins, the one the CPU keeps.
//
// Workgroup-local pre-aggregation. Why: with few groups every row's atomics hit the same few
// hundred device words, and the kernels ran at a few % of memory bandwidth, serialised on them.
// How: a workgroup (grid-stride loop: many rows) aggregates in workgroup memory first, through a
// small cache table from slot to local entry (claimed by compare-exchange, LC_PROBES probes at
// most); after the loop it adds each used entry into the slot's device words once. A row whose
// slot finds no entry (table full) adds straight to device memory, so any number of groups works;
// the operations commute, so the device words end exactly as without the cache. Local sums are
// u32 limbs with carries; a carry out of the top local limb goes on into the device limb above.
// Local words start at 0 (a minimum is kept as the maximum of ~value). A word final since the
// previous pass (float_sum: the largest exponent; minmax_lo: the winning hi words) is read from
// device memory once per entry and copied into it.
import { WGSL_GRID, WGSL_HASH2, WGSL_VALID } from './wgsl-common.js';

/** WebGPU's default maxComputeWorkgroupStorageSize, which the local tables stay within. */
const WORKGROUP_STORAGE_BYTES = 16384;

/**
 * The local cache table: `entries` entries of `words` u32 each, plus a tag per entry (the slot it
 * caches). lcFind(s) gives slot s's entry or LC_NONE; lcWord(e, w) the index of its word w (LC_NONE
 * when e is). Entries are probed from s % LC with growing steps (1, 2, 3, ...). A slot may end up
 * with two entries (after a spurious compare-exchange failure): both are flushed, which is fine.
 */
function localCache(entries: number, words: number): string {
  const bytes = entries * (words + 1) * 4;
  if (bytes > WORKGROUP_STORAGE_BYTES) throw new Error(`local group-by cache of ${bytes} bytes exceeds ${WORKGROUP_STORAGE_BYTES}`);
  return /* wgsl */ `
const LC: u32 = ${entries}u;
const LW: u32 = ${words}u;
const LC_PROBES: u32 = 8u;
const LC_NONE: u32 = 0xffffffffu;
var<workgroup> lcTag: array<atomic<u32>, LC>;
var<workgroup> lcAcc: array<atomic<u32>, ${entries * words}u>;

// Every entry free, every word 0. Call before a workgroupBarrier().
fn lcClear(lid: u32) {
  for (var e = lid; e < LC; e += WG) { atomicStore(&lcTag[e], LC_NONE); }
  for (var j = lid; j < LC * LW; j += WG) { atomicStore(&lcAcc[j], 0u); }
}

fn lcFind(s: u32) -> u32 {
  var e = s % LC;
  for (var k = 1u; k <= LC_PROBES; k++) {
    var t = atomicLoad(&lcTag[e]);
    if (t == LC_NONE) {
      let r = atomicCompareExchangeWeak(&lcTag[e], LC_NONE, s);
      if (r.exchanged) { return e; }
      t = r.old_value; // still LC_NONE after a spurious failure: go on probing
    }
    if (t == s) { return e; }
    e = (e + k) % LC;
  }
  return LC_NONE;
}

fn lcWord(e: u32, w: u32) -> u32 { return select(e * LW + w, LC_NONE, e == LC_NONE); }
`;
}

const INSERT = /* wgsl */ `
struct Params { n: u32, capacity: u32, hasNulls: u32, _pad: u32 }
@group(0) @binding(0) var<storage, read> keys: array<u32>;
@group(0) @binding(1) var<storage, read> validMask: array<u32>;
@group(0) @binding(2) var<storage, read_write> owner: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> firstRow: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> rowSlot: array<u32>;
// overflow[0]: set when the table is too full (the host retries with a larger one);
// overflow[1]: slots claimed so far.
@group(0) @binding(6) var<storage, read_write> overflow: array<atomic<u32>, 2>;
@group(0) @binding(7) var<uniform> p: Params;

fn findSlot(i: u32) -> u32 {
  let k0 = keys[2u * i];
  let k1 = keys[2u * i + 1u];
  let mask = p.capacity - 1u;
  var s = hash2(k0, k1) & mask;
  // Why the table gives up early: once it is too full, every row with a new key would walk a long
  // probe before failing, and rows by the million made one overflowing pass cost seconds. So a claim
  // that takes the table past 3/4 full raises the flag, and probing rows look at it every 16 steps.
  // The step bound stays as a backstop against a pathological cluster.
  let maxSteps = min(4u * p.capacity + 16u, 4096u);
  for (var step = 0u; step < maxSteps; step++) {
    if ((step & 15u) == 15u && atomicLoad(&overflow[0]) != 0u) { return 0xffffffffu; }
    var o = atomicLoad(&owner[s]);
    if (o == 0u) {
      let r = atomicCompareExchangeWeak(&owner[s], 0u, i + 1u);
      if (r.exchanged) {
        if (atomicAdd(&overflow[1], 1u) >= p.capacity - (p.capacity >> 2u)) { atomicStore(&overflow[0], 1u); }
        return s;
      }
      o = r.old_value;
      if (o == 0u) { continue; }
    }
    if (keys[2u * (o - 1u)] == k0 && keys[2u * (o - 1u) + 1u] == k1) { return s; }
    s = (s + 1u) & mask;
  }
  atomicStore(&overflow[0], 1u);
  return 0xffffffffu;
}

// Local words per entry: [rows (a carry out goes to the device's high count word), ~first row].
@compute @workgroup_size(256)
fn insert_keys(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3u) {
  lcClear(lid);
  workgroupBarrier();
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    var s = p.capacity;
    if (isPresent(p.hasNulls, i)) { s = findSlot(i); }
    rowSlot[i] = s;
    if (s == 0xffffffffu) { continue; }
    let at = lcWord(lcFind(s), 0u);
    if (at == LC_NONE) {
      let old = atomicAdd(&counts[2u * s], 1u);
      if (old == 0xffffffffu) { atomicAdd(&counts[2u * s + 1u], 1u); }
      atomicMin(&firstRow[s], i);
    } else {
      let old = atomicAdd(&lcAcc[at], 1u);
      if (old == 0xffffffffu) { atomicAdd(&counts[2u * s + 1u], 1u); }
      atomicMax(&lcAcc[at + 1u], ~i);
    }
  }
  workgroupBarrier();
  for (var e = lid; e < LC; e += WG) {
    let s = atomicLoad(&lcTag[e]);
    if (s == LC_NONE) { continue; }
    let rows = atomicLoad(&lcAcc[lcWord(e, 0u)]);
    let old = atomicAdd(&counts[2u * s], rows);
    if (old + rows < old) { atomicAdd(&counts[2u * s + 1u], 1u); }
    let first = atomicLoad(&lcAcc[lcWord(e, 1u)]);
    if (first != 0u) { atomicMin(&firstRow[s], ~first); }
  }
}
`;

// Groups numbered in first-appearance order, on the device: the host then reads each group's
// records in output order (read back in slot order, decoding millions of groups jumped around
// memory and bound high-cardinality chunks).
const MARK_FIRST_ROWS = /* wgsl */ `
struct Params { n: u32, _a: u32, _b: u32, _pad: u32 }
@group(0) @binding(0) var<storage, read> rowSlot: array<u32>;
@group(0) @binding(1) var<storage, read> firstRow: array<u32>;
@group(0) @binding(2) var<storage, read_write> flags: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

// flags[i] = 1 where row i is its group's first row (a row without a slot is in no group).
@compute @workgroup_size(256)
fn mark_first_rows(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    let s = rowSlot[i];
    flags[i] = select(0u, 1u, s != 0xffffffffu && firstRow[s] == i);
  }
}
`;

const ORDER_GROUPS = /* wgsl */ `
struct Params { n: u32, _a: u32, _b: u32, _pad: u32 }
@group(0) @binding(0) var<storage, read> scanned: array<u32>;
@group(0) @binding(1) var<storage, read> rowSlot: array<u32>;
@group(0) @binding(2) var<storage, read_write> slotOfGroup: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

// After an exclusive scan of the first-row flags (n + 1 words), row i is a first row when its
// prefix differs from the next one, and that prefix is its group's number.
@compute @workgroup_size(256)
fn order_groups(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    if (scanned[i + 1u] != scanned[i]) { slotOfGroup[scanned[i]] = rowSlot[i]; }
  }
}
`;

const GATHER_ROWS = /* wgsl */ `
struct Params { srcOffset: u32, groups: u32, width: u32, dstOffset: u32, stride: u32, _a: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read> slotOfGroup: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

// dst[dstOffset + g·width ...] = src[srcOffset + index[g]·stride ...]: each entry's first \`width\` words.
@compute @workgroup_size(256)
fn gather(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let total = p.groups * p.width;
  for (var j = gid.x; j < total; j += gridStride(nwg)) {
    let g = j / p.width;
    dst[p.dstOffset + j] = src[p.srcOffset + slotOfGroup[g] * p.stride + (j - g * p.width)];
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

// Accumulation through the local cache (after localCache's WGSL). `at` is a local word index from
// lcWord, LC_NONE for a row whose slot has no entry: those go to device memory directly.
const COLUMN_LOCAL = /* wgsl */ `
// Adds v into limb \`first\` of the nl local limbs at lcAcc[at], carrying upward; what carries out
// of the top local limb (or all of v, when at is LC_NONE) goes into the same limb of the gnl
// device limbs at acc[base].
fn addLocal(at: u32, first: u32, v: u32, nl: u32, base: u32, gnl: u32) {
  var k = first;
  var add = v;
  if (at != LC_NONE) {
    loop {
      if (add == 0u || k >= nl) { break; }
      let old = atomicAdd(&lcAcc[at + k], add);
      add = select(0u, 1u, old + add < old);
      k += 1u;
    }
  }
  addLimb(base, k, add, gnl);
}

fn maxLocal(at: u32, v: u32, g: u32) {
  if (at == LC_NONE) { atomicMax(&acc[g], v); } else { atomicMax(&lcAcc[at], v); }
}

fn minLocal(at: u32, v: u32, g: u32) {
  if (at == LC_NONE) { atomicMin(&acc[g], v); } else { atomicMax(&lcAcc[at], ~v); }
}

// Flushing an entry: local limb k into device limb k (carrying); local max / min words.
fn flushLimbs(at: u32, nl: u32, base: u32, gnl: u32) {
  for (var k = 0u; k < nl; k++) { addLimb(base, k, atomicLoad(&lcAcc[at + k]), gnl); }
}

fn flushMax(at: u32, g: u32) {
  let v = atomicLoad(&lcAcc[at]);
  if (v != 0u) { atomicMax(&acc[g], v); }
}

fn flushMin(at: u32, g: u32) {
  let v = atomicLoad(&lcAcc[at]);
  if (v != 0u) { atomicMin(&acc[g], ~v); }
}
`;

// Per slot: [count lo, count hi, sum limbs 0..3, negatives lo, negatives hi]
// Local words per entry: [count, sum limbs 0..2, negatives].
const INT_SUM = /* wgsl */ `
@compute @workgroup_size(256)
fn sum_int(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3u) {
  lcClear(lid);
  workgroupBarrier();
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    let s = rowOf(i);
    if (s == 0xffffffffu) { continue; }
    let base = s * 8u;
    let e = lcFind(s);
    let lo = values[2u * i];
    let hi = values[2u * i + 1u];
    addLocal(lcWord(e, 0u), 0u, 1u, 1u, base, 2u);
    addLocal(lcWord(e, 1u), 0u, lo, 3u, base + 2u, 4u);
    addLocal(lcWord(e, 1u), 1u, hi, 3u, base + 2u, 4u);
    if ((hi & 0x80000000u) != 0u) { addLocal(lcWord(e, 4u), 0u, 1u, 1u, base + 6u, 2u); }
  }
  workgroupBarrier();
  for (var e = lid; e < LC; e += WG) {
    let s = atomicLoad(&lcTag[e]);
    if (s == LC_NONE) { continue; }
    let base = s * 8u;
    flushLimbs(lcWord(e, 0u), 1u, base, 2u);
    flushLimbs(lcWord(e, 1u), 3u, base + 2u, 4u);
    flushLimbs(lcWord(e, 4u), 1u, base + 6u, 2u);
  }
}
`;

// Per slot: [count lo, count hi, max biased exponent, special flags (1 NaN, 2 +inf, 4 -inf),
//            positive limbs 0..4, negative limbs 0..4]; the unit is 2^(maxExp − 1075 − 64).
// Local words per entry: float_exponents [count, max exponent, flags]; float_sum [copy of the
// max exponent (0: not read yet), positive limbs 0..3, negative limbs 0..3]. A value is below
// 2^117 units, so a local sum passes four limbs only past 2^11 such rows (carried to limb 4).
const FLOAT_SUM = /* wgsl */ `
@compute @workgroup_size(256)
fn float_exponents(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3u) {
  lcClear(lid);
  workgroupBarrier();
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    let s = rowOf(i);
    if (s == 0xffffffffu) { continue; }
    let base = s * 14u;
    let ent = lcFind(s);
    let hi = values[2u * i + 1u];
    let e = (hi >> 20u) & 0x7ffu;
    addLocal(lcWord(ent, 0u), 0u, 1u, 1u, base, 2u);
    if (e == 0x7ffu) {
      let isNan = (hi & 0xfffffu) != 0u || values[2u * i] != 0u;
      let flag = select(select(2u, 4u, (hi >> 31u) == 1u), 1u, isNan);
      let at = lcWord(ent, 2u);
      if (at == LC_NONE) { atomicOr(&acc[base + 3u], flag); } else { atomicOr(&lcAcc[at], flag); }
    } else {
      maxLocal(lcWord(ent, 1u), max(e, 1u), base + 2u);
    }
  }
  workgroupBarrier();
  for (var ent = lid; ent < LC; ent += WG) {
    let s = atomicLoad(&lcTag[ent]);
    if (s == LC_NONE) { continue; }
    let base = s * 14u;
    flushLimbs(lcWord(ent, 0u), 1u, base, 2u);
    flushMax(lcWord(ent, 1u), base + 2u);
    let flags = atomicLoad(&lcAcc[lcWord(ent, 2u)]);
    if (flags != 0u) { atomicOr(&acc[base + 3u], flags); }
  }
}

// Slot s's largest exponent, final since float_exponents: read from device memory once per
// entry, then from the entry's copy (a single word, 0 until written; the exponent is ≥ 1).
fn maxExponent(ent: u32, s: u32) -> u32 {
  let at = lcWord(ent, 0u);
  if (at != LC_NONE) {
    let copy = atomicLoad(&lcAcc[at]);
    if (copy != 0u) { return copy; }
  }
  let x = atomicLoad(&acc[s * 14u + 2u]);
  if (at != LC_NONE) { atomicStore(&lcAcc[at], x); }
  return x;
}

@compute @workgroup_size(256)
fn float_sum(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3u) {
  lcClear(lid);
  workgroupBarrier();
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
    let ent = lcFind(s);
    let negative = (hi >> 31u) == 1u;
    let limbs = base + select(4u, 9u, negative);
    let at = lcWord(ent, select(1u, 5u, negative));
    let shift = i32(max(e, 1u)) - i32(maxExponent(ent, s)) + 64;
    if (shift >= 0) {
      let q = u32(shift) / 32u;
      let r = u32(shift) % 32u;
      if (r == 0u) {
        addLocal(at, q, m0, 4u, limbs, 5u);
        addLocal(at, q + 1u, m1, 4u, limbs, 5u);
      } else {
        addLocal(at, q, m0 << r, 4u, limbs, 5u);
        addLocal(at, q + 1u, (m1 << r) | (m0 >> (32u - r)), 4u, limbs, 5u);
        addLocal(at, q + 2u, m1 >> (32u - r), 4u, limbs, 5u);
      }
    } else {
      // More than 64 bits below the group's largest value: keep what lands above the unit.
      let t = u32(-shift);
      var w0 = 0u;
      var w1 = 0u;
      if (t < 32u) { w0 = (m0 >> t) | (m1 << (32u - t)); w1 = m1 >> t; }
      else if (t < 64u) { w0 = m1 >> (t - 32u); }
      addLocal(at, 0u, w0, 4u, limbs, 5u);
      addLocal(at, 1u, w1, 4u, limbs, 5u);
    }
  }
  workgroupBarrier();
  for (var ent = lid; ent < LC; ent += WG) {
    let s = atomicLoad(&lcTag[ent]);
    if (s == LC_NONE) { continue; }
    flushLimbs(lcWord(ent, 1u), 4u, s * 14u + 4u, 5u);
    flushLimbs(lcWord(ent, 5u), 4u, s * 14u + 9u, 5u);
  }
}
`;

// Per slot: [max hi, max lo, min hi, min lo] of the order-preserving image (init 0,0,~0,~0).
// Floats: negative values map to hi words up to 0x7fffffff, ±0 to 0x80000000 (ZERO_HI) and
// positive values from 0x80000001 up. A zero's lo word depends on the row (minmax_lo).
const MIN_MAX = /* wgsl */ `
const ZERO_HI: u32 = 0x80000000u;

fn ordered(i: u32) -> vec2u {
  let lo = values[2u * i];
  let hi = values[2u * i + 1u];
  if (p.isFloat == 0u) { return vec2u(hi ^ 0x80000000u, lo); }
  if ((hi & 0x7fffffffu) == 0u && lo == 0u) { return vec2u(ZERO_HI, 0u); }
  if ((hi >> 31u) == 1u) { return vec2u(~hi, ~lo); }
  return vec2u((hi | 0x80000000u) + 1u, lo);
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

// Local words per entry: minmax_hi [max hi, ~min hi]; minmax_lo [copy of the slot's max hi and
// min hi (see finalHi), max lo, ~min lo].
@compute @workgroup_size(256)
fn minmax_hi(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3u) {
  lcClear(lid);
  workgroupBarrier();
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    let s = rowOf(i);
    if (s == 0xffffffffu || isNanAt(i)) { continue; }
    let o = ordered(i);
    let e = lcFind(s);
    maxLocal(lcWord(e, 0u), o.x, 4u * s);
    minLocal(lcWord(e, 1u), o.x, 4u * s + 2u);
  }
  workgroupBarrier();
  for (var e = lid; e < LC; e += WG) {
    let s = atomicLoad(&lcTag[e]);
    if (s == LC_NONE) { continue; }
    flushMax(lcWord(e, 0u), 4u * s);
    flushMin(lcWord(e, 1u), 4u * s + 2u);
  }
}

// Slot s's (max hi, min hi), final since minmax_hi: read from device memory once per entry, then
// from the entry's copy in three words [1 | max hi >> 1 (the 1 in bit 31), 1 | min hi >> 1,
// 4 | their low bits]. Each word is 0 until written and then holds its final value (every
// writer stores the same), so a reader that sees all three non-zero needs no ordering between them.
fn finalHi(e: u32, s: u32) -> vec2u {
  let at = lcWord(e, 0u);
  if (at != LC_NONE) {
    let a = atomicLoad(&lcAcc[at]);
    let b = atomicLoad(&lcAcc[at + 1u]);
    let c = atomicLoad(&lcAcc[at + 2u]);
    if (a != 0u && b != 0u && c != 0u) { return vec2u((a << 1u) | (c & 1u), (b << 1u) | ((c >> 1u) & 1u)); }
  }
  let g = vec2u(atomicLoad(&acc[4u * s]), atomicLoad(&acc[4u * s + 2u]));
  if (at != LC_NONE) {
    atomicStore(&lcAcc[at], 0x80000000u | (g.x >> 1u));
    atomicStore(&lcAcc[at + 1u], 0x80000000u | (g.y >> 1u));
    atomicStore(&lcAcc[at + 2u], 4u | (g.x & 1u) | ((g.y & 1u) << 1u));
  }
  return g;
}

@compute @workgroup_size(256)
fn minmax_lo(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3u) {
  lcClear(lid);
  workgroupBarrier();
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    let s = rowOf(i);
    if (s == 0xffffffffu || isNanAt(i)) { continue; }
    let o = ordered(i);
    let e = lcFind(s);
    let hiWords = finalHi(e, s);
    // A float zero's lo word: its row and sign, so that the first zero row is the max and the min.
    let isZero = p.isFloat == 1u && o.x == ZERO_HI;
    let zero = (i << 1u) | (values[2u * i + 1u] >> 31u);
    if (hiWords.x == o.x) { maxLocal(lcWord(e, 3u), select(o.y, ~zero, isZero), 4u * s + 1u); }
    if (hiWords.y == o.x) { minLocal(lcWord(e, 4u), select(o.y, zero, isZero), 4u * s + 3u); }
  }
  workgroupBarrier();
  for (var e = lid; e < LC; e += WG) {
    let s = atomicLoad(&lcTag[e]);
    if (s == LC_NONE) { continue; }
    flushMax(lcWord(e, 3u), 4u * s + 1u);
    flushMin(lcWord(e, 4u), 4u * s + 3u);
  }
}
`;

// Local tables: 15 KiB of workgroup memory or less per entry point (entries × (LW + 1) × 4 bytes).
export const GROUPBY_INSERT_WGSL = WGSL_GRID + WGSL_HASH2 + WGSL_VALID + localCache(1024, 2) + INSERT;
export const GROUPBY_MARK_FIRST_WGSL = WGSL_GRID + MARK_FIRST_ROWS;
export const GROUPBY_ORDER_WGSL = WGSL_GRID + ORDER_GROUPS;
export const GROUPBY_GATHER_WGSL = WGSL_GRID + GATHER_ROWS;
export const GROUPBY_INT_SUM_WGSL = WGSL_GRID + WGSL_VALID + COLUMN_HEAD + localCache(640, 5) + COLUMN_LOCAL + INT_SUM;
export const GROUPBY_FLOAT_SUM_WGSL = WGSL_GRID + WGSL_VALID + COLUMN_HEAD + localCache(384, 9) + COLUMN_LOCAL + FLOAT_SUM;
export const GROUPBY_MIN_MAX_WGSL = WGSL_GRID + WGSL_VALID + COLUMN_HEAD + localCache(640, 5) + COLUMN_LOCAL + MIN_MAX;
