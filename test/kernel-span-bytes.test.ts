// gatherSpans against its CPU twin: spans at every byte alignment, empty spans, spans that repeat
// and overlap, and more spans than a workgroup has threads.
import { describe, expect, it } from 'vitest';
import { freeBuffer, uploadNew } from '../src/engine/gpu/buffers.js';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { gatherSpans, gatherSpansCpu } from '../src/kernels/span-bytes.js';
import { rng } from './helpers/data.js';

describe.skipIf(skipGpuTests)('span-bytes kernel', () => {
  it('packs spans as its CPU twin does', async () => {
    const ctx = await testGpu();
    const r = rng(11);
    const bytes = Uint8Array.from({ length: 40_003 }, () => Math.floor(r() * 256));
    const device = await uploadNew(ctx, bytes, 'test bytes');
    try {
      for (const count of [1, 3, 700, 5000]) {
        const starts = new Uint32Array(count), ends = new Uint32Array(count);
        for (let i = 0; i < count; i++) {
          starts[i] = Math.floor(r() * (bytes.length - 40));
          // Empty spans, one-byte spans, spans crossing several words; an end below its start is empty.
          const len = r() < 0.2 ? 0 : r() < 0.3 ? 1 : Math.floor(r() * 40);
          ends[i] = r() < 0.02 ? starts[i] - 1 : starts[i] + len;
        }
        const got = await gatherSpans(ctx, device, starts, ends);
        const want = gatherSpansCpu(bytes, starts, ends);
        expect(Array.from(got.offsets)).toEqual(Array.from(want.offsets));
        expect(Buffer.from(got.data).equals(Buffer.from(want.data))).toBe(true);
      }
      const none = await gatherSpans(ctx, device, Uint32Array.from([5, 9]), Uint32Array.from([5, 9]));
      expect(none.data.length).toBe(0);
    } finally {
      freeBuffer(ctx, device);
    }
  });
});
