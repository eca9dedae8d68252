// String keys on the GPU: a 64-bit hash of a field's bytes, and the check that turns the hash
// grouping into an exact one.
//
// fieldHash: two murmur3-style lanes with different seeds over the field's raw bytes (inside its
// quotes, doubled quotes kept as they are: for a well-formed quoted field that raw text is a
// one-to-one spelling of its value, so equal raw bytes <=> equal values). The length goes in too.
// csv-rows.wgsl.ts combines the key fields' words into the row's 64-bit group-by key.
//
// verify_keys: rows grouped by that key; each row compares its key fields' bytes with those of the
// row that owns its hash-table slot (insertKeys in groupby-aggregate.ts). Any difference is a hash
// collision (or an int key spelled two ways, "01" and "1"): the host then aggregates the chunk on
// the CPU. Each row's owner row becomes its exact group id (the representative whose key fields
// the host copies out).
import { WGSL_GRID } from './wgsl-common.js';
import { WGSL_BYTES } from './csv-scan.wgsl.js';

/** fieldHash(s, e) -> vec2u over bytes [s, e) of the module's `bytes`. */
export const WGSL_FIELD_HASH = /* wgsl */ `
fn hashLane(h: u32, k0: u32) -> u32 {
  var k = k0 * 0xcc9e2d51u;
  k = (k << 15u) | (k >> 17u);
  k = k * 0x1b873593u;
  var x = h ^ k;
  x = (x << 13u) | (x >> 19u);
  return x * 5u + 0xe6546b64u;
}

fn finalLane(h0: u32) -> u32 {
  var h = h0;
  h = h ^ (h >> 16u); h = h * 0x85ebca6bu;
  h = h ^ (h >> 13u); h = h * 0xc2b2ae35u;
  return h ^ (h >> 16u);
}

fn fieldHash(s: u32, e: u32) -> vec2u {
  var a = 0x3c6ef372u;
  var b = 0x9e3779b9u;
  var word = 0u;
  var k = 0u;
  for (var i = s; i < e; i++) {
    word = word | (byteAt(i) << (8u * k));
    k += 1u;
    if (k == 4u) {
      a = hashLane(a, word);
      b = hashLane(b, word ^ 0x5bd1e995u);
      word = 0u;
      k = 0u;
    }
  }
  a = hashLane(hashLane(a, word), e - s);
  b = hashLane(hashLane(b, word ^ 0x5bd1e995u), ~(e - s));
  return vec2u(finalLane(a), finalLane(b ^ a));
}
`;

// Key spans: 2 words per (key k, row r) at 2 * (k * n + r): [start | flags, end) of the field's
// text; flags 0x80000000 = holds doubled quotes, 0x40000000 = a null text (then equal to any null).
const VERIFY = /* wgsl */ `
struct Params { n: u32, keyCount: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<storage, read> bytes: array<u32>;
@group(0) @binding(1) var<storage, read> spans: array<u32>;
@group(0) @binding(2) var<storage, read> validMask: array<u32>;
@group(0) @binding(3) var<storage, read> owner: array<u32>;
@group(0) @binding(4) var<storage, read> rowSlot: array<u32>;
@group(0) @binding(5) var<storage, read_write> mismatch: atomic<u32>;
@group(0) @binding(6) var<uniform> p: Params;
${WGSL_BYTES}

fn sameField(a: u32, b: u32) -> bool {
  let aNull = (spans[2u * a] & 0x40000000u) != 0u;
  let bNull = (spans[2u * b] & 0x40000000u) != 0u;
  if (aNull || bNull) { return aNull == bNull; }
  let as0 = spans[2u * a] & 0x3fffffffu;
  let bs0 = spans[2u * b] & 0x3fffffffu;
  let len = spans[2u * a + 1u] - as0;
  if (len != spans[2u * b + 1u] - bs0) { return false; }
  for (var k = 0u; k < len; k++) {
    if (byteAt(as0 + k) != byteAt(bs0 + k)) { return false; }
  }
  return true;
}

// Every row with a key has the same key fields as the row owning its slot; mismatch = 1 otherwise.
@compute @workgroup_size(256)
fn verify_keys(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var r = gid.x; r < p.n; r += gridStride(nwg)) {
    if (((validMask[r >> 5u] >> (r & 31u)) & 1u) == 0u) { continue; }
    let o = owner[rowSlot[r]] - 1u;
    for (var k = 0u; k < p.keyCount && o != r; k++) {
      if (!sameField(k * p.n + r, k * p.n + o)) { atomicStore(&mismatch, 1u); }
    }
  }
}
`;

export const KEY_VERIFY_WGSL = WGSL_GRID + VERIFY;
