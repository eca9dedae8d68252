// A CUDA port of the WGSL k-means step (src/kernels/kmeans.wgsl.ts), for profiling only: ncu sees
// CUDA kernels, not Vulkan ones. The same structure and sums as the WGSL step for 10^7 x 32, k = 64
// (BENCHMARKS.md, sixteenth session). On the GPU machine:
//   export PATH=/usr/local/cuda/bin:$PATH; nvcc -O3 -arch=sm_90 -Xptxas -v -o /tmp/kmstep bench/kmeans-step-cuda.cu
//   /tmp/kmstep                       (times: step, counts only, dot form; 4096, 1056 and 264 blocks)
//   ncu -k regex:step -c 1 --section SpeedOfLight --section Occupancy --section WarpStateStats /tmp/kmstep profile
#include <cstdio>
#include <cstdlib>
#include <cfloat>
#include <cuda_runtime.h>
#define D 32
#define K 64
#define D4 8
#define R 4
#define WG 256
#define HI (K * (D + 1))
#define COUNTS (2 * HI)
#define SCALES (COUNTS + K)
#define BATCH 8

__device__ __forceinline__ float comp(float4 v, int t) { return t == 0 ? v.x : t == 1 ? v.y : t == 2 ? v.z : v.w; }

__device__ __forceinline__ uint2 fixedWords(float y) {
  float a = fabsf(y);
  float h = floorf(a * 2.3283064365386963e-10f);
  unsigned lo = (unsigned)(a - h * 4294967296.0f);
  unsigned hi = (unsigned)h;
  if (y < 0.f) { lo = ~lo + 1u; hi = ~hi + (lo == 0u ? 1u : 0u); }
  return make_uint2(lo, hi);
}

template <bool SUMS, bool DOT>
__global__ void __launch_bounds__(WG) step(const float* __restrict__ x, int rows, const float* __restrict__ centres, float scale, float distScale, unsigned* out) {
  __shared__ float4 tile[K * D4];
  __shared__ float cnorm[K];
  __shared__ unsigned acc[SCALES];
  const int lid = threadIdx.x;
  for (int i = lid; i < SCALES; i += WG) acc[i] = 0;
  for (int i = lid; i < K * D4; i += WG) { int c = i / D4, j = (i % D4) * 4; tile[i] = make_float4(centres[c * D + j], centres[c * D + j + 1], centres[c * D + j + 2], centres[c * D + j + 3]); }
  __syncthreads();
  if (DOT) for (int c = lid; c < K; c += WG) { float s = 0; for (int q = 0; q < D4; q++) { float4 v = tile[c * D4 + q]; s += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w; } cnorm[c] = s; }
  __syncthreads();
  for (int base = blockIdx.x * WG * R; base < rows; base += gridDim.x * WG * R) {
    float4 xr[R][D4];
    int r[R];
#pragma unroll
    for (int i = 0; i < R; i++) {
      r[i] = base + i * WG + lid;
#pragma unroll
      for (int q = 0; q < D4; q++) xr[i][q] = r[i] < rows ? make_float4(x[(4 * q) * rows + r[i]], x[(4 * q + 1) * rows + r[i]], x[(4 * q + 2) * rows + r[i]], x[(4 * q + 3) * rows + r[i]]) : make_float4(0, 0, 0, 0);
    }
    float bestD[R];
    int best[R];
#pragma unroll
    for (int i = 0; i < R; i++) { bestD[i] = FLT_MAX; best[i] = 0; }
    for (int c = 0; c < K; c++) {
      float s[R];
#pragma unroll
      for (int i = 0; i < R; i++) s[i] = DOT ? cnorm[c] : 0.f;
#pragma unroll
      for (int q = 0; q < D4; q++) {
        float4 cv = tile[c * D4 + q];
#pragma unroll
        for (int i = 0; i < R; i++) {
          if (DOT) {
            s[i] = fmaf(-2.f * xr[i][q].x, cv.x, s[i]); s[i] = fmaf(-2.f * xr[i][q].y, cv.y, s[i]);
            s[i] = fmaf(-2.f * xr[i][q].z, cv.z, s[i]); s[i] = fmaf(-2.f * xr[i][q].w, cv.w, s[i]);
          } else {
            float tx = xr[i][q].x - cv.x, ty = xr[i][q].y - cv.y, tz = xr[i][q].z - cv.z, tw = xr[i][q].w - cv.w;
            s[i] = s[i] + tx * tx; s[i] = s[i] + ty * ty; s[i] = s[i] + tz * tz; s[i] = s[i] + tw * tw;
          }
        }
      }
#pragma unroll
      for (int i = 0; i < R; i++) if (s[i] < bestD[i]) { bestD[i] = s[i]; best[i] = c; }
    }
#pragma unroll
    for (int i = 0; i < R; i++) {
      if (r[i] >= rows) continue;
      if (SUMS) {
#pragma unroll
        for (int b = 0; b < D; b += BATCH) {
          uint2 w[BATCH];
          unsigned o[BATCH];
#pragma unroll
          for (int n = 0; n < BATCH; n++) { int j = b + n; w[n] = fixedWords(comp(xr[i][j / 4], j % 4) * scale); o[n] = atomicAdd(&acc[j * K + best[i]], w[n].x); }
#pragma unroll
          for (int n = 0; n < BATCH; n++) { int j = b + n; unsigned up = w[n].y + (o[n] + w[n].x < o[n] ? 1u : 0u); if (up) atomicAdd(&acc[HI + j * K + best[i]], up); }
        }
        uint2 wd = fixedWords(bestD[i] * distScale);
        unsigned od = atomicAdd(&acc[D * K + best[i]], wd.x);
        unsigned upd = wd.y + (od + wd.x < od ? 1u : 0u);
        if (upd) atomicAdd(&acc[HI + D * K + best[i]], upd);
      }
      atomicAdd(&acc[COUNTS + best[i]], 1u);
    }
  }
  __syncthreads();
  for (int i = lid; i < HI; i += WG) {
    unsigned lo = acc[i], hi = acc[HI + i];
    if (lo | hi) { unsigned old = atomicAdd(&out[i], lo); unsigned up = hi + (old + lo < old ? 1u : 0u); if (up) atomicAdd(&out[HI + i], up); }
  }
  for (int c = lid; c < K; c += WG) { unsigned n = acc[COUNTS + c]; if (n) atomicAdd(&out[COUNTS + c], n); }
}

template <bool SUMS, bool DOT>
float timeIt(const char* name, const float* x, int rows, const float* c, unsigned* out, int blocks, int reps) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 5; i++) step<SUMS, DOT><<<blocks, WG>>>(x, rows, c, 17179869184.f, 16777216.f, out);
  cudaEventRecord(a);
  for (int i = 0; i < reps; i++) { cudaMemsetAsync(out, 0, SCALES * 4); step<SUMS, DOT><<<blocks, WG>>>(x, rows, c, 17179869184.f, 16777216.f, out); }
  cudaEventRecord(b); cudaEventSynchronize(b);
  float ms; cudaEventElapsedTime(&ms, a, b);
  printf("%-40s %d blocks: %.3f ms\n", name, blocks, ms / reps);
  return ms / reps;
}

int main(int argc, char** argv) {
  const int rows = 10000000;
  float* hx = (float*)malloc((size_t)rows * D * 4);
  unsigned s = 12345;
  for (size_t i = 0; i < (size_t)rows * D; i++) { s = s * 1664525u + 1013904223u; hx[i] = (s >> 8) * (20.f / 16777216.f) - 10.f; }
  float hc[K * D];
  for (int c = 0; c < K; c++) for (int j = 0; j < D; j++) hc[c * D + j] = hx[(size_t)j * rows + c * 1000];
  float *x, *c; unsigned* out;
  cudaMalloc(&x, (size_t)rows * D * 4); cudaMalloc(&c, K * D * 4); cudaMalloc(&out, SCALES * 4);
  cudaMemcpy(x, hx, (size_t)rows * D * 4, cudaMemcpyHostToDevice); cudaMemcpy(c, hc, K * D * 4, cudaMemcpyHostToDevice);
  bool profile = argc > 1;
  int reps = profile ? 1 : 20;
  for (int blocks : {4096, 1056, 132 * 2}) {
    timeIt<true, false>("step (direct distances, sums)", x, rows, c, out, blocks, reps);
    if (profile) break;
    timeIt<false, false>("counts only (direct distances)", x, rows, c, out, blocks, reps);
    timeIt<true, true>("step, dot-form distances (other words)", x, rows, c, out, blocks, reps);
    timeIt<false, true>("counts only, dot-form distances", x, rows, c, out, blocks, reps);
  }
  cudaError_t e = cudaGetLastError();
  printf("cuda: %s\n", cudaGetErrorString(e));
  return 0;
}
