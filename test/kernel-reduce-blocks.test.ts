// The sum over blocks that ends every ML kernel (recordReduceBlocks) on lavapipe against its CPU
// twin, bit for bit, and against a float64 sum: one block, a level's width exactly, one more than
// that, and enough blocks for three levels; entry-major and block-major partials.

import { describe, expect, it } from 'vitest';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { storageBuffer, writeBuffer } from '../src/engine/gpu/buffers.js';
import { GpuWork, recordReduceBlocks, reduceBlocksCpu } from '../src/kernels/ml-matrix.js';
import { REDUCE_FAN } from '../src/kernels/ml-matrix.wgsl.js';
import { Rng } from '../src/engine/ml/random.js';

/** (hi, lo) pairs of random float64 values of mixed sign and magnitude. */
function randomPairs(rng: Rng, n: number): { pairs: Float32Array; values: Float64Array } {
  const pairs = new Float32Array(2 * n), values = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = (rng.nextFloat() - 0.3) * 10 ** Math.floor(rng.nextFloat() * 6);
    const hi = Math.fround(v), lo = Math.fround(v - hi);
    pairs[2 * i] = hi; pairs[2 * i + 1] = lo;
    values[i] = hi + lo;
  }
  return { pairs, values };
}

describe.skipIf(skipGpuTests)('sum over blocks (recordReduceBlocks)', () => {
  const shapes = [[1, 5], [REDUCE_FAN, 3], [REDUCE_FAN + 1, 152], [REDUCE_FAN * REDUCE_FAN + 7, 2], [3, 1]];
  for (const layout of ['entry-major', 'block-major'] as const) {
    for (const [blocks, entries] of shapes) {
      it(`${blocks} blocks × ${entries} entries, ${layout}: the twin's bits, within 1e-12 of float64`, async () => {
        const ctx = await testGpu();
        const { pairs, values } = randomPairs(new Rng(blocks * 31 + entries, 'reduce blocks'), blocks * entries);
        const partials = storageBuffer(ctx, pairs.byteLength, 'test partials');
        writeBuffer(ctx, partials, 0, pairs);
        const offset = 2; // entries land after an offset, as partitions share one output buffer
        const work = new GpuWork(ctx);
        const out = work.temp((offset + entries) * 8, 'test out');
        recordReduceBlocks(work, partials, blocks, entries, out, offset, layout);
        const [got] = await work.finish([{ buf: out, floats: 2 * entries, offset: 2 * offset }]);
        partials.destroy();
        expect(Array.from(got)).toEqual(Array.from(reduceBlocksCpu(pairs, blocks, entries, layout)));
        for (let e = 0; e < entries; e++) {
          let exact = 0, scale = 0;
          for (let b = 0; b < blocks; b++) {
            const v = values[layout === 'block-major' ? b * entries + e : e * blocks + b];
            exact += v; scale += Math.abs(v);
          }
          expect(Math.abs(got[2 * e] + got[2 * e + 1] - exact)).toBeLessThanOrEqual(1e-12 * scale);
        }
      });
    }
  }
});
