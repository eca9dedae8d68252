import { afterEach, describe, expect, it } from 'vitest';
import { CHECKED_SUBGROUP_SIZE, exclusiveScan, exclusiveScanCpu, scanVariant, type ScanVariant } from '../src/kernels/prefix-scan.js';
import type { GpuContext } from '../src/engine/gpu/device.js';
import { freeBuffer, readU32, uploadNew } from '../src/engine/gpu/buffers.js';
import { judgeSubgroupLayout } from '../src/engine/gpu/subgroups.js';
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

/** Random words, small or within 2^20 of 2^32 (so that sums wrap many times), from a fixed seed. */
function randomWords(n: number, seed: number): Uint32Array {
  const out = new Uint32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s & 1 ? (0xffffffff - (s >>> 12)) >>> 0 : s >>> 24;
  }
  return out;
}

/**
 * The scan of `words` on the GPU. The buffer holds 7 more words after them (the kernels move whole
 * quads of words), which must come back as they were.
 */
async function scanOnGpu(words: Uint32Array, variant: ScanVariant): Promise<Uint32Array> {
  const ctx = await testGpu();
  const after = Uint32Array.from({ length: 7 }, (_, i) => 0xdead0000 + i);
  const withAfter = new Uint32Array(words.length + after.length);
  withAfter.set(words);
  withAfter.set(after, words.length);
  const buf = await uploadNew(ctx, withAfter, 'scan test');
  exclusiveScan(ctx, buf, words.length, variant);
  const out = await readU32(ctx, buf, withAfter.length);
  freeBuffer(ctx, buf);
  expect(ctx.errors).toEqual([]);
  expect(Array.from(out.subarray(words.length)), 'the words after the scanned ones').toEqual(Array.from(after));
  return out.subarray(0, words.length);
}

// 0, 1, around one block (1024), many blocks, and more than 8192 blocks (workgroups loop over
// blocks, and the block sums need a second level of scan).
const AWKWARD_SIZES = [0, 1, 2, 255, 1023, 1024, 1025, 4097, 65_537, 1024 * 8192 + 3];

describe.skipIf(skipGpuTests)('prefix-scan variants', () => {
  const saved = process.env.GPUFRAME_GPU_SUBGROUPS;
  afterEach(() => {
    if (saved === undefined) delete process.env.GPUFRAME_GPU_SUBGROUPS;
    else process.env.GPUFRAME_GPU_SUBGROUPS = saved;
  });

  it('reports the subgroup layout check, and the scan uses subgroups exactly when it passed', async () => {
    const ctx = await testGpu();
    const layout = ctx.subgroupLayout;
    console.log(`subgroup layout on ${ctx.adapter.info.description || ctx.adapter.info.device}: ${layout.detail} (size ${layout.size}, usable ${layout.usable})`);
    expect(layout.detail).not.toBe('not checked');
    if (!ctx.hasSubgroups) expect(layout.usable).toBe(false);
    delete process.env.GPUFRAME_GPU_SUBGROUPS;
    expect(scanVariant(ctx)).toBe(layout.usable && layout.size! <= CHECKED_SUBGROUP_SIZE ? 'subgroups' : 'plain');
  });

  it('subgroups wider than those checked run the plain kernel unless GPUFRAME_GPU_SUBGROUPS=1', () => {
    const wide = { subgroupLayout: { size: 2 * CHECKED_SUBGROUP_SIZE, usable: true, detail: 'linear subgroups of 64' } } as GpuContext;
    delete process.env.GPUFRAME_GPU_SUBGROUPS;
    expect(scanVariant(wide)).toBe('plain');
    process.env.GPUFRAME_GPU_SUBGROUPS = '1';
    expect(scanVariant(wide)).toBe('subgroups');
    const refused = { subgroupLayout: { size: CHECKED_SUBGROUP_SIZE, usable: false, detail: 'not linear' } } as GpuContext;
    expect(scanVariant(refused)).toBe('plain');
    const h200 = { subgroupLayout: { size: 32, usable: true, detail: 'linear subgroups of 32' } } as GpuContext;
    delete process.env.GPUFRAME_GPU_SUBGROUPS;
    expect(scanVariant(h200)).toBe('subgroups');
  });

  it('GPUFRAME_GPU_SUBGROUPS=0 forces the plain kernel', async () => {
    const ctx = await testGpu();
    process.env.GPUFRAME_GPU_SUBGROUPS = '0';
    expect(scanVariant(ctx)).toBe('plain');
  });

  // Lavapipe's subgroups are 8 wide and linear: the subgroup kernel runs there (4 rounds over the
  // 32 subgroup totals); 32-wide GPUs take the same code in one round, with lanes 8-31 idle.
  it('lavapipe offers linear subgroups, so the subgroup kernel is exercised here', async () => {
    const ctx = await testGpu();
    if (!ctx.isSoftware || !ctx.hasSubgroups) return;
    expect(ctx.subgroupLayout.usable).toBe(true);
  });

  for (const variant of ['plain', 'subgroups'] as const) {
    for (const n of AWKWARD_SIZES) {
      it(`${variant}: matches the CPU scan for ${n} random words, wrapping`, async () => {
        const ctx = await testGpu();
        if (variant === 'subgroups' && !ctx.subgroupLayout.usable) return; // the check said no: nothing to run
        const words = randomWords(n, n + 17);
        expect(firstDifference(await scanOnGpu(words, variant), exclusiveScanCpu(words))).toBe(-1);
      });
    }
  }
});

describe('subgroup layout verdict', () => {
  /** Check-kernel output for `workgroups` workgroups: [index, id, size, subgroup min, subgroup max] each. */
  function layoutWords(size: (i: number) => number, subgroupOf: (i: number) => number[], workgroups = 2): Uint32Array {
    const out: number[] = [];
    for (let w = 0; w < workgroups; w++) {
      for (let i = 0; i < 256; i++) {
        const members = subgroupOf(i);
        out.push(i, members.indexOf(i), size(i), Math.min(...members), Math.max(...members));
      }
    }
    return new Uint32Array(out);
  }
  const linear = (s: number) => (i: number) => Array.from({ length: s }, (_, k) => i - (i % s) + k);

  it('accepts linear subgroups of one size from 4 to 256', () => {
    for (const s of [4, 8, 16, 32, 64, 128, 256]) {
      expect(judgeSubgroupLayout(layoutWords(() => s, linear(s)))).toMatchObject({ size: s, usable: true });
    }
  });

  it('refuses varying sizes, sizes out of range, and non-linear layouts', () => {
    expect(judgeSubgroupLayout(layoutWords((i) => (i < 128 ? 32 : 16), linear(32))).usable).toBe(false);
    expect(judgeSubgroupLayout(layoutWords(() => 2, linear(2)))).toMatchObject({ size: 2, usable: false });
    // Interleaved: subgroup k holds k, k+8, k+16, ... (32 of them).
    const interleaved = (i: number) => Array.from({ length: 32 }, (_, k) => (i % 8) + 8 * k);
    expect(judgeSubgroupLayout(layoutWords(() => 32, interleaved))).toMatchObject({ size: 32, usable: false });
    // Ids follow index mod 16 but halves of two blocks share a subgroup: 0..7 with 24..31.
    const mixed = (i: number) => {
      const q = Math.floor(i / 8) % 4;
      const base = i - (i % 32);
      return q === 0 || q === 3 ? [...Array(8).keys()].map((k) => base + k).concat([...Array(8).keys()].map((k) => base + 24 + k))
        : [...Array(16).keys()].map((k) => base + 8 + k);
    };
    expect(judgeSubgroupLayout(layoutWords(() => 16, mixed)).usable).toBe(false);
  });
});
