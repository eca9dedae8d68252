// Compile times of the ML kernels in a fresh process: each kernel's pipeline made with
// createComputePipelineAsync, one after another, timed on the host (WGSL to SPIR-V in Dawn, then
// the driver's compiler; NVIDIA keeps a disk cache of the latter: run twice, or with
// __GL_SHADER_DISK_CACHE=0 for cold compiles every time). Run after `npm run build`:
//   node bench/ml-compile.mjs            (env: D=32 K=64)
import { performance } from 'node:perf_hooks';

const dist = (p) => import(new URL(`../dist/${p}`, import.meta.url).href);
const D = Number(process.env.D ?? 32), K = Number(process.env.K ?? 64);
const { openGpu } = await dist('engine/gpu/device.js');
const { kmeansStepWgsl, kmeansPpUpdateWgsl, kmeansPpPotentialWgsl, KMEANS_MAX_ABS_WGSL, KMEANS_PAR_SAMPLE_WGSL, KMEANS_SMALLEST_HASH_WGSL } = await dist('kernels/kmeans.wgsl.js');
const { linregGramWgsl, LINREG_RESIDUAL_WGSL } = await dist('kernels/linreg.wgsl.js');
const { BLOCK_SUMS_WGSL, REDUCE_BLOCKS_WGSL, ML_MATRIX_WGSL } = await dist('kernels/ml-matrix.wgsl.js');

const t0 = performance.now();
const ctx = await openGpu({ allowSoftware: true });
await ctx.checked;
console.log(`device open and checked: ${(performance.now() - t0).toFixed(0)} ms (fma ${ctx.fusedFma ? 'fused' : 'not fused'})`);
const kernels = [
  [`kmeans step d ${D} k ${K} (sums in workgroup memory)`, kmeansStepWgsl(D, K, true), 'step'],
  [`kmeans step d ${D} k ${K}, counts only (k-means|| weights)`, kmeansStepWgsl(D, K, true, { countsOnly: true }), 'step'],
  [`kmeans step d ${D} k ${K}, features read again (a loop, not written out)`, kmeansStepWgsl(D, K, true, { fromRegisters: false }), 'step'],
  ['kmeans column maxima', KMEANS_MAX_ABS_WGSL, 'max_abs'],
  [`kmeans++ update d ${D}`, kmeansPpUpdateWgsl(D), 'pp_update'],
  [`kmeans++ potential d ${D}`, kmeansPpPotentialWgsl(D), 'pp_potential'],
  ['kmeans smallest hash', KMEANS_SMALLEST_HASH_WGSL, 'smallest_hash'],
  ['kmeans|| sampling', KMEANS_PAR_SAMPLE_WGSL, 'par_sample'],
  [`linreg Gram (fma ${ctx.fusedFma ? 'fused' : 'Dekker'})`, linregGramWgsl(ctx.fusedFma), 'gram'],
  ['linreg residual', LINREG_RESIDUAL_WGSL, 'residual'],
  ['block sums', BLOCK_SUMS_WGSL, 'block_sums'],
  ['reduce blocks', REDUCE_BLOCKS_WGSL, 'reduce_blocks'],
  ['decode f64 to double-float', ML_MATRIX_WGSL, 'decode'],
];
for (const [name, code, entry] of kernels) {
  const t = performance.now();
  const module = ctx.device.createShaderModule({ code });
  await ctx.device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: entry } });
  console.log(`${name}: ${(performance.now() - t).toFixed(1)} ms (${code.length} characters of WGSL)`);
}
process.exit(0);
