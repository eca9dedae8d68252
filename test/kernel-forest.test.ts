// Random-forest split-finding kernels on lavapipe against their CPU twins: class histograms and
// totals (both the device-memory and the workgroup-memory variant, exactly), best bins per
// candidate (equal to the float64 twin wherever the twin's winner is clear; left weights exact;
// minSamplesLeaf respected), each node's best candidate, bootstrap row weights and root slots
// (exactly the CPU's counts), and routing (exactly). Awkward shapes throughout: rows not a
// multiple of 4 or 256, 1 and 3 trees, 2 and 10 classes, features of 1..256 bins, out-of-bag rows,
// rows in no slot, slots without rows, nodes with fewer or no candidates, slot sub-ranges with
// slotBase > 0, and more rows than threads. Last, two levels grown by hand (histogram -> best
// splits -> host decisions -> route -> histogram) against a CPU recount of the children.
// Regression: histograms of (weight, 96-bit Σ w·yq) exactly equal to the twin and dequantising to
// the float64 sums, best splits and best of nodes against the twins, for negative targets, a
// constant target, heavy weights (carries into the top word) and one row per node.

import { describe, expect, it } from 'vitest';
import { firstDifference, skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { freeBuffer, StagingRing, storageBuffer, uploadNew } from '../src/engine/gpu/buffers.js';
import type { GpuContext } from '../src/engine/gpu/device.js';
import {
  bestOfNodesCpu, bestSplitsCpu, dequantisedSum, forestHistogramBytes, quantiseTargets, REGRESSION_CELL_WORDS, nodeRecordWords, recordBestOfNodes, recordRowWeights, forestHistogramCpu, histIndex, NONE, recordBestSplits, recordForestHistogram, recordRoute,
  routeCpu, splitRecordWords, splitScore, uploadForestBins, type HistogramShape, type SplitCriterion,
} from '../src/kernels/forest.js';
import { GpuWork } from '../src/kernels/ml-matrix.js';
import { bootstrapCounts, Rng, rowKey } from '../src/engine/ml/random.js';

/** Binned rows with labels and bootstrap-like weights (0..5) for `trees` trees. */
interface Problem {
  rows: number; trees: number; cols: number; classes: number; nBins: number;
  bins: Uint8Array; binsPerFeature: Uint32Array; labels: Uint32Array; weight: Uint32Array;
}

function randomProblem(rng: Rng, rows: number, trees: number, cols: number, classes: number, maxBins: number): Problem {
  // Feature 0 has maxBins bins, the last one a single bin, the others anything in between.
  const binsPerFeature = Uint32Array.from({ length: cols }, (_, f) => (f === 0 ? maxBins : f === cols - 1 ? 1 : 1 + rng.nextInt(maxBins)));
  const bins = new Uint8Array(rows * cols);
  for (let f = 0; f < cols; f++) for (let r = 0; r < rows; r++) bins[f * rows + r] = rng.nextInt(binsPerFeature[f]);
  // Labels skewed towards low classes, so class weights differ.
  const labels = Uint32Array.from({ length: rows }, () => Math.min(rng.nextInt(classes), rng.nextInt(classes)));
  const weight = Uint32Array.from({ length: trees * rows }, () => (rng.nextInt(3) === 0 ? 0 : rng.nextInt(6)));
  return { rows, trees, cols, classes, nBins: maxBins, bins, binsPerFeature, labels, weight };
}

/** A slot in [0, slots) per (tree, row), NONE for some; slots ≡ 3 (mod 7) are left without rows. */
function randomSlots(rng: Rng, p: Problem, slots: number): Uint32Array {
  return Uint32Array.from({ length: p.trees * p.rows }, () => {
    if (rng.nextInt(10) === 0) return NONE;
    const s = rng.nextInt(slots);
    return s % 7 === 3 && slots > 1 ? NONE : s;
  });
}

/** maxF candidates per slot, distinct; some slots have fewer (NONE in between) and slot 1 none. */
function randomCandidates(rng: Rng, cols: number, slots: number, maxF: number): Uint32Array {
  const out = new Uint32Array(slots * maxF).fill(NONE);
  for (let s = 0; s < slots; s++) {
    if (s === 1 && slots > 2) continue;
    const order = Array.from({ length: cols }, (_, f) => f);
    for (let k = 0; k < maxF; k++) {
      const pick = k + rng.nextInt(cols - k);
      [order[k], order[pick]] = [order[pick], order[k]];
      if (s % 4 !== 2 || k % 2 === 0) out[s * maxF + k] = order[k];
    }
  }
  return out;
}

let ring: StagingRing | null = null;
function ringOf(ctx: GpuContext): StagingRing {
  ring ??= new StagingRing(ctx, 1 << 16, 2);
  return ring;
}

const u32 = (f: Float32Array) => new Uint32Array(f.buffer, f.byteOffset, f.length);

async function histogramOnGpu(ctx: GpuContext, p: Problem, slot: Uint32Array, nodeFeatures: Uint32Array, shape: HistogramShape, variant: 'auto' | 'global' | 'shared') {
  const bins = await uploadForestBins(ctx, ringOf(ctx), p.bins, p.rows, p.cols);
  const work = new GpuWork(ctx);
  const histWords = forestHistogramBytes(shape.slotCount, shape.maxF, shape.nBins, shape.classes) / 4, totalWords = shape.slotCount * shape.classes;
  const hist = work.temp(histWords * 4, 'hist'), totals = work.temp(totalWords * 4, 'totals');
  // Stale values in the outputs: the recorder must clear them.
  ctx.device.queue.writeBuffer(hist, 0, new Uint32Array(histWords).fill(7));
  const chosen = recordForestHistogram(work, {
    ...shape, bins, weight: work.input(p.weight, 'weight'), slot: work.input(slot, 'slot'), labels: work.input(p.labels, 'labels'),
    nodeFeatures: work.input(nodeFeatures, 'node features'), hist, totals,
  }, variant);
  const [h, t] = await work.finish([{ buf: hist, floats: histWords }, { buf: totals, floats: totalWords }]);
  freeBuffer(ctx, bins);
  return { chosen, hist: u32(h), totals: u32(t) };
}

/**
 * Slots of a histogram case: 'random' over all slots; 'per tree': tree t's rows in slot t;
 * 'two per tree': slots numbered tree by tree (2t, 2t + 1), except tree 4 whose rows go anywhere
 * (so some chunks of the 'shared' variant find their slots' counters too many for workgroup memory).
 */
type SlotLayout = 'random' | 'per tree' | 'two per tree';
function caseSlots(rng: Rng, p: Problem, slots: number, layout: SlotLayout): Uint32Array {
  if (layout === 'random') return randomSlots(rng, p, slots);
  return Uint32Array.from({ length: p.trees * p.rows }, (_, i) => {
    const t = Math.floor(i / p.rows);
    if (layout === 'per tree') return t;
    return t === 4 ? rng.nextInt(slots) : 2 * t + rng.nextInt(2);
  });
}

describe.skipIf(skipGpuTests)('forest histogram kernel', () => {
  const cases: { name: string; rows: number; trees: number; cols: number; classes: number; maxBins: number; slots: number; layout: SlotLayout; slotBase: number; slotCount: number; maxF: number; auto: 'global' | 'shared' }[] = [
    { name: 'many slots, 1 tree, 2 classes', rows: 1001, trees: 1, cols: 6, classes: 2, maxBins: 256, slots: 40, layout: 'random', slotBase: 0, slotCount: 40, maxF: 3, auto: 'global' },
    { name: '3 trees, 10 classes, slots [7, 18) of 30', rows: 2003, trees: 3, cols: 7, classes: 10, maxBins: 200, slots: 30, layout: 'random', slotBase: 7, slotCount: 11, maxF: 4, auto: 'global' },
    { name: 'all rows of a tree in its one slot, 3 trees, 256 bins', rows: 2999, trees: 3, cols: 4, classes: 2, maxBins: 256, slots: 3, layout: 'per tree', slotBase: 0, slotCount: 3, maxF: 2, auto: 'shared' },
    { name: 'few small slots, 10 classes, slotBase 2', rows: 1999, trees: 1, cols: 5, classes: 10, maxBins: 16, slots: 9, layout: 'random', slotBase: 2, slotCount: 5, maxF: 3, auto: 'shared' },
    { name: 'more rows than threads: 3 trees × 100003 rows in 6 slots', rows: 100003, trees: 3, cols: 3, classes: 2, maxBins: 64, slots: 6, layout: 'random', slotBase: 0, slotCount: 6, maxF: 2, auto: 'shared' },
    { name: '6 trees × 20011 rows, slots tree by tree: only a chunk\'s few slots fit workgroup memory', rows: 20011, trees: 6, cols: 4, classes: 2, maxBins: 160, slots: 12, layout: 'two per tree', slotBase: 0, slotCount: 12, maxF: 3, auto: 'shared' },
  ];
  for (const c of cases) {
    it(`${c.name}: both variants equal the twin ('auto' picks ${c.auto})`, async () => {
      const ctx = await testGpu();
      const rng = new Rng(c.rows, c.name);
      const p = randomProblem(rng, c.rows, c.trees, c.cols, c.classes, c.maxBins);
      const slot = caseSlots(rng, p, c.slots, c.layout);
      const nodeFeatures = randomCandidates(rng, c.cols, c.slots, c.maxF);
      const shape: HistogramShape = { rows: c.rows, trees: c.trees, slotBase: c.slotBase, slotCount: c.slotCount, maxF: c.maxF, nBins: c.maxBins, classes: c.classes };
      const want = forestHistogramCpu({ ...shape, bins: p.bins, weight: p.weight, slot, labels: p.labels, nodeFeatures });
      expect(want.totals.some((v) => v > 0)).toBe(true);
      expect((await histogramOnGpu(ctx, p, slot, nodeFeatures, shape, 'auto')).chosen).toBe(c.auto);
      for (const variant of ['global', 'shared'] as const) {
        const got = await histogramOnGpu(ctx, p, slot, nodeFeatures, shape, variant);
        expect(firstDifference(got.totals, want.totals), `${variant} totals`).toBe(-1);
        expect(firstDifference(got.hist, want.hist), `${variant} histogram`).toBe(-1);
      }
    });
  }
});

async function bestSplitsOnGpu(ctx: GpuContext, hist: Uint32Array, totals: Uint32Array, nodeFeatures: Uint32Array, binsPerFeature: Uint32Array,
  shape: { slotBase: number; slotCount: number; maxF: number; nBins: number; classes: number }, criterion: SplitCriterion, minSamplesLeaf: number): Promise<Uint32Array> {
  const work = new GpuWork(ctx);
  const words = shape.slotCount * shape.maxF * splitRecordWords(shape.classes);
  const out = work.temp(words * 4, 'best splits');
  recordBestSplits(work, {
    ...shape, criterion, minSamplesLeaf, out, hist: work.input(hist, 'hist'), totals: work.input(totals, 'totals'),
    nodeFeatures: work.input(nodeFeatures, 'node features'), binsPerFeature: work.input(binsPerFeature, 'bins per feature'),
  });
  const [o] = await work.finish([{ buf: out, floats: words }]);
  return u32(o);
}

describe.skipIf(skipGpuTests)('forest best-split kernel', () => {
  const cases: { rows: number; trees: number; classes: number; maxBins: number; slots: number; slotBase: number; slotCount: number; maxF: number }[] = [
    { rows: 3001, trees: 1, classes: 2, maxBins: 256, slots: 12, slotBase: 0, slotCount: 12, maxF: 3 },
    { rows: 4003, trees: 3, classes: 10, maxBins: 40, slots: 20, slotBase: 5, slotCount: 9, maxF: 4 },
  ];
  for (const c of cases) {
    for (const criterion of ['gini', 'entropy'] as const) {
      for (const minSamplesLeaf of [1, 60]) {
        it(`${criterion}, ${c.classes} classes, minSamplesLeaf ${minSamplesLeaf}, slots [${c.slotBase}, ${c.slotBase + c.slotCount})`, async () => {
          const ctx = await testGpu();
          const rng = new Rng(c.rows, `best ${criterion}`);
          const p = randomProblem(rng, c.rows, c.trees, 6, c.classes, c.maxBins);
          const slot = randomSlots(rng, p, c.slots);
          const nodeFeatures = randomCandidates(rng, p.cols, c.slots, c.maxF);
          const shape = { slotBase: c.slotBase, slotCount: c.slotCount, maxF: c.maxF, nBins: c.maxBins, classes: c.classes };
          const { hist, totals } = forestHistogramCpu({ ...shape, rows: c.rows, trees: c.trees, bins: p.bins, weight: p.weight, slot, labels: p.labels, nodeFeatures });
          const got = await bestSplitsOnGpu(ctx, hist, totals, nodeFeatures, p.binsPerFeature, shape, criterion, minSamplesLeaf);
          const want = bestSplitsCpu({ ...shape, hist, totals, nodeFeatures, binsPerFeature: p.binsPerFeature, criterion, minSamplesLeaf });
          const width = splitRecordWords(c.classes);
          let clear = 0, found = 0;
          for (let t = 0; t < c.slotCount * c.maxF; t++) {
            const s = Math.floor(t / c.maxF), k = t % c.maxF, bin = got[t * width], wantBin = want.out[t * width];
            const at = `slot ${c.slotBase + s} candidate ${k}`;
            // Whether any bin is admissible depends on integer weights only: both agree.
            expect(bin === NONE, at).toBe(wantBin === NONE);
            const left = got.subarray(t * width + 1, (t + 1) * width);
            if (bin === NONE) { expect(left.every((v) => v === 0), at).toBe(true); continue; }
            found++;
            // Left weights: exactly the cumulative counts at the returned bin.
            const cumulative = new Uint32Array(c.classes);
            for (let b = 0; b <= bin; b++) for (let cl = 0; cl < c.classes; cl++) cumulative[cl] += hist[histIndex(shape, s, k, b, cl)];
            expect(Array.from(left), at).toEqual(Array.from(cumulative));
            const total = totals.subarray(s * c.classes, (s + 1) * c.classes);
            const wl = left.reduce((x, y) => x + y, 0), w = total.reduce((x, y) => x + y, 0);
            expect(wl, at).toBeGreaterThanOrEqual(minSamplesLeaf);
            expect(w - wl, at).toBeGreaterThanOrEqual(minSamplesLeaf);
            expect(bin, at).toBeLessThan(p.binsPerFeature[nodeFeatures[(c.slotBase + s) * c.maxF + k]] - 1);
            // The chosen bin scores (in float64) within f32 rounding of the best; a clear winner is the same bin.
            const best = want.bestScore[t];
            expect(Math.abs(splitScore(criterion, left, total, c.classes) - best), at).toBeLessThanOrEqual(1e-5 * Math.abs(best) + 1e-9);
            if (best - want.runnerUp[t] > 1e-5 * Math.abs(best)) { clear++; expect(bin, at).toBe(wantBin); }
          }
          // The comparisons ran: most candidates have a split, and most winners are clear.
          expect(found).toBeGreaterThan((c.slotCount * c.maxF) / 3);
          expect(clear).toBeGreaterThan(found / 2);
        });
      }
    }
  }
});

describe.skipIf(skipGpuTests)('forest best-of-node kernel', () => {
  for (const criterion of ['gini', 'entropy'] as const) {
    it(`${criterion}: each slot's best candidate record, the twin's choice when it is clear`, async () => {
      const ctx = await testGpu();
      const rng = new Rng(7, `best of node ${criterion}`);
      const c = { rows: 5003, trees: 2, classes: 3, maxBins: 30, slots: 40, maxF: 5 };
      const p = randomProblem(rng, c.rows, c.trees, 8, c.classes, c.maxBins);
      const slot = randomSlots(rng, p, c.slots);
      const nodeFeatures = randomCandidates(rng, p.cols, c.slots, c.maxF);
      const shape = { slotBase: 0, slotCount: c.slots, maxF: c.maxF, nBins: c.maxBins, classes: c.classes };
      const { hist, totals } = forestHistogramCpu({ ...shape, rows: c.rows, trees: c.trees, bins: p.bins, weight: p.weight, slot, labels: p.labels, nodeFeatures });
      const records = await bestSplitsOnGpu(ctx, hist, totals, nodeFeatures, p.binsPerFeature, shape, criterion, 1);
      const work = new GpuWork(ctx);
      const words = c.slots * nodeRecordWords(c.classes);
      const nodes = work.temp(words * 4, 'nodes');
      recordBestOfNodes(work, {
        ...shape, criterion, minSamplesLeaf: 1, nodes, out: work.input(records, 'records'), hist: work.input(hist, 'hist'),
        totals: work.input(totals, 'totals'), nodeFeatures: work.input(nodeFeatures, 'features'), binsPerFeature: work.input(p.binsPerFeature, 'bins'),
      });
      const got = u32((await work.finish([{ buf: nodes, floats: words }]))[0]);
      const want = bestOfNodesCpu(records, totals, c.slots, c.maxF, c.classes, criterion);
      const width = splitRecordWords(c.classes), nodeWidth = nodeRecordWords(c.classes);
      let chosen = 0;
      for (let s = 0; s < c.slots; s++) {
        const k = got[s * nodeWidth], at = `slot ${s}`;
        expect(k === NONE, at).toBe(want[s * nodeWidth] === NONE);
        if (k === NONE) continue;
        chosen++;
        // The node record is the chosen candidate's record.
        expect(Array.from(got.subarray(s * nodeWidth + 1, (s + 1) * nodeWidth)), at).toEqual(Array.from(records.subarray((s * c.maxF + k) * width, (s * c.maxF + k + 1) * width)));
        const total = totals.subarray(s * c.classes, (s + 1) * c.classes);
        const scores = Array.from({ length: c.maxF }, (_, j) => {
          const r = (s * c.maxF + j) * width;
          return records[r] === NONE ? -Infinity : splitScore(criterion, records.subarray(r + 1, r + 1 + c.classes), total, c.classes);
        });
        const sorted = [...scores].sort((a, b) => b - a);
        if (sorted[0] - sorted[1] > 1e-5 * Math.abs(sorted[0])) expect(k, at).toBe(want[s * nodeWidth]);
        else expect(scores[k], at).toBeGreaterThanOrEqual(sorted[0] - 1e-5 * Math.abs(sorted[0]));
      }
      expect(chosen).toBeGreaterThan(c.slots / 2);
    });
  }
});

describe.skipIf(skipGpuTests)('forest row weights kernel', () => {
  for (const bootstrap of [true, false]) {
    it(`${bootstrap ? 'bootstrap draws' : 'no bootstrap'}: the counts bootstrapCounts makes, root slots for rows of positive weight`, async () => {
      const ctx = await testGpu();
      const rows = 70001, keys = Uint32Array.from([rowKey(1, 'rf-bootstrap', 0), rowKey(1, 'rf-bootstrap', 5), rowKey(9, 'rf-bootstrap', 0)]);
      const work = new GpuWork(ctx);
      const weight = work.temp(keys.length * rows * 4, 'weights'), slot = work.temp(keys.length * rows * 4, 'slots');
      recordRowWeights(work, { rows, keys, bootstrap, weight, slot });
      const [w, sl] = (await work.finish([{ buf: weight, floats: keys.length * rows }, { buf: slot, floats: keys.length * rows }])).map(u32);
      keys.forEach((key, t) => {
        const want = bootstrap ? bootstrapCounts(key, rows) : new Int32Array(rows).fill(1);
        const got = w.subarray(t * rows, (t + 1) * rows);
        expect(firstDifference(got, want), `tree ${t}`).toBe(-1);
        expect(got.reduce((a, b) => a + b, 0)).toBe(rows);
        const inBag = got.filter((v) => v > 0).length / rows;
        if (bootstrap) expect(Math.abs(inBag - (1 - Math.exp(-1)))).toBeLessThan(0.01);
        for (let r = 0; r < rows; r++) expect(sl[t * rows + r]).toBe(got[r] > 0 ? t : NONE);
      });
    });
  }
});

describe.skipIf(skipGpuTests)('forest regression kernels', () => {
  const cases: { name: string; rows: number; trees: number; slots: number; layout: SlotLayout | 'row per slot'; maxBins: number; maxF: number; y: (rng: Rng, r: number) => number; heavy?: boolean }[] = [
    { name: 'negative targets, 3 trees, random slots', rows: 3001, trees: 3, slots: 20, layout: 'random', maxBins: 64, maxF: 3, y: (rng) => -1e4 + 300 * rng.nextFloat() },
    { name: 'signed targets around 0, one slot per tree (shared, several chunks per slot)', rows: 40009, trees: 2, slots: 2, layout: 'per tree', maxBins: 256, maxF: 2, y: (rng) => (rng.nextFloat() - 0.5) * 1e-3 },
    { name: 'a constant target', rows: 1001, trees: 1, slots: 6, layout: 'random', maxBins: 32, maxF: 3, y: () => 42.5 },
    { name: 'heavy weights, targets spanning 1e12', rows: 2003, trees: 1, slots: 5, layout: 'random', maxBins: 40, maxF: 3, y: (rng) => rng.nextFloat() * 1e12, heavy: true },
    { name: 'one row per node', rows: 300, trees: 1, slots: 300, layout: 'row per slot', maxBins: 16, maxF: 2, y: (rng) => rng.nextFloat() },
  ];
  for (const c of cases) {
    it(`${c.name}: histogram (both variants), best splits and best of node equal the twins`, async () => {
      const ctx = await testGpu();
      const rng = new Rng(c.rows, c.name);
      const p = randomProblem(rng, c.rows, c.trees, 6, 2, c.maxBins);
      const y = Float64Array.from({ length: c.rows }, (_, r) => c.y(rng, r));
      const q = quantiseTargets(y);
      p.labels = q.words;
      // Heavy: a few rows weigh up to 2^20 (a tree's weights still sum below 2^32), so word sums carry.
      if (c.heavy) for (let i = 0; i < p.weight.length; i += 7) p.weight[i] = 1 + rng.nextInt(1 << 20);
      const slot = c.layout === 'row per slot' ? Uint32Array.from({ length: c.rows }, (_, r) => (p.weight[r] > 0 ? r : NONE)) : caseSlots(rng, p, c.slots, c.layout);
      const nodeFeatures = randomCandidates(rng, p.cols, c.slots, c.maxF);
      const shape: HistogramShape = { rows: c.rows, trees: c.trees, slotBase: 0, slotCount: c.slots, maxF: c.maxF, nBins: c.maxBins, classes: REGRESSION_CELL_WORDS, regression: true };
      const want = forestHistogramCpu({ ...shape, bins: p.bins, weight: p.weight, slot, labels: p.labels, nodeFeatures });
      for (const variant of ['global', 'shared'] as const) {
        const got = await histogramOnGpu(ctx, p, slot, nodeFeatures, shape, variant);
        expect(firstDifference(got.totals, want.totals), `${variant} totals`).toBe(-1);
        expect(firstDifference(got.hist, want.hist), `${variant} histogram`).toBe(-1);
      }
      if (c.heavy) expect(want.totals.some((v, i) => i % 4 === 3 && v > 0)).toBe(true);
      // Each slot's totals dequantise to its float64 Σ w·y (to float64 rounding of the terms).
      const sums = new Float64Array(c.slots), mags = new Float64Array(c.slots), weights = new Float64Array(c.slots);
      for (let i = 0; i < c.trees * c.rows; i++) {
        if (slot[i] === NONE || p.weight[i] === 0) continue;
        const wy = p.weight[i] * y[i % c.rows];
        sums[slot[i]] += wy; mags[slot[i]] += Math.abs(wy); weights[slot[i]] += p.weight[i];
      }
      for (let s = 0; s < c.slots; s++) {
        expect(want.totals[4 * s], `slot ${s} weight`).toBe(weights[s]);
        expect(Math.abs(dequantisedSum(want.totals, 4 * s, q) - sums[s]), `slot ${s} sum`).toBeLessThanOrEqual(1e-12 * mags[s]);
      }

      for (const minSamplesLeaf of [1, 30]) {
        const at0 = `minSamplesLeaf ${minSamplesLeaf}`;
        const splitShape = { slotBase: 0, slotCount: c.slots, maxF: c.maxF, nBins: c.maxBins, classes: REGRESSION_CELL_WORDS };
        const records = await bestSplitsOnGpu(ctx, want.hist, want.totals, nodeFeatures, p.binsPerFeature, splitShape, 'variance', minSamplesLeaf);
        const twin = bestSplitsCpu({ ...splitShape, hist: want.hist, totals: want.totals, nodeFeatures, binsPerFeature: p.binsPerFeature, criterion: 'variance', minSamplesLeaf });
        const width = splitRecordWords(REGRESSION_CELL_WORDS);
        let found = 0, clear = 0;
        for (let t = 0; t < c.slots * c.maxF; t++) {
          const bin = records[t * width], at = `${at0} record ${t}`;
          expect(bin === NONE, at).toBe(twin.out[t * width] === NONE);
          if (bin === NONE) continue;
          found++;
          // A constant target scores 0 everywhere: both take the first admissible bin.
          const isClear = twin.bestScore[t] - twin.runnerUp[t] > 1e-5 * Math.abs(twin.bestScore[t]) || c.name === 'a constant target';
          if (!isClear) continue;
          clear++;
          expect(Array.from(records.subarray(t * width, (t + 1) * width)), at).toEqual(Array.from(twin.out.subarray(t * width, (t + 1) * width)));
        }
        if (c.layout === 'row per slot') { expect(found).toBe(0); continue; }
        expect(found).toBeGreaterThan((c.slots * c.maxF) / 3);
        expect(clear).toBeGreaterThan(found / 2);

        const work = new GpuWork(ctx);
        const words = c.slots * nodeRecordWords(REGRESSION_CELL_WORDS);
        const nodes = work.temp(words * 4, 'nodes');
        recordBestOfNodes(work, {
          ...splitShape, criterion: 'variance', minSamplesLeaf, nodes, out: work.input(records, 'records'), hist: work.input(want.hist, 'hist'),
          totals: work.input(want.totals, 'totals'), nodeFeatures: work.input(nodeFeatures, 'features'), binsPerFeature: work.input(p.binsPerFeature, 'bins'),
        });
        const got = u32((await work.finish([{ buf: nodes, floats: words }]))[0]);
        const wantNodes = bestOfNodesCpu(records, want.totals, c.slots, c.maxF, REGRESSION_CELL_WORDS, 'variance');
        const nodeWidth = nodeRecordWords(REGRESSION_CELL_WORDS);
        for (let s = 0; s < c.slots; s++) {
          const k = got[s * nodeWidth], at = `${at0} slot ${s}`;
          expect(k === NONE, at).toBe(wantNodes[s * nodeWidth] === NONE);
          if (k === NONE) continue;
          expect(Array.from(got.subarray(s * nodeWidth + 1, (s + 1) * nodeWidth)), at).toEqual(Array.from(records.subarray((s * c.maxF + k) * width, (s * c.maxF + k + 1) * width)));
          const total = want.totals.subarray(4 * s, 4 * s + 4);
          const scores = Array.from({ length: c.maxF }, (_, j) => {
            const r = (s * c.maxF + j) * width;
            return records[r] === NONE ? -Infinity : splitScore('variance', records.subarray(r + 1, r + width), total, REGRESSION_CELL_WORDS);
          });
          const sorted = [...scores].sort((a, b) => b - a);
          if (sorted[0] - sorted[1] > 1e-5 * Math.abs(sorted[0]) || c.name === 'a constant target') expect(k, at).toBe(wantNodes[s * nodeWidth]);
        }
      }
    });
  }

  it('quantised targets: below 2^64, offset the minimum, a constant target all zero', () => {
    const q = quantiseTargets(Float64Array.from([-3, 5, 1, 5]));
    expect(q.offset).toBe(-3);
    // 8 × 2^shift < 2^64 <= 8 × 2^(shift + 1): the largest 8 maps to the top of the range.
    expect(q.shift).toBe(60);
    expect([q.words[2], q.words[3]]).toEqual([0, 2 ** 31]);
    expect([q.words[0], q.words[1]]).toEqual([0, 0]);
    expect(Array.from(quantiseTargets(Float64Array.from([7, 7, 7])).words)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(() => quantiseTargets(Float64Array.from([1, Infinity]))).toThrow(/finite/);
  });
});

/** Decisions for `slots` slots: some leaves, some children NONE, bins within each feature's range. */
function randomDecisions(rng: Rng, p: Problem, slots: number, nextSlots: number): Uint32Array {
  const d = new Uint32Array(4 * slots);
  for (let s = 0; s < slots; s++) {
    const f = rng.nextInt(p.cols - 1); // not the last feature, whose single bin cannot split
    const child = () => (rng.nextInt(6) === 0 ? NONE : rng.nextInt(nextSlots));
    d.set(s % 5 === 4 ? [NONE, 0, 0, 0] : [f, rng.nextInt(p.binsPerFeature[f]), child(), child()], 4 * s);
  }
  return d;
}

describe.skipIf(skipGpuTests)('forest route kernel', () => {
  for (const [rows, trees] of [[1001, 1], [5003, 3]]) {
    it(`${trees} tree(s) × ${rows} rows, leaves and dropped children`, async () => {
      const ctx = await testGpu();
      const rng = new Rng(rows, 'route');
      const p = randomProblem(rng, rows, trees, 5, 2, 256);
      const slots = 17;
      const slot = randomSlots(rng, p, slots);
      const decisions = randomDecisions(rng, p, slots, 2 * slots);
      const bins = await uploadForestBins(ctx, ringOf(ctx), p.bins, rows, p.cols);
      const work = new GpuWork(ctx);
      const slotBuf = work.input(slot, 'slot');
      recordRoute(work, { bins, rows, trees, slot: slotBuf, decisions: work.input(decisions, 'decisions') });
      const [got] = await work.finish([{ buf: slotBuf, floats: trees * rows }]);
      freeBuffer(ctx, bins);
      const want = routeCpu(p.bins, rows, trees, slot, decisions);
      // Rows moved to many children, and to NONE.
      expect(new Set(want).size).toBeGreaterThan(10);
      expect(want.includes(NONE)).toBe(true);
      expect(firstDifference(u32(got), want)).toBe(-1);
    });
  }
});

describe.skipIf(skipGpuTests)('two levels grown by hand', () => {
  it('histogram -> best splits -> route -> histogram equals a CPU recount of the children', async () => {
    const ctx = await testGpu();
    const rng = new Rng(2, 'two levels');
    const rows = 3001, trees = 3, classes = 3, maxF = 2, minSamplesLeaf = 5;
    const p = randomProblem(rng, rows, trees, 5, classes, 32);
    // Make the labels depend on feature 0, so splits are real.
    for (let r = 0; r < rows; r++) if (rng.nextInt(3) > 0) p.labels[r] = Math.min(classes - 1, Math.floor(p.bins[r] / 11));
    const binsBuf = await uploadForestBins(ctx, ringOf(ctx), p.bins, rows, p.cols);
    const slot0 = Uint32Array.from({ length: trees * rows }, (_, i) => (p.weight[i] > 0 ? Math.floor(i / rows) : NONE));
    const slotBuf = await uploadNew(ctx, slot0, 'slot');
    const common = { bins: binsBuf, rows, trees, nBins: p.nBins, classes, maxF, slotBase: 0 };
    // Each root draws feature 0 and one of features 1..cols-2 (the last has a single bin).
    const nf0 = Uint32Array.from({ length: trees * maxF }, (_, i) => (i % maxF === 0 ? 0 : 1 + rng.nextInt(p.cols - 2)));

    // Level 0: one root per tree.
    const work0 = new GpuWork(ctx);
    const weight = await uploadNew(ctx, p.weight, 'weight'), labels = await uploadNew(ctx, p.labels, 'labels');
    const nf0Buf = work0.input(nf0, 'nf0');
    const hist0 = work0.temp(forestHistogramBytes(trees, maxF, p.nBins, classes), 'hist0'), totals0 = work0.temp(trees * classes * 4, 'totals0');
    recordForestHistogram(work0, { ...common, slotCount: trees, weight, slot: slotBuf, labels, nodeFeatures: nf0Buf, hist: hist0, totals: totals0 });
    const width = splitRecordWords(classes);
    const out0 = work0.temp(trees * maxF * width * 4, 'out0');
    recordBestSplits(work0, { hist: hist0, totals: totals0, slotCount: trees, maxF, nBins: p.nBins, classes, nodeFeatures: nf0Buf, slotBase: 0,
      binsPerFeature: work0.input(p.binsPerFeature, 'bpf'), criterion: 'gini', minSamplesLeaf, out: out0 });
    const [t0, o0] = (await work0.finish([{ buf: totals0, floats: trees * classes }, { buf: out0, floats: trees * maxF * width }])).map(u32);

    // Host: the best candidate of each root in float64; tree 1 drops its right child.
    const decisions = new Uint32Array(4 * trees), bestK: number[] = [];
    let next = 0;
    for (let t = 0; t < trees; t++) {
      let best = -1, bestScore = -Infinity;
      for (let k = 0; k < maxF; k++) {
        if (o0[(t * maxF + k) * width] === NONE) continue;
        const score = splitScore('gini', o0.subarray((t * maxF + k) * width + 1, (t * maxF + k + 1) * width), t0.subarray(t * classes, (t + 1) * classes), classes);
        if (score > bestScore) { bestScore = score; best = k; }
      }
      expect(best, `tree ${t} splits`).toBeGreaterThanOrEqual(0);
      bestK.push(best);
      const left = next++, right = t === 1 ? NONE : next++;
      decisions.set([nf0[t * maxF + best], o0[(t * maxF + best) * width], left, right], 4 * t);
    }

    // Level 1: route, then the children's histogram.
    const work1 = new GpuWork(ctx);
    const nf1 = randomCandidates(rng, p.cols, next, maxF);
    recordRoute(work1, { bins: binsBuf, rows, trees, slot: slotBuf, decisions: work1.input(decisions, 'decisions') });
    const hist1 = work1.temp(forestHistogramBytes(next, maxF, p.nBins, classes), 'hist1'), totals1 = work1.temp(next * classes * 4, 'totals1');
    recordForestHistogram(work1, { ...common, slotCount: next, weight, slot: slotBuf, labels, nodeFeatures: work1.input(nf1, 'nf1'), hist: hist1, totals: totals1 });
    const [s1, h1, t1] = (await work1.finish([{ buf: slotBuf, floats: trees * rows }, { buf: hist1, floats: hist1.size / 4 }, { buf: totals1, floats: next * classes }])).map(u32);
    for (const b of [binsBuf, slotBuf, weight, labels]) freeBuffer(ctx, b);

    // CPU recount: each in-bag row goes straight from its root to a child by the decision.
    const shape1 = { maxF, nBins: p.nBins, classes };
    const wantHist = new Uint32Array(forestHistogramBytes(next, maxF, p.nBins, classes) / 4), wantTotals = new Uint32Array(next * classes);
    const wantSlot = new Uint32Array(trees * rows).fill(NONE);
    for (let t = 0; t < trees; t++) {
      const [f, bin, left, right] = decisions.subarray(4 * t, 4 * t + 4);
      for (let r = 0; r < rows; r++) {
        const w = p.weight[t * rows + r];
        if (w === 0) continue;
        const child = p.bins[f * rows + r] <= bin ? left : right;
        wantSlot[t * rows + r] = child;
        if (child === NONE) continue;
        wantTotals[child * classes + p.labels[r]] += w;
        for (let k = 0; k < maxF; k++) {
          const g = nf1[child * maxF + k];
          if (g !== NONE) wantHist[histIndex(shape1, child, k, p.bins[g * rows + r], p.labels[r])] += w;
        }
      }
    }
    expect(firstDifference(s1, wantSlot)).toBe(-1);
    expect(firstDifference(t1, wantTotals)).toBe(-1);
    expect(firstDifference(h1.subarray(0, wantHist.length), wantHist)).toBe(-1);
    // The children of tree 0 hold all of its root's weight, split as the best-split record said.
    const [l0, r0] = [decisions[2], decisions[3]];
    for (let cl = 0; cl < classes; cl++) {
      expect(t1[l0 * classes + cl] + t1[r0 * classes + cl]).toBe(t0[cl]);
      expect(t1[l0 * classes + cl]).toBe(o0[bestK[0] * width + 1 + cl]);
    }
  });
});

/**
 * Timing of one level's kernels at the driver's scale, only when GPUFRAME_FOREST_BENCH=1 (on a
 * real GPU): rows × trees (GPUFRAME_FOREST_BENCH_ROWS, default 10^6; _TREES, default 50), 5
 * candidates of 256 bins, 2 classes, slots numbered tree by tree, 2^level per tree. Prints ms.
 */
