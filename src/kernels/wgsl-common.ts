// WGSL snippets shared by several kernels (pasted into their modules).

/**
 * A WGSL generator that builds each source once per argument list: kernels are looked up at every
 * dispatch, and building an unrolled source again takes tens of microseconds each time.
 */
export function memoWgsl<A extends unknown[]>(build: (...args: A) => string): (...args: A) => string {
  const built = new Map<string, string>();
  return (...args) => {
    const key = JSON.stringify(args);
    let code = built.get(key);
    if (code === undefined) { code = build(...args); built.set(key, code); }
    return code;
  };
}

/** Grid-stride loops: every kernel runs @workgroup_size(256) over a capped number of workgroups. */
export const WGSL_GRID = /* wgsl */ `
const WG: u32 = 256u;
fn gridStride(nwg: vec3u) -> u32 { return nwg.x * WG; }
`;

/** The murmur3 finaliser, as mix32 in src/engine/ml/random.ts (the row hashes of random.ts use it). */
export const WGSL_MIX32 = /* wgsl */ `
fn mix32(v: u32) -> u32 {
  var x = (v ^ (v >> 16u)) * 0x85ebca6bu;
  x = (x ^ (x >> 13u)) * 0xc2b2ae35u;
  return x ^ (x >> 16u);
}
`;

/** rowHash32 of src/engine/ml/random.ts (the first word of rowUniform's hash); needs WGSL_MIX32 in the module. */
export const WGSL_ROW_HASH = /* wgsl */ `
fn rowHash32(key: u32, i: u32) -> u32 { return mix32(key ^ mix32(i + 0x632be5abu)); }
`;

/** 32-bit hash of a key given as two u32 words (murmur3-style mixing). */
export const WGSL_HASH2 = /* wgsl */ `
fn hash2(a: u32, b: u32) -> u32 {
  var h = a * 0xcc9e2d51u;
  h = (h << 15u) | (h >> 17u);
  h = h ^ (b * 0x1b873593u);
  h = h ^ (h >> 16u); h = h * 0x85ebca6bu;
  h = h ^ (h >> 13u); h = h * 0xc2b2ae35u;
  h = h ^ (h >> 16u);
  return h;
}
`;

/**
 * Bit `i` of the module's packed validity mask `validMask` (1 = present); `hasNulls == 0` means
 * every row is present. The module declares `validMask: array<u32>`.
 */
export const WGSL_VALID = /* wgsl */ `
fn isPresent(hasNulls: u32, i: u32) -> bool {
  if (hasNulls == 0u) { return true; }
  return ((validMask[i >> 5u] >> (i & 31u)) & 1u) == 1u;
}
`;
