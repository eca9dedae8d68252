// Exclusive prefix sum of u32 words, in place: each workgroup scans blocks of 1024 words
// (a quad per thread, then a Hillis-Steele scan of thread totals in workgroup memory) and writes
// each block's total; the host scans the totals recursively and adds them back.
// PREFIX_SCAN_SUBGROUPS_WGSL is a scan_blocks with the same bindings, blocks and results that
// scans thread totals with subgroup operations; prefix-scan.ts picks it where subgroups are
// laid out as it assumes (engine/gpu/subgroups.ts).
import { WGSL_GRID } from './wgsl-common.js';

// Words go in and out a quad at a time (one vec4 load and store: 16-byte accesses reach HBM speed
// where 4-byte ones did not), so the buffer holds whole quads (storageBuffer's sizes are multiples
// of 16 bytes: exclusiveScan checks). Words of the last quad at or past n are written back as read.
const SCAN_BINDINGS = /* wgsl */ `
struct Params { n: u32, _a: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<storage, read_write> data: array<vec4u>;
@group(0) @binding(1) var<storage, read_write> blockSums: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

// Which words of the quad from word base (a multiple of 4) are in the scan (below n).
fn inScan(base: u32) -> vec4<bool> { return vec4u(base) + vec4u(0u, 1u, 2u, 3u) < vec4u(p.n); }

// A thread's quad of words from word base (a multiple of 4): the words as read, each one's
// exclusive sum within the quad, and their total (words at or past n count as 0).
struct Four { words: vec4u, before: vec4u, total: u32 }

fn loadFour(base: u32) -> Four {
  var f: Four;
  if (base >= p.n) { return f; }
  f.words = data[base / 4u];
  let x = select(vec4u(0u), f.words, inScan(base));
  f.before = vec4u(0u, x.x, x.x + x.y, x.x + x.y + x.z);
  f.total = f.before.w + x.w;
  return f;
}

// Writes the quad's exclusive sums, each plus offset (the sum of everything before them).
fn storeFour(base: u32, f: Four, offset: u32) {
  if (base >= p.n) { return; }
  data[base / 4u] = select(f.words, f.before + vec4u(offset), inScan(base));
}`;

export const PREFIX_SCAN_WGSL = /* wgsl */ `
${WGSL_GRID}
${SCAN_BINDINGS}
var<workgroup> totals: array<u32, 256>;

@compute @workgroup_size(256)
fn scan_blocks(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let nblocks = (p.n + 1023u) / 1024u;
  for (var b = wid.x; b < nblocks; b += nwg.x) {
    let base = b * 1024u + lid.x * 4u;
    let four = loadFour(base);
    let t = four.total;
    totals[lid.x] = t;
    workgroupBarrier();
    for (var off = 1u; off < 256u; off *= 2u) {
      var add = 0u;
      if (lid.x >= off) { add = totals[lid.x - off]; }
      workgroupBarrier();
      totals[lid.x] += add;
      workgroupBarrier();
    }
    storeFour(base, four, totals[lid.x] - t);
    if (lid.x == 255u) { blockSums[b] = totals[255]; }
    workgroupBarrier();
  }
}

@compute @workgroup_size(256)
fn add_block_offsets(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  // A quad a thread; a quad's four words lie in one block of 1024.
  for (var q = gid.x; 4u * q < p.n; q += gridStride(nwg)) {
    data[q] += select(vec4u(0u), vec4u(blockSums[q / 256u]), inScan(4u * q));
  }
}
`;

// Assumes full subgroups of one size S (4 ≤ S ≤ 256, dividing 256) laid out linearly: subgroup k
// holds local indices k·S … k·S+S−1, lane = index − k·S. Per block: a subgroup scan of the thread
// totals, one total per subgroup into workgroup memory, one barrier; then every subgroup scans the
// 256/S subgroup totals itself, S at a time (once when S ≥ 16), instead of one subgroup scanning
// them behind a second barrier. Sums wrap like the plain kernel's, so results match bit for bit.
export const PREFIX_SCAN_SUBGROUPS_WGSL = /* wgsl */ `
enable subgroups;
${SCAN_BINDINGS}
// Two sets of up to 64 subgroup totals, used by alternate blocks: a subgroup may write the next
// block's totals while slower ones still read this block's, so the trailing barrier goes too.
var<workgroup> sgTotals: array<u32, 128>;

@compute @workgroup_size(256)
fn scan_blocks(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgSize: u32) {
  let nblocks = (p.n + 1023u) / 1024u;
  let sg = li / sgSize; // this thread's subgroup (linear layout)
  let nsg = 256u / sgSize;
  var half = 0u; // which set of subgroup totals this block uses: 0 or 64
  for (var b = wid.x; b < nblocks; b += nwg.x) {
    let base = b * 1024u + li * 4u;
    let four = loadFour(base);
    let t = four.total;
    let inSubgroup = subgroupExclusiveAdd(t);
    if (lane == sgSize - 1u) { sgTotals[half + sg] = inSubgroup + t; }
    workgroupBarrier();
    // Scan the subgroup totals S at a time; keep the exclusive sum at this thread's subgroup.
    var sgOffset = 0u;
    var total = 0u;
    for (var c = 0u; c < nsg; c += sgSize) {
      var x = 0u;
      if (c + lane < nsg) { x = sgTotals[half + c + lane]; }
      let atMine = subgroupShuffle(subgroupExclusiveAdd(x), sg % sgSize);
      if (sg / sgSize == c / sgSize) { sgOffset = total + atMine; }
      total += subgroupAdd(x);
    }
    storeFour(base, four, sgOffset + inSubgroup);
    if (li == 0u) { blockSums[b] = total; }
    half = 64u - half;
  }
}
`;
