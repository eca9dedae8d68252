// Exclusive prefix sum of u32 words, in place: each workgroup scans blocks of 1024 words
// (4 per thread, then a Hillis-Steele scan of thread totals in workgroup memory) and writes
// each block's total; the host scans the totals recursively and adds them back.
import { WGSL_GRID } from './wgsl-common.js';

export const PREFIX_SCAN_WGSL = /* wgsl */ `
${WGSL_GRID}
struct Params { n: u32, _a: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<storage, read_write> blockSums: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;
var<workgroup> totals: array<u32, 256>;

@compute @workgroup_size(256)
fn scan_blocks(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let nblocks = (p.n + 1023u) / 1024u;
  for (var b = wid.x; b < nblocks; b += nwg.x) {
    let base = b * 1024u + lid.x * 4u;
    var before: array<u32, 4>;
    var t = 0u;
    for (var k = 0u; k < 4u; k++) {
      let i = base + k;
      var x = 0u;
      if (i < p.n) { x = data[i]; }
      before[k] = t;
      t += x;
    }
    totals[lid.x] = t;
    workgroupBarrier();
    for (var off = 1u; off < 256u; off *= 2u) {
      var add = 0u;
      if (lid.x >= off) { add = totals[lid.x - off]; }
      workgroupBarrier();
      totals[lid.x] += add;
      workgroupBarrier();
    }
    let excl = totals[lid.x] - t;
    for (var k = 0u; k < 4u; k++) {
      let i = base + k;
      if (i < p.n) { data[i] = before[k] + excl; }
    }
    if (lid.x == 255u) { blockSums[b] = totals[255]; }
    workgroupBarrier();
  }
}

@compute @workgroup_size(256)
fn add_block_offsets(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.n; i += gridStride(nwg)) {
    data[i] += blockSums[i / 1024u];
  }
}
`;
