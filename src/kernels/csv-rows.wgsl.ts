// split_rows: one thread per record (record ends from csv-scan's boundary kernels) walks its
// fields with the CPU tokenizer's rules (src/engine/io/csv/tokenizer.ts) and, for each selected
// column: null texts (--null-values) -> null; int64 -> its (lo, hi) words; float64 -> the bits of
// the correctly rounded double (csv-float.wgsl.ts); text -> only its validity, and for a key
// column its 64-bit hash (key-hash.wgsl.ts). Values and validity go to column-major arrays the host
// can use as they are. The group-by key (writeKey), its validity bit and each key field's byte
// span go to arrays of their own, for the group-by table and the exact key check.
//
// A workgroup takes tiles of 256 consecutive records. Validity bits and null counts are gathered
// in workgroup memory and written once per tile with plain stores, not as device atomics (one per
// field and record, four records sharing a word: 3% of the kernel's time on an H200).
//
// Whatever the CPU reader would reject or the GPU does not parse is not reported row by row: it
// sets a bit in counters[0], and the host reads that chunk with the CPU reader instead.
//   1 blank record      2 wrong number of fields      4 quote misuse (CPU: syntax error)
//   8 a value the GPU does not parse (spaces, inf/nan, > 18 digits, |exponent| > 22, doubled quotes, bad text)
import { WGSL_GRID } from './wgsl-common.js';
import { WGSL_BYTES, WGSL_CSV_NUMBERS, WGSL_RECORDS } from './csv-scan.wgsl.js';
import { WGSL_FIELD_HASH } from './key-hash.wgsl.js';
import { WGSL_DECIMAL_TABLE_FIELDS, WGSL_DECIMAL_TO_F64 } from './csv-float.wgsl.js';

const SPLIT = /* wgsl */ `
struct Params {
  records: u32, ncols: u32, width: u32, keyCount: u32,
  hashMask: u32, nullTexts: u32, validStride: u32, flags: u32, // flags: 1 exact int key, 2 dropna, bits 8-15 delimiter
  // Column position j of each key, in key order.
  keyCols: vec4u,
  // x = field index, y = kind (0 int64, 1 float64, 2 text)
  cols: array<vec4u, 16>,
  // Up to 8 null texts of up to 16 bytes: lengths, then bytes (4 per word, little-endian).
  nullLen: array<vec4u, 2>,
  nullText: array<vec4u, 8>,
  ${WGSL_DECIMAL_TABLE_FIELDS}
}
@group(0) @binding(0) var<storage, read> bytes: array<u32>;
@group(0) @binding(1) var<storage, read> recEnd: array<u32>;
// 2 words per (column j, record r) at 2 * (j * records + r).
@group(0) @binding(2) var<storage, read_write> vals: array<u32>;
// 1 byte per (column j, record r): 1 = present; column j starts at word j * validStride.
@group(0) @binding(3) var<storage, read_write> validBytes: array<u32>;
@group(0) @binding(4) var<storage, read_write> keyWords: array<u32>;
// 1 bit per record: the record has a group key.
@group(0) @binding(5) var<storage, read_write> keyMask: array<u32>;
// 2 words per (key k, record r) at 2 * (k * records + r): see key-hash.wgsl.ts.
@group(0) @binding(6) var<storage, read_write> keySpans: array<u32>;
// [0] problem bits, [1 + j] nulls in column j.
@group(0) @binding(7) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(8) var<uniform> p: Params;
${WGSL_BYTES}
${WGSL_RECORDS}
${WGSL_CSV_NUMBERS}
${WGSL_FIELD_HASH}
${WGSL_DECIMAL_TO_F64}

const TILE: u32 = 256u;
const KEY_BIT: u32 = 0x10000u;
// The outcome of each of the tile's records: bit j = column j present, KEY_BIT = has a group key.
var<workgroup> rowBits: array<u32, TILE>;
var<workgroup> tileNulls: array<atomic<u32>, 16>;
var<workgroup> tileProblems: atomic<u32>;
// The record at hand's outcome bits.
var<private> recordBits: u32;

// What csv-scan's number parsers produce for the field at hand: [a, b, c, status].
var<private> parsed: vec4u;
// The record's key fields: their words (hash or int64) and whether they are null.
var<private> keyVal: array<vec2u, 4>;
var<private> keyNull: array<bool, 4>;

fn keyOrdinal(j: u32) -> u32 {
  for (var k = 0u; k < p.keyCount; k++) { if (p.keyCols[k] == j) { return k; } }
  return 0xffffffffu;
}
fn emit(slot: u32, a: u32, b: u32, c: u32, status: u32) { parsed = vec4u(a, b, c, status); }

fn problem(bit: u32) { atomicOr(&tileProblems, bit); }

fn isNullText(s: u32, e: u32) -> bool {
  let len = e - s;
  for (var t = 0u; t < p.nullTexts; t++) {
    if (p.nullLen[t / 4u][t % 4u] != len) { continue; }
    var same = true;
    for (var k = 0u; k < len; k++) {
      let w = p.nullText[t][k / 4u];
      if (((w >> ((k % 4u) * 8u)) & 0xffu) != byteAt(s + k)) { same = false; break; }
    }
    if (same) { return true; }
  }
  return false;
}

fn handleField(j: u32, r: u32, s: u32, e: u32, escaped: bool) {
  let slot = j * p.records + r;
  let kind = p.cols[j].y;
  let k = keyOrdinal(j);
  let isKey = k != 0xffffffffu;
  vals[2u * slot] = 0u;
  vals[2u * slot + 1u] = 0u;
  // As the CPU: a field holding doubled quotes is never a null text.
  let isNull = !escaped && isNullText(s, e);
  if (isKey) {
    keySpans[2u * (k * p.records + r)] = s | select(0u, 0x80000000u, escaped) | select(0u, 0x40000000u, isNull);
    keySpans[2u * (k * p.records + r) + 1u] = e;
    keyNull[k] = isNull;
  }
  if (isNull) { atomicAdd(&tileNulls[j], 1u); return; }
  var v = vec2u(0u, 0u);
  if (kind == 2u) {
    if (isKey) { v = fieldHash(s, e); }
  } else if (escaped) {
    problem(8u);
    return;
  } else if (kind == 0u) {
    parseInt(slot, s, e);
    if (parsed.w == 2u) { problem(8u); return; }
    v = parsed.xy;
  } else {
    parseFloat(slot, s, e);
    if ((parsed.w & 0xffu) == 2u) { problem(8u); return; }
    v = decimalToF64(parsed.xy, bitcast<i32>(parsed.z), (parsed.w & 0x100u) != 0u);
    if (!f64ok) { problem(8u); return; }
  }
  vals[2u * slot] = v.x;
  vals[2u * slot + 1u] = v.y;
  recordBits |= 1u << j;
  if (isKey) { keyVal[k] = v; }
}

// The record's group-by key: a single int64 key as it is; otherwise a hash of every key field
// (null ones as a marker), present unless --dropna and some key is null.
fn writeKey(r: u32) {
  var present = true;
  var w = keyVal[0];
  if ((p.flags & 1u) != 0u) {
    present = !keyNull[0];
  } else {
    var a = 0x3c6ef372u;
    var b = 0x9e3779b9u;
    for (var k = 0u; k < p.keyCount; k++) {
      var v = keyVal[k];
      if (keyNull[k]) { v = vec2u(0x7f4a7c15u, 0xf39cc060u); present = present && (p.flags & 2u) == 0u; }
      a = hashLane(hashLane(a, v.x), v.y);
      b = hashLane(hashLane(b, v.y ^ 0x5bd1e995u), v.x);
    }
    w = vec2u(finalLane(a), finalLane(b ^ a)) & vec2u(p.hashMask, p.hashMask);
  }
  keyWords[2u * r] = select(0u, w.x, present);
  keyWords[2u * r + 1u] = select(0u, w.y, present);
  if (present) { recordBits |= KEY_BIT; }
}

// Walks record r (from the previous record's end to its own '\\n'); returns its outcome bits.
fn splitRecord(r: u32) -> u32 {
  recordBits = 0u;
  let start = recordStart(r);
  let end = recEnd[r];
  if (isBlankRecord(start, end)) { problem(1u); return 0u; }
  for (var k = 0u; k < 4u; k++) { keyVal[k] = vec2u(0u, 0u); keyNull[k] = false; }
  let delim = (p.flags >> 8u) & 0xffu;
  var field = 0u;
  var i = start;
  loop {
    var s = i;
    var e = i;
    var escaped = false;
    var next = i;
    if (i < end && byteAt(i) == 34u) {
      // Quoted: the content runs to the first quote not doubled; the record's '\\n' lies outside.
      s = i + 1u;
      var q = s;
      loop {
        if (q >= end) { problem(4u); break; }
        if (byteAt(q) == 34u) {
          if (q + 1u < end && byteAt(q + 1u) == 34u) { escaped = true; q += 2u; continue; }
          break;
        }
        q += 1u;
      }
      e = q;
      next = q + 1u;
      if (next < end) {
        let b = byteAt(next);
        if (b == 13u && next + 1u == end) { next = end; } else if (b != delim) { problem(4u); }
      }
    } else {
      var q = i;
      loop {
        if (q >= end) { break; }
        let b = byteAt(q);
        if (b == delim) { break; }
        if (b == 34u) { problem(4u); }
        q += 1u;
      }
      e = q;
      // A '\\r' ending the record's last field belongs to its CRLF.
      if (q == end && e > s && byteAt(e - 1u) == 13u) { e -= 1u; }
      next = q;
    }
    for (var j = 0u; j < p.ncols; j++) {
      if (p.cols[j].x == field) { handleField(j, r, s, e, escaped); }
    }
    field += 1u;
    if (next >= end) { break; }
    i = next + 1u;
  }
  if (field != p.width) { problem(2u); }
  if (p.keyCount > 0u) { writeKey(r); }
  return recordBits;
}

@compute @workgroup_size(256)
fn split_rows(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let tiles = (p.records + TILE - 1u) / TILE;
  if (lid < 16u) { atomicStore(&tileNulls[lid], 0u); }
  if (lid == 0u) { atomicStore(&tileProblems, 0u); }
  workgroupBarrier();
  for (var t = wid.x; t < tiles; t += nwg.x) {
    let r = t * TILE + lid;
    var bits = 0u;
    if (r < p.records) { bits = splitRecord(r); }
    rowBits[lid] = bits;
    workgroupBarrier();
    // Validity bytes: 64 words per column for the tile's 256 records (4 records a word).
    for (var q = lid; q < p.ncols * 64u; q += TILE) {
      let j = q / 64u;
      let w = q % 64u;
      if (t * 64u + w < p.validStride) {
        var word = 0u;
        for (var b = 0u; b < 4u; b++) { word |= ((rowBits[4u * w + b] >> j) & 1u) << (8u * b); }
        validBytes[j * p.validStride + t * 64u + w] = word;
      }
    }
    if (p.keyCount > 0u && lid < 8u && t * 8u + lid < (p.records + 31u) / 32u) {
      var mask = 0u;
      for (var b = 0u; b < 32u; b++) { mask |= select(0u, 1u << b, (rowBits[32u * lid + b] & KEY_BIT) != 0u); }
      keyMask[t * 8u + lid] = mask;
    }
    // Counts go out and start again at zero (each by the thread that adds it out).
    if (lid < p.ncols) {
      let nulls = atomicExchange(&tileNulls[lid], 0u);
      if (nulls != 0u) { atomicAdd(&counters[1u + lid], nulls); }
    }
    if (lid == 0u) {
      let bits = atomicExchange(&tileProblems, 0u);
      if (bits != 0u) { atomicOr(&counters[0], bits); }
    }
    // The next tile reuses rowBits and the counts.
    workgroupBarrier();
  }
}
`;

// valid_bits: one column's validity bytes (4 per word, 0 or 1) packed into bits (32 rows per word).
const VALID_BITS = /* wgsl */ `
struct Params { words: u32, fromWord: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<storage, read> validBytes: array<u32>;
@group(0) @binding(1) var<storage, read_write> bits: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn valid_bits(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var w = gid.x; w < p.words; w += gridStride(nwg)) {
    var out = 0u;
    for (var k = 0u; k < 8u; k++) {
      let b = validBytes[p.fromWord + 8u * w + k];
      out = out | ((b & 1u) << (4u * k)) | (((b >> 8u) & 1u) << (4u * k + 1u)) | (((b >> 16u) & 1u) << (4u * k + 2u)) | (((b >> 24u) & 1u) << (4u * k + 3u));
    }
    bits[w] = out;
  }
}
`;

export const CSV_ROWS_WGSL = WGSL_GRID + SPLIT;
export const CSV_VALID_BITS_WGSL = WGSL_GRID + VALID_BITS;
export const CSV_ROW_PROBLEMS = { blank: 1, ragged: 2, quotes: 4, value: 8 } as const;
