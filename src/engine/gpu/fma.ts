// Whether the device's WGSL fma() is fused (one rounding). WGSL and Vulkan allow fma(a, b, c) to
// round a × b first; NVIDIA's driver fuses it, lavapipe does not. Where it is fused, fma(a, b, -p)
// with p = a × b rounded is the product's exact rounding error in one instruction, so double-float
// products (linreg's Gram kernel) can skip Dekker's split: the same exact error, the same bits, in
// fewer instructions. Checked once per device when it is opened (openGpu), like the subgroups.

import type { GpuContext } from './device.js';
import { runProbeKernel } from './probe-kernel.js';

const PAIRS = 256;

/** Each invocation: fma(a, b, -p) for its pair, p = a × b rounded (kept from being folded into the fma, as the kernels do). */
const CHECK_WGSL = /* wgsl */ `
@group(0) @binding(0) var<storage, read> pairs: array<vec2f>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn check_fma(@builtin(global_invocation_id) g: vec3u) {
  let v = pairs[g.x];
  let zero = bitcast<u32>(pairs[${PAIRS}u].x); // 0: opaque to the compiler
  let p = bitcast<f32>(bitcast<u32>(v.x * v.y) ^ zero);
  out[g.x] = fma(v.x, v.y, -p);
}`;

/** Pairs of f32 values whose products need more than 24 bits, then a zero pair. */
export function fmaCheckPairs(): Float32Array {
  const pairs = new Float32Array(2 * PAIRS + 2);
  let state = 0x9e3779b9;
  const next = () => { state = (Math.imul(state, 1664525) + 1013904223) >>> 0; return state; };
  for (let i = 0; i < 2 * PAIRS; i++) pairs[i] = (1 + (next() >>> 8) * 2 ** -24) * 2 ** ((next() % 16) - 8) * (next() & 1 ? -1 : 1);
  return pairs;
}

/** Whether the outputs are every pair's exact product error (fma fused), from the pairs fmaCheckPairs gave. */
export function judgeFma(pairs: Float32Array, out: Float32Array): boolean {
  for (let i = 0; i < PAIRS; i++) {
    const a = pairs[2 * i], b = pairs[2 * i + 1];
    const exact = a * b - Math.fround(a * b); // a × b is exact in float64, and so is its f32 rounding error
    if (!Object.is(out[i], exact)) return false;
  }
  return true;
}

/** Runs the check on the device; never throws (a failure means not fused: the kernels keep Dekker's split). */
export async function checkFusedFma(ctx: Pick<GpuContext, 'device'>): Promise<boolean> {
  try {
    const pairs = fmaCheckPairs();
    const words = await runProbeKernel(ctx.device, { code: CHECK_WGSL, entry: 'check_fma', label: 'fma check', input: new Uint32Array(pairs.buffer), outputWords: PAIRS, workgroups: PAIRS / 64 });
    return judgeFma(pairs, new Float32Array(words.buffer));
  } catch {
    return false;
  }
}
