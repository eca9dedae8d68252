// CSV chunk scanning on the GPU (bytes packed 4 per u32 word).
// 1. quote_counts: '"' bytes per word; an exclusive scan gives the quote parity at each word,
//    so whether a byte is inside quotes needs no sequential pass (quoted newlines stay inside).
// 2. count_records / list_records: '\n' outside quotes ends a record; a scan of per-word counts
//    numbers them, and the second pass writes each record's end position. (Counts per 16 KiB
//    block instead of per word, with the blocks' own scans, took as long end to end on the H200:
//    BENCHMARKS.md, fifteenth session.)
// 3. parse_fields: one thread per record walks its fields and parses the selected columns:
//    int64 as (lo, hi) words, float64 as up to 19 mantissa digits (u64) and a decimal exponent,
//    from which the host forms the exact double. Anything unusual (more digits, inf/nan, stray
//    characters) is flagged for the host's parser, so the result always equals the CPU parser.
import { WGSL_GRID } from './wgsl-common.js';

/** byteAt(i): byte i of the module's `bytes: array<u32>` (4 bytes per word, little-endian). */
export const WGSL_BYTES = /* wgsl */ `
fn byteAt(i: u32) -> u32 { return (bytes[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu; }
`;

/** Record r's bytes, from the record ends of the boundary pass (needs a `recEnd` binding):
 *  a record starts after the previous one's line break; an empty line (LF or CR LF) is blank. */
export const WGSL_RECORDS = /* wgsl */ `
fn recordStart(r: u32) -> u32 { if (r == 0u) { return 0u; } return recEnd[r - 1u] + 1u; }
fn isBlankRecord(start: u32, end: u32) -> bool { return end == start || (end == start + 1u && byteAt(start) == 13u); }
`;

// Each thread takes a quad of words (16 bytes, one vec4 load) and finds its quotes and line breaks
// with whole-word bit arithmetic, one bit per byte, rather than a byte at a time. Bytes at or past
// nbytes are neither; so are the words past nwords, whose counts are written as 0.
const BOUNDARIES = /* wgsl */ `
struct Params { nbytes: u32, nwords: u32, _a: u32, _b: u32 }
@group(0) @binding(0) var<storage, read> chunk: array<vec4u>;
@group(0) @binding(1) var<storage, read_write> quotes: array<vec4u>;
@group(0) @binding(2) var<storage, read_write> recs: array<vec4u>;
@group(0) @binding(3) var<storage, read_write> recEnd: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

/** 0x80 in each byte of v that is 0, and 0 in the others (exact: no borrow crosses a byte). */
fn zeroBytes(v: u32) -> u32 { return ~(((v & 0x7f7f7f7fu) + 0x7f7f7f7fu) | v | 0x7f7f7f7fu); }
/** The top bit of each byte of word w that lies in the chunk (bytes 4w .. 4w + 3, little-endian). */
fn inChunk(w: u32) -> u32 {
  let first = 4u * w;
  if (first + 4u <= p.nbytes) { return 0x80808080u; }
  if (first >= p.nbytes) { return 0u; }
  return 0x80808080u >> (8u * (4u - (p.nbytes - first)));
}
/** Bit k set where byte k of word w (value v) is \`b\` (b repeated in all four bytes of \`bbbb\`). */
fn bytesEqual(v: u32, w: u32, bbbb: u32) -> u32 {
  let m = zeroBytes(v ^ bbbb) & inChunk(w);
  return ((m >> 7u) & 1u) | ((m >> 14u) & 2u) | ((m >> 21u) & 4u) | ((m >> 28u) & 8u);
}
fn quoteBits(v: u32, w: u32) -> u32 { return bytesEqual(v, w, 0x22222222u); }
/** Bit k set where byte k of word w ends a record: a '\\n' outside quotes, \`before\` quotes preceding the word. */
fn endBits(v: u32, w: u32, before: u32) -> u32 {
  let q = quoteBits(v, w);
  // Bit k: the parity of the word's quotes before byte k, flipped when an odd number precede it.
  let inside = (q << 1u) ^ (q << 2u) ^ (q << 3u) ^ select(0u, 0xfu, (before & 1u) != 0u);
  return bytesEqual(v, w, 0x0a0a0a0au) & ~inside;
}

@compute @workgroup_size(256)
fn quote_counts(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var t = gid.x; 4u * t < p.nwords; t += gridStride(nwg)) {
    let v = chunk[t];
    let w = 4u * t;
    quotes[t] = vec4u(countOneBits(quoteBits(v.x, w)), countOneBits(quoteBits(v.y, w + 1u)), countOneBits(quoteBits(v.z, w + 2u)), countOneBits(quoteBits(v.w, w + 3u)));
  }
}

// Record ends per word (quotes[] holds the scanned quote counts).
@compute @workgroup_size(256)
fn count_records(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var t = gid.x; 4u * t < p.nwords; t += gridStride(nwg)) {
    let v = chunk[t];
    let q = quotes[t];
    let w = 4u * t;
    recs[t] = vec4u(countOneBits(endBits(v.x, w, q.x)), countOneBits(endBits(v.y, w + 1u, q.y)), countOneBits(endBits(v.z, w + 2u, q.z)), countOneBits(endBits(v.w, w + 3u, q.w)));
  }
}

/** Writes the record ends of word w from record number \`first\` on (recs[] holds the scanned record counts). */
fn listEnds(v: u32, w: u32, before: u32, first: u32) {
  var ends = endBits(v, w, before);
  var r = first;
  while (ends != 0u) {
    recEnd[r] = 4u * w + firstTrailingBit(ends);
    r += 1u;
    ends &= ends - 1u;
  }
}

@compute @workgroup_size(256)
fn list_records(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var t = gid.x; 4u * t < p.nwords; t += gridStride(nwg)) {
    let v = chunk[t];
    let q = quotes[t];
    let r = recs[t];
    let w = 4u * t;
    listEnds(v.x, w, q.x, r.x);
    listEnds(v.y, w + 1u, q.y, r.y);
    listEnds(v.z, w + 2u, q.z, r.z);
    listEnds(v.w, w + 3u, q.w, r.w);
  }
}
`;

// Output per (record, selected column): 4 words [a, b, c, status].
//   status 0 int: a,b = value lo,hi | float: a,b = mantissa lo,hi, c = exponent (i32); 0x100 = negative
//   status 1 null (empty field); 2 host parses bytes [a, b); 3 the record has too few fields;
//   4 blank record (skipped)
// Number parsers shared with csv-rows.wgsl.ts; the module declares `bytes` and
// emit(slot, a, b, c, status), which receives each result.
const NUMBERS = /* wgsl */ `
fn mul10add(v: vec2u, d: u32) -> vec2u {
  let p0 = (v.x & 0xffffu) * 10u + d;
  let p1 = (v.x >> 16u) * 10u + (p0 >> 16u);
  return vec2u((p0 & 0xffffu) | (p1 << 16u), v.y * 10u + (p1 >> 16u));
}

fn isDigit(b: u32) -> bool { return b >= 48u && b <= 57u; }

fn parseInt(slot: u32, s0: u32, e: u32) {
  var s = s0;
  var neg = false;
  let first = byteAt(s);
  if (first == 45u || first == 43u) { neg = first == 45u; s += 1u; }
  if (s >= e || e - s > 18u) { emit(slot, s0, e, 0u, 2u); return; }
  var v = vec2u(0u, 0u);
  for (var i = s; i < e; i++) {
    let b = byteAt(i);
    if (!isDigit(b)) { emit(slot, s0, e, 0u, 2u); return; }
    v = mul10add(v, b - 48u);
  }
  if (neg) {
    let lo = ~v.x + 1u;
    v = vec2u(lo, ~v.y + select(0u, 1u, lo == 0u));
  }
  emit(slot, v.x, v.y, 0u, 0u);
}

fn parseFloat(slot: u32, s0: u32, e: u32) {
  var s = s0;
  var neg = false;
  let first = byteAt(s);
  if (first == 45u || first == 43u) { neg = first == 45u; s += 1u; }
  var m = vec2u(0u, 0u);
  var digits = 0u;      // significant digits kept in m
  var seen = 0u;        // mantissa digits seen
  var exp10 = 0i;
  var afterPoint = false;
  var i = s;
  for (; i < e; i++) {
    let b = byteAt(i);
    if (b == 46u && !afterPoint) { afterPoint = true; continue; }
    if (!isDigit(b)) { break; }
    seen += 1u;
    if (digits == 0u && b == 48u) { if (afterPoint) { exp10 -= 1i; } continue; }
    if (digits == 19u) { emit(slot, s0, e, 0u, 2u); return; }
    m = mul10add(m, b - 48u);
    digits += 1u;
    if (afterPoint) { exp10 -= 1i; }
  }
  if (seen == 0u) { emit(slot, s0, e, 0u, 2u); return; }
  if (i < e) {
    let b = byteAt(i);
    if (b != 101u && b != 69u) { emit(slot, s0, e, 0u, 2u); return; }
    i += 1u;
    var eneg = false;
    if (i < e && (byteAt(i) == 45u || byteAt(i) == 43u)) { eneg = byteAt(i) == 45u; i += 1u; }
    if (i >= e || e - i > 4u) { emit(slot, s0, e, 0u, 2u); return; }
    var ev = 0i;
    for (; i < e; i++) {
      let d = byteAt(i);
      if (!isDigit(d)) { emit(slot, s0, e, 0u, 2u); return; }
      ev = ev * 10i + i32(d - 48u);
    }
    exp10 += select(ev, -ev, eneg);
  }
  emit(slot, m.x, m.y, bitcast<u32>(exp10), select(0u, 0x100u, neg));
}
`;

const PARSE = /* wgsl */ `
struct Params { records: u32, ncols: u32, _a: u32, _b: u32, cols: array<vec4u, 16> }
@group(0) @binding(0) var<storage, read> bytes: array<u32>;
@group(0) @binding(1) var<storage, read> recEnd: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;
${WGSL_BYTES}
${WGSL_RECORDS}
${NUMBERS}

fn emit(slot: u32, a: u32, b: u32, c: u32, status: u32) {
  out[4u * slot] = a; out[4u * slot + 1u] = b; out[4u * slot + 2u] = c; out[4u * slot + 3u] = status;
}

fn parseField(slot: u32, kind: u32, s0: u32, e0: u32) {
  var s = s0;
  var e = e0;
  if (e > s && byteAt(e - 1u) == 13u) { e -= 1u; }
  // A quoted number: drop the quotes (an escaped quote inside goes to the host).
  if (e - s >= 2u && byteAt(s) == 34u && byteAt(e - 1u) == 34u) { s += 1u; e -= 1u; }
  if (s == e) { emit(slot, 0u, 0u, 0u, 1u); return; }
  if (kind == 0u) { parseInt(slot, s, e); } else { parseFloat(slot, s, e); }
}

@compute @workgroup_size(256)
fn parse_fields(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var r = gid.x; r < p.records; r += gridStride(nwg)) {
    let start = recordStart(r);
    let end = recEnd[r];
    let base = r * p.ncols;
    if (isBlankRecord(start, end)) {
      for (var j = 0u; j < p.ncols; j++) { emit(base + j, 0u, 0u, 0u, 4u); }
      continue;
    }
    var field = 0u;
    var fieldStart = start;
    var inQuotes = false;
    var done = 0u;
    for (var i = start; i <= end; i++) {
      var b = 10u;
      if (i < end) { b = byteAt(i); }
      if (b == 34u) { inQuotes = !inQuotes; }
      if (!inQuotes && (b == 44u || i == end)) {
        for (var j = 0u; j < p.ncols; j++) {
          if (p.cols[j].x == field) { parseField(base + j, p.cols[j].y, fieldStart, i); done += 1u; }
        }
        field += 1u;
        fieldStart = i + 1u;
        if (done == p.ncols) { break; }
      }
    }
    for (var j = 0u; j < p.ncols; j++) {
      if (p.cols[j].x >= field) { emit(base + j, 0u, 0u, 0u, 3u); }
    }
  }
}
`;

export const CSV_BOUNDARIES_WGSL = WGSL_GRID + BOUNDARIES;
export const CSV_PARSE_WGSL = WGSL_GRID + PARSE;
/** parseInt / parseFloat(slot, start, end): pass [a, b, c, status] (as above) to the module's emit(slot, ...). */
export const WGSL_CSV_NUMBERS = NUMBERS;
