// The sum over blocks that ends every ML kernel (recordReduceBlocks) on lavapipe against its CPU
// twin, bit for bit, and against a float64 sum: one block, a level's width exactly, one more than
// that, and enough blocks for three levels; entry-major and block-major partials. And a work's
// temporaries recycled from one partition to the next (GpuWork.recycle).

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

describe.skipIf(skipGpuTests)('a work\'s temporaries recycled partition by partition (GpuWork.recycle)', () => {
  it('the next partition reuses the last one\'s temporaries, cleared; kept and shared inputs and earlier results stay', async () => {
    const ctx = await testGpu();
    const rng = new Rng(7, 'recycle');
    const parts = [randomPairs(rng, 3 * REDUCE_FAN), randomPairs(rng, 3 * REDUCE_FAN), randomPairs(rng, 2 * REDUCE_FAN + 5)];
    const work = new GpuWork(ctx);
    const out = work.temp(parts.length * 8, 'test out');
    const shared = work.keep(work.input(new Uint32Array([1, 2, 3, 4]), 'shared'));
    const seen: GPUBuffer[][] = [];
    const sharedInputs: GPUBuffer[] = [];
    parts.forEach(({ pairs }, i) => {
      const mark = work.mark();
      sharedInputs.push(work.sharedInput(new Uint32Array([9, 8, 7]), 'test shared'));
      // A partial sums buffer of the same size class each time, written after a clear of any reused one.
      const partials = work.temp(pairs.byteLength, 'test partials');
      work.encoder.clearBuffer(partials);
      const staged = work.input(pairs, 'test pairs');
      work.encoder.copyBufferToBuffer(staged, 0, partials, 0, pairs.byteLength);
      recordReduceBlocks(work, partials, pairs.length / 2, 1, out, i);
      seen.push([partials, staged]);
      work.recycle(mark);
    });
    // Partition 1's buffers are partition 0's (the pool hands back the same size class).
    expect(new Set([...seen[0], ...seen[1]]).size).toBe(2);
    // The same contents give the same buffer in every partition (written once); other contents another.
    expect(new Set(sharedInputs).size).toBe(1);
    expect(work.sharedInput(new Uint32Array([9, 8, 6]), 'test shared')).not.toBe(sharedInputs[0]);
    const [got, kept, once] = await work.finish([{ buf: out, floats: 2 * parts.length }, { buf: shared, floats: 4 }, { buf: sharedInputs[0], floats: 3 }]);
    expect(Array.from(new Uint32Array(once.buffer))).toEqual([9, 8, 7]);
    parts.forEach(({ pairs }, i) => expect(Array.from(got.subarray(2 * i, 2 * i + 2)), `partition ${i}`).toEqual(Array.from(reduceBlocksCpu(pairs, pairs.length / 2, 1))));
    expect(Array.from(new Uint32Array(kept.buffer))).toEqual([1, 2, 3, 4]);
  });
});
