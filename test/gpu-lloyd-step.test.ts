// The k-means step recorded a round ahead (gpu-lloyd-step.ts) on lavapipe: round after round, with
// centres whose magnitudes (and so the distance bound in each partition's parameters) change, its
// words are those of the generic path (recordStep per partition into one summed output) and of the
// CPU twin; counts alone; a step made for other partitions is not used for these. The bounded step
// (rounds that do not want the inertia) gives the CPU twin's labels' counts and sums along a real
// Lloyd run, a jump of the centres, repeated centres and a full round between bounded ones, and
// measures only some of the rows again once the centres settle.

import { describe, expect, it } from 'vitest';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { centreExponent, kmeansStepCpu, maxBitsOfColumns, recordStep, stepPairs, stepSumsLocal, StepWords } from '../src/kernels/kmeans.js';
import { stepLayout } from '../src/kernels/kmeans.wgsl.js';
import { decodeCpu, freeMatrix, GpuWork, uploadMatrix, type DeviceMatrix } from '../src/kernels/ml-matrix.js';
import { StagingRing } from '../src/engine/gpu/buffers.js';
import { LloydStep } from '../src/engine/exec/gpu-lloyd-step.js';
import type { GpuContext } from '../src/engine/gpu/device.js';
import { Rng } from '../src/engine/ml/random.js';

/** Every partition's step into one summed output, as mapPartitions records it: the words. */
async function genericStep(ctx: GpuContext, parts: DeviceMatrix[], centres: Float64Array, k: number, rows: number, maxBits: Uint32Array, countsOnly: boolean): Promise<Uint32Array> {
  const work = new GpuWork(ctx);
  const pairs = stepPairs(k, parts[0].cols);
  const out = work.temp(pairs * 8, 'out'), bits = work.input(maxBits, 'maxima');
  const f32 = new Float32Array(centres);
  for (const m of parts) recordStep(work, m, bits, rows, work.input(f32, 'centres'), centreExponent(f32), k, out, 0, { countsOnly });
  const [got] = await work.finish([{ buf: out, floats: pairs * 2 }]);
  return new Uint32Array(got.buffer);
}

describe.skipIf(skipGpuTests)('the k-means step recorded a round ahead', () => {
  it('gives the generic path\'s words and the CPU twin\'s, round after round, with and without sums', async () => {
    const ctx = await testGpu();
    const rng = new Rng(5, 'lloyd-step');
    const rows = 3000, cuts = [0, 1100, 1101, rows], d = 5, k = 7;
    const x = Float64Array.from({ length: rows * d }, () => (rng.nextFloat() - 0.5) * 20);
    const ring = new StagingRing(ctx, 1 << 16, 2), parts: DeviceMatrix[] = [];
    for (let i = 0; i + 1 < cuts.length; i++) parts.push(await uploadMatrix(ctx, ring, x.subarray(cuts[i] * d, cuts[i + 1] * d), null, cuts[i + 1] - cuts[i], d));
    const columns = new Float32Array(rows * d);
    for (let r = 0; r < rows; r++) for (let j = 0; j < d; j++) columns[j * rows + r] = decodeCpu(x[r * d + j])[0];
    const maxBits = maxBitsOfColumns(columns, rows, d);
    const maxAbs = Float64Array.from(new Float32Array(maxBits.buffer));
    try {
      for (const countsOnly of [false, true]) {
        const step = new LloydStep(ctx, { parts, k, countsOnly, scaleRows: rows, maxAbs });
        try {
          // Centres of changing magnitude: the exponent in the parameters changes between some rounds, not others.
          for (const scale of [1, 1, 30, 0.01, 1000, 1000]) {
            const centres = Float64Array.from({ length: k * d }, () => (rng.nextFloat() - 0.5) * scale);
            const words = new Uint32Array((await step.run(centres)).buffer).subarray(0, stepLayout(k, d).words);
            expect(Array.from(words), `scale ${scale}`).toEqual(Array.from((await genericStep(ctx, parts, centres, k, rows, maxBits, countsOnly)).subarray(0, words.length)));
            if (!countsOnly) expect(Array.from(words), `scale ${scale}, CPU`).toEqual(Array.from(kmeansStepCpu(columns, rows, d, new Float32Array(centres), k).words));
            expect(new StepWords(words, k, d).result().counts.reduce((a, b) => a + b)).toBe(rows);
          }
        } finally {
          step.destroy();
        }
      }
      const step = new LloydStep(ctx, { parts, k, countsOnly: false, scaleRows: rows, maxAbs });
      expect(step.serves({ parts, k, countsOnly: false, scaleRows: rows, maxAbs: maxAbs.slice() })).toBe(true);
      expect(step.serves({ parts: parts.slice(1), k, countsOnly: false, scaleRows: rows, maxAbs })).toBe(false);
      expect(step.serves({ parts, k: k + 1, countsOnly: false, scaleRows: rows, maxAbs })).toBe(false);
      expect(step.serves({ parts, k, countsOnly: true, scaleRows: rows, maxAbs })).toBe(false);
      expect(step.serves({ parts, k, countsOnly: false, scaleRows: rows, maxAbs: maxAbs.map((v) => v * 2) })).toBe(false);
      step.destroy();
    } finally {
      for (const m of parts) freeMatrix(ctx, m);
      ring.destroy();
    }
  });
});

describe.skipIf(skipGpuTests)('the bounded k-means step', () => {
  // d 5: rows in registers, sums in workgroup memory; d 40, k 200: features read again in a loop, centres staged in two tiles, sums in device memory.
  it.each([{ d: 5, k: 6 }, { d: 40, k: 200 }])('gives the full step\'s counts and sums round after round, and measures fewer rows as the centres settle (d $d, k $k)', async ({ d, k }) => {
    const ctx = await testGpu();
    const rng = new Rng(11, 'bounded-step');
    const rows = 4000, cuts = [0, 1500, 1501, rows];
    if (d === 40) expect(stepSumsLocal(ctx, k, d), 'this case sums in device memory').toBe(false);
    // Six blobs, so a Lloyd run settles and most rows keep their centre.
    const blobs = Float64Array.from({ length: k * d }, () => (rng.nextFloat() - 0.5) * 40);
    const x = new Float64Array(rows * d);
    for (let r = 0; r < rows; r++) { const b = r % k; for (let j = 0; j < d; j++) x[r * d + j] = blobs[b * d + j] + (rng.nextFloat() - 0.5) * 6; }
    const ring = new StagingRing(ctx, 1 << 16, 2), parts: DeviceMatrix[] = [];
    for (let i = 0; i + 1 < cuts.length; i++) parts.push(await uploadMatrix(ctx, ring, x.subarray(cuts[i] * d, cuts[i + 1] * d), null, cuts[i + 1] - cuts[i], d));
    const columns = new Float32Array(rows * d);
    for (let r = 0; r < rows; r++) for (let j = 0; j < d; j++) columns[j * rows + r] = decodeCpu(x[r * d + j])[0];
    const maxBits = maxBitsOfColumns(columns, rows, d);
    const maxAbs = Float64Array.from(new Float32Array(maxBits.buffer));
    const { hi, words: size } = stepLayout(k, d);
    // The words a bounded round gives: the CPU twin's, but for the distance sums (0).
    const expected = (centres: Float64Array) => {
      const w = kmeansStepCpu(columns, rows, d, new Float32Array(centres), k).words.slice();
      for (let c = 0; c < k; c++) { w[d * k + c] = 0; w[hi + d * k + c] = 0; }
      return Array.from(w);
    };
    const step = new LloydStep(ctx, { parts, k, countsOnly: false, scaleRows: rows, maxAbs });
    try {
      // Lloyd rounds from rows of the first blobs, each to the means the last round's words give.
      let centres = Float64Array.from({ length: k * d }, (_, i) => x[Math.floor(i / d) * 7 * d + (i % d)]);
      const listed: number[] = [];
      const round = async (label: string, inertia = false) => {
        const words = new Uint32Array((await step.run(centres, { inertia })).buffer).subarray(0, size);
        const want = inertia ? Array.from(kmeansStepCpu(columns, rows, d, new Float32Array(centres), k).words) : expected(centres);
        expect(Array.from(words), label).toEqual(want);
        if (!inertia) listed.push(step.listedRows!.reduce((a, b) => a + b));
        return new StepWords(words, k, d).result();
      };
      const lloyd = async (n: number, label: string) => {
        for (let it = 0; it < n; it++) {
          const { counts, sums } = await round(`${label} ${it}`);
          centres = centres.map((v, i) => { const c = Math.floor(i / d); return counts[c] > 0 ? (sums.hi[i] + sums.lo[i]) / counts[c] : v; });
        }
      };
      await lloyd(8, 'lloyd');
      expect(listed[0], 'the first round measures every row').toBe(rows);
      expect(Math.min(...listed.slice(4)), 'settled rounds measure few rows').toBeLessThan(rows / 4);
      await round('the same centres again');
      expect(listed.at(-1), 'unmoved centres: no row measured again').toBe(0);
      await round('a full round between bounded ones', true);
      // The centres jump (two swap places, one moves far): the bounds must let go of the rows.
      const jumped = centres.slice();
      for (let j = 0; j < d; j++) { jumped[j] = centres[d + j]; jumped[d + j] = centres[j]; jumped[2 * d + j] += 15; }
      centres = jumped;
      await round('after a jump');
      await lloyd(4, 'lloyd after the jump');
    } finally {
      step.destroy();
      for (const m of parts) freeMatrix(ctx, m);
      ring.destroy();
    }
  });
});
