import { describe, expect, it } from 'vitest';
import { exclusiveScan, exclusiveScanCpu } from '../src/kernels/prefix-scan.js';
import { freeBuffer, readU32, uploadNew } from '../src/engine/gpu/buffers.js';
import { firstDifference, skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';

describe.skipIf(skipGpuTests)('prefix-scan kernel', () => {
  for (const n of [1, 5, 1023, 1024, 1025, 300_001, 2_100_000]) {
    it(`matches the CPU scan for ${n} words`, async () => {
      const ctx = await testGpu();
      const words = new Uint32Array(n);
      for (let i = 0; i < n; i++) words[i] = (i * 7919) % 13;
      const buf = await uploadNew(ctx, words, 'scan test');
      exclusiveScan(ctx, buf, n);
      expect(firstDifference(await readU32(ctx, buf, n), exclusiveScanCpu(words))).toBe(-1);
      freeBuffer(ctx, buf);
    });
  }
});
