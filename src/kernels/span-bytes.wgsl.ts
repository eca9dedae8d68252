// Byte spans of a device buffer packed one after another: a thread assembles one output word, and
// finds the span of each of its bytes by binary search over the spans' output offsets.
import { WGSL_GRID } from './wgsl-common.js';

const GATHER_SPANS = /* wgsl */ `
struct Params { spans: u32, words: u32, total: u32, _pad: u32 }
@group(0) @binding(0) var<storage, read> bytes: array<u32>;
@group(0) @binding(1) var<storage, read> starts: array<u32>;
@group(0) @binding(2) var<storage, read> offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> packed: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

// The span holding output byte pos: offsets[s] <= pos < offsets[s + 1] (empty spans never do).
fn spanOf(pos: u32) -> u32 {
  var lo = 0u;
  var hi = p.spans;
  while (hi - lo > 1u) {
    let mid = (lo + hi) / 2u;
    if (offsets[mid] <= pos) { lo = mid; } else { hi = mid; }
  }
  return lo;
}

@compute @workgroup_size(256)
fn gather_spans(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var w = gid.x; w < p.words; w += gridStride(nwg)) {
    var word = 0u;
    for (var b = 0u; b < 4u; b++) {
      let pos = 4u * w + b;
      if (pos >= p.total) { break; }
      let s = spanOf(pos);
      let src = starts[s] + (pos - offsets[s]);
      word |= ((bytes[src >> 2u] >> ((src & 3u) * 8u)) & 0xffu) << (8u * b);
    }
    packed[w] = word;
  }
}
`;

export const GATHER_SPANS_WGSL = WGSL_GRID + GATHER_SPANS;
