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

const BOUNDARIES = /* wgsl */ `
struct Params { nbytes: u32, nwords: u32, _a: u32, _b: u32 }
@group(0) @binding(0) var<storage, read> bytes: array<u32>;
@group(0) @binding(1) var<storage, read_write> quotes: array<u32>;
@group(0) @binding(2) var<storage, read_write> recs: array<u32>;
@group(0) @binding(3) var<storage, read_write> recEnd: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;
${WGSL_BYTES}

@compute @workgroup_size(256)
fn quote_counts(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var w = gid.x; w < p.nwords; w += gridStride(nwg)) {
    var q = 0u;
    for (var k = 0u; k < 4u; k++) {
      let i = 4u * w + k;
      if (i < p.nbytes && byteAt(i) == 34u) { q += 1u; }
    }
    quotes[w] = q;
  }
}

// Record ends in word w (quotes[] holds the scanned quote counts); writes them when asked.
fn recordEnds(w: u32, write: bool) -> u32 {
  var q = quotes[w];
  var found = 0u;
  for (var k = 0u; k < 4u; k++) {
    let i = 4u * w + k;
    if (i >= p.nbytes) { break; }
    let b = byteAt(i);
    if (b == 34u) { q += 1u; }
    if (b == 10u && (q & 1u) == 0u) {
      if (write) { recEnd[recs[w] + found] = i; }
      found += 1u;
    }
  }
  return found;
}

@compute @workgroup_size(256)
fn count_records(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var w = gid.x; w < p.nwords; w += gridStride(nwg)) { recs[w] = recordEnds(w, false); }
}

@compute @workgroup_size(256)
fn list_records(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var w = gid.x; w < p.nwords; w += gridStride(nwg)) { _ = recordEnds(w, true); }
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
