// Whether the device's subgroups are laid out the way subgroup kernels (prefix-scan.wgsl.ts)
// assume. WGSL promises neither a uniform subgroup size nor which invocations share a subgroup,
// so a tiny kernel looks once per device, when it is opened (openGpu), and the verdict is kept on
// the GpuContext: kernels are recorded synchronously and cannot wait for a readback.

import type { GpuContext } from './device.js';
import { runProbeKernel } from './probe-kernel.js';

export interface SubgroupLayout {
  /** Subgroup size every checked invocation saw, or null (sizes differed, or not checked). */
  size: number | null;
  /**
   * Subgroup kernels may assume full subgroups of that one size S, laid out linearly in a
   * 256-thread workgroup: subgroup k holds local invocation indices k·S … k·S+S−1, and
   * subgroup_invocation_id = index − k·S; with MIN_SUBGROUP_SIZE ≤ S ≤ 256.
   */
  usable: boolean;
  /** What the check found, in words (for logs and tests). */
  detail: string;
}

/**
 * Smallest subgroup size the kernels accept: 256/S subgroup totals, scanned S at a time, stay a
 * few rounds (lavapipe's 8-wide subgroups take 4; 32-wide ones one).
 */
export const MIN_SUBGROUP_SIZE = 4;

export const UNCHECKED_LAYOUT: SubgroupLayout = { size: null, usable: false, detail: 'not checked' };

const WORKGROUP = 256;
const WORKGROUPS = 4;
const WORDS = 5; // per invocation: local index, subgroup_invocation_id, subgroup_size, subgroup's min and max local index

const CHECK_WGSL = /* wgsl */ `
enable subgroups;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(${WORKGROUP})
fn check_layout(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
                @builtin(subgroup_invocation_id) id: u32, @builtin(subgroup_size) size: u32) {
  let o = (wid.x * ${WORKGROUP}u + li) * ${WORDS}u;
  out[o] = li;
  out[o + 1u] = id;
  out[o + 2u] = size;
  out[o + 3u] = subgroupMin(li);
  out[o + 4u] = subgroupMax(li);
}`;

/** Runs the check kernel on the device and judges what it wrote; never throws (a failure is a negative verdict). */
export async function checkSubgroupLayout(ctx: Pick<GpuContext, 'device' | 'hasSubgroups'>): Promise<SubgroupLayout> {
  if (!ctx.hasSubgroups) return { size: null, usable: false, detail: 'the device has no subgroups feature' };
  try {
    return judgeSubgroupLayout(await runProbeKernel(ctx.device, { code: CHECK_WGSL, entry: 'check_layout', label: 'subgroup layout check', outputWords: WORKGROUP * WORKGROUPS * WORDS, workgroups: WORKGROUPS }));
  } catch (err) {
    return { size: null, usable: false, detail: `the layout check failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** The verdict on the check kernel's output (WORDS per invocation, whole 256-thread workgroups). */
export function judgeSubgroupLayout(words: Uint32Array): SubgroupLayout {
  const sizes = new Set<number>();
  for (let o = 0; o < words.length; o += WORDS) sizes.add(words[o + 2]);
  if (sizes.size !== 1) return { size: null, usable: false, detail: `subgroup sizes vary: ${[...sizes].sort((a, b) => a - b).join(', ')}` };
  const size = [...sizes][0];
  if (size < MIN_SUBGROUP_SIZE || size > WORKGROUP || WORKGROUP % size !== 0) {
    return { size, usable: false, detail: `subgroup size ${size} is outside ${MIN_SUBGROUP_SIZE}…${WORKGROUP} or does not divide ${WORKGROUP}` };
  }
  // Linear and full: every invocation's subgroup spans exactly [k·S, k·S+S−1] and its id is its
  // offset there. (Ids are distinct within a subgroup and each subgroup's minimum is one of its
  // members, so these per-invocation facts pin the subgroups down.)
  for (let o = 0; o < words.length; o += WORDS) {
    const [index, id, , min, max] = words.subarray(o, o + WORDS);
    const first = index - (index % size);
    if (id !== index - first || min !== first || max !== first + size - 1) {
      return { size, usable: false, detail: `subgroups of ${size} are not laid out linearly (local index ${index}: id ${id}, subgroup spans ${min}…${max})` };
    }
  }
  return { size, usable: true, detail: `linear subgroups of ${size}` };
}
