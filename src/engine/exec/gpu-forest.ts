// Random-forest trees grown on a GPU worker's device. The binned rows and the target (class
// labels, or a regression target quantised to 64-bit integers) are uploaded once; the worker's
// trees grow together in batches (ForestGrowth keeps the trees), and per level the device builds
// exact integer histograms for every (node, candidate feature): class weights, or weight and
// Σ w·yq; it picks each candidate's best bin and each node's best candidate (forest.ts kernels),
// and sends back only that choice and the node totals; routing rows to their children stays on
// the device. Sums are exact integers and each tree is grown by one device from its own random
// stream, so a tree is the same whichever GPU grows it and whichever trees share its batch.

import type { GpuContext } from '../gpu/device.js';
import { asU32, freeBuffer, stagingRingOf, storageBuffer, uploadNew } from '../gpu/buffers.js';
import { bootstrapKey, ForestGrowth, totalsWidth, type BinnedData, type Frontier, type GrownTree, type LevelRoute, type LevelSearch, type SplitFinder, type TreeSpec } from '../ml/forest-tree.js';
import { growTreesOnCpu } from '../ml/forest-split-cpu.js';
import type { FragmentResult, Terminal } from './fragment.js';
import { readBinnedFile, writeGrownTrees } from './forest-trees.js';
import {
  dequantisedSum, forestHistogramBytes, nodeRecordWords, quantiseTargets, recordBestOfNodes, recordBestSplits, recordForestHistogram, recordRoute, recordRowWeights,
  REGRESSION_CELL_WORDS, splitRecordWords, uploadForestBins, type QuantisedTargets, type SplitCriterion,
} from '../../kernels/forest.js';
import { PhaseTimes } from '../gpu/timing.js';
import { GpuWork } from '../../kernels/ml-matrix.js';

/** Device bytes one histogram chunk may take (a level with more nodes is searched in chunks). */
const HISTOGRAM_BYTES = 256 << 20;
/**
 * Batches of trees a GPU worker grows at once. GPUFRAME_FOREST_LANES overrides it (for measuring;
 * a tree is the same whatever batch grows it).
 */
const FOREST_LANES = Math.max(1, Math.floor(Number(process.env.GPUFRAME_FOREST_LANES) || 2));
/** Device bytes the per-(tree, row) weight and slot arrays of the batches growing at once may take. */
const ROW_STATE_BYTES = 1 << 30;

/** grow-trees on a GPU worker: on the device when the task says so (forestOnGpu), else on this worker's CPU. */
export async function growTreesTaskOnGpu(ctx: GpuContext, terminal: Extract<Terminal, { kind: 'grow-trees' }>): Promise<FragmentResult> {
  const data = readBinnedFile(terminal.file);
  const grown = terminal.gpu
    ? await growTreesOnGpu(ctx, data, terminal.spec, terminal.trees, await forestInputsOf(ctx, terminal.file.path, data, terminal.spec))
    : growTreesOnCpu(data, terminal.spec, terminal.trees);
  return { grownFile: writeGrownTrees(terminal.file, grown), rows: 0, warnings: [] };
}

/** The device copy of the last binned file this worker grew trees on (its tasks of one forest share it). */
let uploaded: { path: string; inputs: Promise<ForestInputs> } | null = null;

function forestInputsOf(ctx: GpuContext, path: string, data: BinnedData, spec: TreeSpec): Promise<ForestInputs> {
  if (uploaded?.path !== path) {
    const previous = uploaded;
    const inputs = uploadForestInputs(ctx, data, spec);
    uploaded = { path, inputs };
    inputs.catch(() => { if (uploaded?.inputs === inputs) uploaded = null; }); // a failed upload is tried again
    void previous?.inputs.then((old) => freeForestInputs(ctx, old), () => {});
  }
  return uploaded.inputs;
}

/**
 * Device data every batch reads. labels: class per row, or for regression quantiseTargets' words
 * (`quantised` says how to read sums of them back).
 */
interface ForestInputs { bins: GPUBuffer; labels: GPUBuffer; binsPerFeature: GPUBuffer; nBins: number; quantised: QuantisedTargets | null }

async function uploadForestInputs(ctx: GpuContext, data: BinnedData, spec: TreeSpec): Promise<ForestInputs> {
  const ring = stagingRingOf(ctx);
  const bins = await uploadForestBins(ctx, ring, data.bins, data.rows, data.cols);
  const quantised = spec.task === 'regression' ? quantiseTargets(Float64Array.from(data.target)) : null;
  const labels = await uploadNew(ctx, quantised ? quantised.words : Uint32Array.from(data.target), 'forest labels', ring);
  const binsPerFeature = await uploadNew(ctx, Uint32Array.from(data.binsPerFeature), 'forest bins per feature', ring);
  return { bins, labels, binsPerFeature, nBins: Math.max(...data.binsPerFeature), quantised };
}

function freeForestInputs(ctx: GpuContext, inputs: ForestInputs): void {
  for (const b of [inputs.bins, inputs.labels, inputs.binsPerFeature]) freeBuffer(ctx, b);
}

/** Grows the trees on the device from `inputs` (uploaded once, or here and freed after when not given). */
export async function growTreesOnGpu(ctx: GpuContext, data: BinnedData, spec: TreeSpec, treeIndices: readonly number[], given?: ForestInputs): Promise<GrownTree[]> {
  const inputs = given ?? await uploadForestInputs(ctx, data, spec);
  try {
    // Batches grow at once (FOREST_LANES): while the device searches one batch's level, the host
    // decides another's (one batch alone leaves the device or the host idle half the time).
    const limit = Math.min(ROW_STATE_BYTES / 4, ctx.device.limits.maxStorageBufferBindingSize);
    const fits = Math.max(1, Math.min(Math.floor(limit / (data.rows * 4)), Math.floor((2 ** 32 - 1) / data.rows)));
    const perBatch = Math.min(fits, Math.max(1, Math.ceil(treeIndices.length / FOREST_LANES)));
    const batches: number[][] = [];
    for (let at = 0; at < treeIndices.length; at += perBatch) batches.push(treeIndices.slice(at, at + perBatch));
    const grown: GrownTree[][] = new Array(batches.length);
    let next = 0;
    const lane = async () => {
      while (next < batches.length) {
        const b = next++;
        grown[b] = await growBatch(ctx, inputs, data, spec, batches[b]);
      }
    };
    await Promise.all(Array.from({ length: FOREST_LANES }, lane));
    return grown.flat();
  } finally {
    if (!given) freeForestInputs(ctx, inputs);
  }
}

/** Grows one batch of trees, level by level. */
async function growBatch(ctx: GpuContext, inputs: ForestInputs, data: BinnedData, spec: TreeSpec, treeIndices: readonly number[]): Promise<GrownTree[]> {
  const phases = new PhaseTimes();
  const growth = new ForestGrowth(data, spec, treeIndices);
  const finder = await GpuSplitFinder.create(ctx, inputs, data, spec, treeIndices);
  phases.mark('start');
  let levels = 0, nodes = 0;
  try {
    while (!growth.done) {
      levels++;
      nodes += growth.frontier.count;
      const search = await finder.search(growth.frontier);
      phases.mark('search');
      const route = growth.decide(search);
      phases.mark('decide');
      await finder.route(route);
      phases.mark('route');
    }
  } finally {
    finder.free();
  }
  phases.report(`forest batch of ${treeIndices.length} trees, ${levels} levels, ${nodes} nodes searched`);
  return growth.grown;
}

/** Rows live on the device as (weight, slot) per (tree, row); a row's slot is its node's position in the current frontier. */
class GpuSplitFinder implements SplitFinder {
  private constructor(
    private readonly ctx: GpuContext, private readonly inputs: ForestInputs,
    private readonly data: BinnedData, private readonly spec: TreeSpec,
    private readonly trees: number, private readonly weight: GPUBuffer, private readonly slot: GPUBuffer) {}

  /** Weights and root slots of the growth's trees, made on the device (the same draws as treeWeights). */
  static async create(ctx: GpuContext, inputs: ForestInputs, data: BinnedData, spec: TreeSpec, treeIndices: readonly number[]): Promise<GpuSplitFinder> {
    const trees = treeIndices.length, bytes = trees * data.rows * 4;
    const weight = storageBuffer(ctx, bytes, 'forest weights');
    const slot = storageBuffer(ctx, bytes, 'forest slots');
    const work = new GpuWork(ctx);
    try {
      recordRowWeights(work, { rows: data.rows, keys: Uint32Array.from(treeIndices, (t) => bootstrapKey(spec, t)), bootstrap: spec.bootstrap, weight, slot });
      await work.finish([]);
    } catch (err) {
      freeBuffer(ctx, weight);
      freeBuffer(ctx, slot);
      throw err;
    }
    return new GpuSplitFinder(ctx, inputs, data, spec, trees, weight, slot);
  }

  async search(frontier: Frontier): Promise<LevelSearch> {
    const { ctx, inputs, data, spec } = this;
    const regression = inputs.quantised !== null;
    // Counters per histogram cell on the device; numbers per node totals on the host.
    const classes = regression ? REGRESSION_CELL_WORDS : data.nClasses, width = totalsWidth(data, spec.task);
    const criterion: SplitCriterion = regression ? 'variance' : spec.criterion;
    const n = frontier.count, m = spec.maxFeatures, nodeWords = nodeRecordWords(classes);
    const out: LevelSearch = { totals: new Float64Array(n * width), candidate: new Int32Array(n), bin: new Int32Array(n), left: new Float64Array(n * width) };
    // -1 in the host's Int32 arrays reads as NONE (0xFFFFFFFF) on the device.
    const nodeFeatures = await uploadNew(ctx, asU32(frontier.features), 'forest node features', stagingRingOf(ctx));
    try {
      const perSlot = forestHistogramBytes(1, m, inputs.nBins, classes);
      const chunk = Math.max(1, Math.floor(Math.min(HISTOGRAM_BYTES, ctx.device.limits.maxStorageBufferBindingSize) / perSlot));
      for (let slotBase = 0; slotBase < n; slotBase += chunk) {
        const slotCount = Math.min(chunk, n - slotBase);
        const work = new GpuWork(ctx);
        const hist = work.temp(slotCount * perSlot, 'forest histogram');
        const totals = work.temp(slotCount * classes * 4, 'forest totals');
        const records = work.temp(slotCount * m * splitRecordWords(classes) * 4, 'forest best splits');
        const nodes = work.temp(slotCount * nodeWords * 4, 'forest best of nodes');
        const shape = { slotBase, slotCount, maxF: m, nBins: inputs.nBins, classes };
        recordForestHistogram(work, { ...shape, regression, rows: data.rows, trees: this.trees, bins: inputs.bins, weight: this.weight, slot: this.slot, labels: inputs.labels, nodeFeatures, hist, totals });
        const splits = { ...shape, criterion, minSamplesLeaf: spec.minSamplesLeaf, hist, totals, nodeFeatures, binsPerFeature: inputs.binsPerFeature, out: records };
        recordBestSplits(work, splits);
        recordBestOfNodes(work, { ...splits, nodes });
        const [t, r] = await work.finish([{ buf: totals, floats: slotCount * classes }, { buf: nodes, floats: slotCount * nodeWords }]);
        const cells = asU32(t), best = asU32(r);
        for (let s = 0; s < slotCount; s++) {
          const at = s * nodeWords, to = slotBase + s;
          out.candidate[to] = best[at] | 0; // NONE becomes -1
          out.bin[to] = best[at + 1] | 0;
          this.hostTotals(cells, s * classes, out.totals, to * width);
          this.hostTotals(best, at + 2, out.left, to * width);
        }
      }
    } finally {
      freeBuffer(ctx, nodeFeatures);
    }
    return out;
  }

  /**
   * A device cell as the grower's totals: class weights as they are; a regression cell as
   * [w, Σ w·y, NaN] (the device keeps no Σ w·y²: see LevelSearch).
   */
  private hostTotals(cells: Uint32Array, at: number, to: Float64Array, toAt: number): void {
    const q = this.inputs.quantised;
    if (!q) { for (let c = 0; c < this.data.nClasses; c++) to[toAt + c] = cells[at + c]; return; }
    to[toAt] = cells[at];
    to[toAt + 1] = dequantisedSum(cells, at, q);
    to[toAt + 2] = NaN;
  }

  async route(route: LevelRoute): Promise<void> {
    const work = new GpuWork(this.ctx);
    const decisions = work.input(asU32(route), 'forest decisions');
    recordRoute(work, { bins: this.inputs.bins, rows: this.data.rows, trees: this.trees, slot: this.slot, decisions });
    await work.finish([]);
  }

  free(): void {
    freeBuffer(this.ctx, this.weight);
    freeBuffer(this.ctx, this.slot);
  }
}
