// ML design-matrix partitions held by a GPU worker (the GPU side of matrix.ts). A loaded partition
// is uploaded once, column by column, to the device (ml-matrix.ts layout): from an Arrow file's
// float64 columns, read from the file straight into staging memory (no host copy: CPU code reads
// rows from the file again); else from its batches' float64 columns, kept on the host. map-matrix
// runs the k-means, linear-regression and moments tasks as kernels over every partition this
// worker holds, in one submission with one readback; the other tasks (the forest's binning and
// row sampling) run the CPU code on a row-major copy made when first needed. A matrix loaded
// without `kernels` (the forest needs none over it) is not uploaded. Results are per partition and
// deterministic, so which GPU holds a partition never changes them (the trainer combines them in
// partition order).

import { concatBatches } from '../batch.js';
import { DataError } from '../errors.js';
import { float64Extents } from '../io/arrow.js';
import { ArrowFileColumns } from '../io/arrow-file-columns.js';
import { memoryPiece } from '../io/byte-pieces.js';
import type { GpuContext } from '../gpu/device.js';
import { asU32, kernelsPrepared, readBack, stagingRingOf } from '../gpu/buffers.js';
import { PhaseTimes } from '../gpu/timing.js';
import { designColumns, joinDesignColumns, rowMajor, type DesignColumns } from '../ml/design-matrix.js';
import { PARTITION_TASKS, type MatrixPartition } from '../ml/partitioned.js';
import { dropScratch } from '../ml/scratch.js';
import type { AssignArgs, PickTarget, SampleArgs, ScoredRow } from '../ml/kmeans-tasks.js';
import type { MomentsArgs } from '../ml/stats-tasks.js';
import { rowUniform } from '../ml/random.js';
import { centreExponent, kmeansKernels, kmeansOnGpu, MAX_ABS, maxBitsOf, parSampleCpu, recordMaxAbs, recordParSample, recordPotential, recordStep, sampledRows, stepPairs, recordPpUpdate, recordSmallestHash, recordTotal, smallestHashRow, smallestHashWorkgroups } from '../../kernels/kmeans.js';
import { gramKernels, gramOnGpu, gramPairs, gramResultOf, linregKernels, momentPairs, momentsResultOf, recordGram, recordResidual } from '../../kernels/linreg.js';
import { BLOCK_ROWS, blocksOf, deviceMatrixFits, freeMatrix, GpuWork, pairsToDD, prepareKernels, recordBlockSums, uploadBlocks, uploadColumns, type DeviceMatrix, type KernelSource } from '../../kernels/ml-matrix.js';
import { sourceFile, type FragmentResult, type MatrixKernels, type Task } from './fragment.js';
import { decodesOnParent, type MappedPairs } from './mapped-pairs.js';
import { runTask, type BroadcastCache } from './run-fragment.js';
import { LloydStep } from './gpu-lloyd-step.js';

/** Seeding state of one k-means++ run: each row's nearest squared distance among the first `count` centres. */
interface Seeding { minD2: GPUBuffer; count: number }

/** A partition's rows on the host; `row` reads one row without making the whole row-major copy. */
type HostPartition = MatrixPartition & Required<Pick<MatrixPartition, 'row'>>;

interface GpuPartition {
  host: HostPartition;
  /** Null when the partition does not fit a device binding or the budget: its tasks run on the host copy. */
  device: DeviceMatrix | null;
  seeding: Map<string, Seeding>;
}

/** Partitions by matrix id, then partition index. */
const matrices = new Map<string, Map<number, GpuPartition>>();

export function isMatrixTask(task: Task): boolean {
  const k = task.terminal.kind;
  return k === 'load-matrix' || k === 'map-matrix' || k === 'drop-matrix';
}

export async function runGpuMatrixTask(task: Task, cache: BroadcastCache, ctx: GpuContext): Promise<FragmentResult> {
  const { terminal } = task;
  switch (terminal.kind) {
    case 'load-matrix':
      return load(task, cache, ctx);
    case 'drop-matrix':
      for (const p of matrices.get(terminal.matrixId)?.values() ?? []) freePartition(ctx, p);
      matrices.delete(terminal.matrixId);
      lloydSteps.get(terminal.matrixId)?.destroy();
      lloydSteps.delete(terminal.matrixId);
      preparing.delete(terminal.matrixId);
      return { rows: 0, warnings: [] };
    case 'map-matrix': {
      const parts = [...(matrices.get(terminal.matrixId)?.values() ?? [])].sort((a, b) => a.host.index - b.host.index);
      for (const p of parts) p.host.firstRow = terminal.firstRows[p.host.index];
      try {
        const round = terminal.task === 'kmeans.assign' ? await lloydRound(ctx, terminal.matrixId, parts, terminal.args as AssignArgs) : null;
        return { ...(round ?? await mapPartitions(ctx, parts, terminal.task, terminal.args)), rows: 0, warnings: [] };
      } catch (err) {
        if (ctx.lostReason) throw err;
        // Seeding state may be half-updated: drop it, so the next call rebuilds it from the centres.
        for (const p of parts) { for (const s of p.seeding.values()) s.minD2.destroy(); p.seeding.clear(); }
        const warning = `GPU ${terminal.task} failed (${err instanceof Error ? err.message : String(err)}); it ran on the CPU`;
        return { mapped: parts.map((p) => ({ index: p.host.index, value: PARTITION_TASKS[terminal.task](p.host, terminal.args) })), rows: 0, warnings: [warning] };
      }
    }
    default:
      throw new Error(`not a matrix task: ${terminal.kind}`);
  }
}

/** Matrices whose kernels this worker has started compiling (at its first partition's load). */
const preparing = new Set<string>();

/** What the trainer's tasks dispatch on partitions of `columns` features (+ y): the moments' kernels, then the trainer's. */
function matrixKernels(ctx: GpuContext, columns: number, hasY: boolean, kernels: MatrixKernels): KernelSource[] {
  const moments = gramOnGpu(columns + (hasY ? 1 : 0)) ? [...gramKernels(ctx), MAX_ABS] : [];
  return [...moments, ...(kernels.trainer === 'kmeans' ? kmeansKernels(ctx, columns, kernels.k) : linregKernels())];
}

async function load(task: Task, cache: BroadcastCache, ctx: GpuContext): Promise<FragmentResult> {
  const { fragment, terminal } = task;
  if (terminal.kind !== 'load-matrix') throw new Error('expected load-matrix');
  const phases = new PhaseTimes();
  const cols = terminal.features.length, hasY = terminal.target !== null, width = cols + (hasY ? 1 : 0);
  if (terminal.kernels && !preparing.has(terminal.matrixId)) {
    preparing.add(terminal.matrixId);
    const kernels = terminal.kernels;
    void ctx.checked.then(() => prepareKernels(ctx, matrixKernels(ctx, cols, hasY, kernels)));
  }
  const names = hasY ? [...terminal.features, terminal.target!] : terminal.features;
  const inFile = terminal.kernels ? await columnsInFile(fragment, names) : null;
  // The partition as CPU code reads it, and its upload: from the file straight into staging memory
  // (no host copy: CPU code reads rows from the file again), or from its batches' columns.
  let host: HostPartition, upload: () => Promise<DeviceMatrix>, matched: FragmentResult['matched'], warnings: string[];
  if (inFile && deviceMatrixFits(ctx, inFile.rows, width)) {
    host = filePartition(fragment.index, inFile, cols, hasY);
    upload = async () => {
      const handle = await inFile.open();
      try {
        // Whole batches where the columns lie together (a read per batch, not per column and batch).
        const blocks = inFile.blocks(handle);
        return blocks && blocks.every((b) => b.byteLength <= ctx.device.limits.maxStorageBufferBindingSize)
          ? await uploadBlocks(ctx, stagingRingOf(ctx), blocks, inFile.rows, hasY)
          : await uploadColumns(ctx, stagingRingOf(ctx), names.map((_, j) => inFile.pieces(handle, j)), inFile.rows, hasY);
      } finally {
        await handle.close();
      }
    };
    matched = {};
    warnings = [];
    phases.mark('find the columns in the file');
  } else {
    const read = await runTask({ fragment, terminal: { kind: 'collect' } }, cache);
    const batches = read.batches!;
    // Each batch's columns as they are (an Arrow batch's are views of what was read): joined on
    // the host only if CPU code reads them; the upload copies them into staging memory itself.
    const pieces = (batches.length > 0 ? batches : [concatBatches([], [])]).map((b) => designColumns(b, terminal.features, terminal.target, sourceFile(fragment.source), terminal.targetLabels));
    host = columnPartition(fragment.index, pieces, cols);
    const columns = [...terminal.features.map((_, j) => pieces.map((p) => memoryPiece(p.columns[j]))), ...(hasY ? [pieces.map((p) => memoryPiece(p.y!))] : [])];
    upload = () => uploadColumns(ctx, stagingRingOf(ctx), columns, host.rows, hasY);
    ({ matched, warnings } = read);
    phases.mark('read');
  }
  let device: DeviceMatrix | null = null;
  if (terminal.kernels && deviceMatrixFits(ctx, host.rows, width)) {
    try {
      // Column-major on the device, so no row-major copy is needed.
      device = await upload();
    } catch (err) {
      if (ctx.lostReason || err instanceof DataError) throw err;
      warnings.push(`partition ${fragment.index} stays on the CPU of its GPU worker (${err instanceof Error ? err.message : String(err)})`);
    }
  } else if (terminal.kernels && host.rows > 0) {
    warnings.push(`partition ${fragment.index} (${host.rows} rows) exceeds the GPU's storage binding limit; its ML tasks run on the CPU (use a smaller --blocksize)`);
  }
  phases.mark('upload');
  phases.report(`load-matrix of partition ${fragment.index}, ${host.rows} rows`);
  const held = matrices.get(terminal.matrixId) ?? new Map<number, GpuPartition>();
  matrices.set(terminal.matrixId, held);
  const old = held.get(fragment.index);
  if (old) freePartition(ctx, old);
  held.set(fragment.index, { host, device, seeding: new Map() });
  return { holder: process.pid, matched, rows: host.rows, warnings };
}

/**
 * The partition's columns where they lie in its Arrow IPC file, when the task reads nothing but
 * those float64 columns of a file chunk (no nulls; io/arrow-ipc.ts float64Extents); else null.
 */
async function columnsInFile(fragment: Task['fragment'], names: readonly string[]): Promise<ArrowFileColumns | null> {
  const { source, ops } = fragment;
  if (source.kind !== 'arrow' || !ops.every((op) => op.kind === 'project' && names.every((n) => op.columns.includes(n)))) return null;
  const extents = await float64Extents(source.chunk, names);
  return extents && new ArrowFileColumns(source.chunk, extents);
}

/** A partition whose rows stay in its file: whole columns and single rows are read again when CPU code asks. */
function filePartition(index: number, file: ArrowFileColumns, cols: number, hasY: boolean): HostPartition {
  const columns: (Float64Array | undefined)[] = [];
  const column = (j: number) => (columns[j] ??= file.column(j));
  let x: Float64Array | null = null;
  return {
    index, firstRow: -1, rows: file.rows, cols,
    get y() { return hasY ? column(cols) : null; },
    get x() { return (x ??= rowMajor(Array.from({ length: cols }, (_, j) => column(j)), file.rows)); },
    column,
    row: (r) => file.row(r, cols),
  };
}

/**
 * A partition kept as its batches' columns: the joined columns and their row-major form (what the
 * CPU code of a task reads) are made only if such a task runs here; single rows come from the pieces.
 */
function columnPartition(index: number, pieces: readonly DesignColumns[], cols: number): HostPartition {
  const starts = [0];
  for (const p of pieces) starts.push(starts[starts.length - 1] + p.rows);
  const rows = starts[pieces.length];
  let joined: DesignColumns | null = null;
  const whole = () => (joined ??= joinDesignColumns(pieces, cols));
  let x: Float64Array | null = null;
  return {
    index, firstRow: -1, rows, cols,
    get y() { return pieces[0].y === null ? null : whole().y; },
    get x() { return (x ??= rowMajor(whole().columns, rows)); },
    column: (j) => whole().columns[j],
    row: (r) => {
      let i = 0;
      while (starts[i + 1] <= r) i++;
      return Float64Array.from(pieces[i].columns, (c) => c[r - starts[i]]);
    },
  };
}

function freePartition(ctx: GpuContext, p: GpuPartition): void {
  if (p.device) freeMatrix(ctx, p.device);
  for (const s of p.seeding.values()) s.minD2.destroy();
  p.device = null;
  p.seeding.clear();
}

/**
 * What one partition's task needs on the device: `pairs` (8-byte) results that `record` records at
 * an offset of the shared output buffer, then decoded (by `decode` here, or by the parent for the
 * tasks of mapped-pairs.ts). A plan with `value` needs no GPU work.
 */
type Plan =
  | { value: unknown }
  | { pairs: number; record(work: GpuWork, out: GPUBuffer, offset: number): void; decode?(pairs: Float32Array): unknown; summed?: boolean };

type DevicePartition = GpuPartition & { device: DeviceMatrix };
type GpuPartitionTask = (ctx: GpuContext, p: DevicePartition, args: any) => Plan | null;

/** Each partition's result: a value, or for the tasks the parent decodes, its pairs in `mappedPairs`. */
async function mapPartitions(ctx: GpuContext, parts: GpuPartition[], name: string, args: unknown): Promise<Pick<FragmentResult, 'mapped' | 'mappedPairs'>> {
  const cpu = PARTITION_TASKS[name];
  if (!cpu) throw new Error(`unknown partition task '${name}'`);
  const gpu = GPU_TASKS[name] as GpuPartitionTask | undefined;
  const phases = new PhaseTimes();
  await kernelsPrepared(ctx); // what the loads started compiling, rather than compiling it again here
  const plans = parts.map((p) => (gpu && p.device ? gpu(ctx, p as DevicePartition, args) : null));
  const work = new GpuWork(ctx);
  try {
    // Each plan's place in the output; the plans whose results are exact sums share one.
    let total = 0, summedAt = -1;
    const offsets = plans.map((plan) => {
      if (!plan || !('pairs' in plan)) return total;
      if (plan.summed) {
        if (summedAt < 0) { summedAt = total; total += plan.pairs; }
        return summedAt;
      }
      total += plan.pairs;
      return total - plan.pairs;
    });
    let results: Float32Array | null = null;
    if (total > 0) {
      const out = work.temp(total * 8, 'ml results');
      // Submitted partition by partition, so the device starts while the host records the rest;
      // each partition's temporaries are the next one's.
      plans.forEach((plan, i) => {
        if (!plan || !('pairs' in plan)) return;
        const mark = work.mark();
        plan.record(work, out, offsets[i]);
        work.recycle(mark);
      });
      phases.mark('record');
      [results] = await work.finish([{ buf: out, floats: total * 2 }]);
      phases.mark('submit and read back');
    }
    const mapped: { index: number; value: unknown }[] = [];
    const shipped: MappedPairs = { groups: [], ranges: [], pairs: results ?? new Float32Array(0) };
    const summed: number[] = [];
    for (let i = 0; i < parts.length; i++) {
      const plan = plans[i], index = parts[i].host.index;
      if (!plan) mapped.push({ index, value: cpu(parts[i].host, args) });
      else if ('value' in plan) mapped.push({ index, value: plan.value });
      else if (decodesOnParent(name)) {
        // The summed plans' partitions share one group (their one result); any other is its own.
        const group = plan.summed ? summed : [];
        if (group.length === 0) { shipped.groups.push(group); shipped.ranges.push([offsets[i] * 2, (offsets[i] + plan.pairs) * 2]); }
        group.push(index);
      } else mapped.push({ index, value: await plan.decode!(results!.subarray(offsets[i] * 2, (offsets[i] + plan.pairs) * 2)) });
    }
    phases.mark('decode');
    phases.report(`${name} over ${parts.length} partitions`);
    return { mapped, ...(shipped.groups.length > 0 ? { mappedPairs: shipped } : {}) };
  } finally {
    work.release();
  }
}

/** Each matrix's k-means step, recorded a round ahead (gpu-lloyd-step.ts). */
const lloydSteps = new Map<string, LloydStep>();

/**
 * A k-means round through the matrix's LloydStep (made, or made again, when the round's shape
 * differs from its last): every partition on the device, the same result as mapPartitions gives.
 * Null where mapPartitions must run it (a partition on the host, a shape the kernels do not take).
 */
async function lloydRound(ctx: GpuContext, matrixId: string, parts: GpuPartition[], { centers, k, basis, countsOnly = false, inertia = true }: AssignArgs): Promise<Pick<FragmentResult, 'mapped' | 'mappedPairs'> | null> {
  if (parts.length === 0 || !parts.every((p) => p.device !== null) || !kmeansOnGpu(parts[0].device!.cols, k)) return null;
  const shape = { parts: parts.map((p) => p.device!), k, countsOnly, scaleRows: basis.rows, maxAbs: basis.maxAbs };
  let step = lloydSteps.get(matrixId);
  if (step?.busy) return null; // another round of this matrix at once (not what a trainer asks): the generic path
  if (!step || !step.serves(shape)) {
    step?.destroy();
    await kernelsPrepared(ctx); // what the loads started compiling, rather than compiling it again here
    step = new LloydStep(ctx, shape);
    lloydSteps.set(matrixId, step);
  }
  const phases = new PhaseTimes();
  try {
    const pairs = await step.run(centers, { inertia, submitted: () => phases.mark('record') });
    phases.mark('submit and read back');
    const listed = step.listedRows;
    phases.report(`kmeans.assign over ${parts.length} partitions${listed ? ` (${listed.reduce((a, b) => a + b)} rows measured again)` : ''}`);
    return { mapped: [], mappedPairs: { groups: [parts.map((p) => p.host.index)], ranges: [[0, pairs.length]], pairs } };
  } catch (err) {
    step.destroy();
    lloydSteps.delete(matrixId);
    throw err;
  }
}

interface SeedingArgs { run: string; centers: Float64Array; count: number }

/** Brings the partition's nearest distances up to the first `count` centres (as kmeans-tasks' nearestSoFar). */
function recordSeeding(ctx: GpuContext, work: GpuWork, p: DevicePartition, { run, centers, count }: SeedingArgs): GPUBuffer {
  let s = p.seeding.get(run);
  if (!s) {
    s = { minD2: ctx.device.createBuffer({ size: Math.max(16, p.device.rows * 4), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC }), count: 0 };
    p.seeding.set(run, s);
  }
  if (s.count < count) {
    recordPpUpdate(work, p.device, s.minD2, work.input(new Float32Array(centers.subarray(0, count * p.device.cols)), 'kmeans++ centres'), s.count, count);
    s.count = count;
  }
  return s.minD2;
}

/** Host work of ppPick: the row where the running weight passes `target`, from the per-block sums. */
async function pickRow(ctx: GpuContext, p: DevicePartition, minD2: GPUBuffer, blockSums: Float32Array, target: number): Promise<Float64Array> {
  const blocks = blockSums.length / 2;
  let lastPositiveBlock = -1;
  for (let b = 0; b < blocks; b++) if (blockSums[2 * b] + blockSums[2 * b + 1] > 0) lastPositiveBlock = b;
  let acc = 0, last = -1;
  for (let b = 0; b <= lastPositiveBlock; b++) {
    const sum = blockSums[2 * b] + blockSums[2 * b + 1];
    if (sum <= 0) continue;
    if (acc + sum <= target && b < lastPositiveBlock) { acc += sum; continue; }
    const r0 = b * BLOCK_ROWS, n = Math.min(BLOCK_ROWS, p.device.rows - r0);
    const values = new Float32Array(await readBack(ctx, minD2, n * 4, r0 * 4));
    for (let i = 0; i < n; i++) {
      if (!(values[i] > 0)) continue;
      last = r0 + i;
      acc += values[i];
      if (acc > target) return p.host.row(last);
    }
  }
  return p.host.row(Math.max(0, last)); // every row coincides with a centre: any row will do
}

/** The f32 centres and the column maxima on the device, one copy per submission shared by all its partitions. */
const centreCopies = new WeakMap<GpuWork, Map<Float64Array, { buf: GPUBuffer; exponent: number; maxBits: GPUBuffer }>>();
function centresOf(work: GpuWork, centers: Float64Array, maxAbs: Float64Array): { buf: GPUBuffer; exponent: number; maxBits: GPUBuffer } {
  let copies = centreCopies.get(work);
  if (!copies) { copies = new Map(); centreCopies.set(work, copies); }
  let copy = copies.get(centers);
  if (!copy) {
    const f32 = new Float32Array(centers);
    copy = { buf: work.keep(work.input(f32, 'kmeans centres')), exponent: centreExponent(f32), maxBits: work.keep(work.input(maxBitsOf(maxAbs), 'kmeans column maxima')) };
    copies.set(centers, copy);
  }
  return copy;
}

/** Per-partition tasks with a GPU form; null from a task means "run the CPU code for this one". */
const GPU_TASKS: Record<string, GpuPartitionTask> = {
  'kmeans.assign': (_ctx, p, { centers, k, basis, countsOnly }: AssignArgs) => {
    const d = p.device.cols;
    if (!kmeansOnGpu(d, k)) return null;
    return {
      pairs: stepPairs(k, d),
      summed: true, // exact integer sums: every partition adds into one result, which the parent reads once
      record: (work, out, offset) => {
        const c = centresOf(work, centers, basis.maxAbs);
        recordStep(work, p.device, c.maxBits, basis.rows, c.buf, c.exponent, k, out, offset, { countsOnly });
      },
    };
  },
  'kmeans.smallestHash': (_ctx, p, { key, m }: { key: number; m: number }) => {
    if (m !== 1) return null; // the m smallest (random starting centres): the CPU code
    return {
      pairs: 2 * smallestHashWorkgroups(p.device.rows),
      record: (work, out, offset) => recordSmallestHash(work, p.device.rows, key, p.host.firstRow, out, offset),
      decode: (pairs): ScoredRow[] => {
        const row = smallestHashRow(asU32(pairs));
        return [{ score: rowUniform(key, row), row, values: p.host.row(row - p.host.firstRow) }];
      },
    };
  },
  'kmeans.ppTotal': (ctx, p, args: SeedingArgs) => {
    if (!kmeansOnGpu(p.device.cols)) return null;
    return {
      pairs: 1,
      record: (work, out, offset) => { recordTotal(work, p.device, recordSeeding(ctx, work, p, args), out, offset); },
      decode: (pairs) => pairsToDD(pairs, 1),
    };
  },
  'kmeans.ppPick': (ctx, p, args: SeedingArgs & { targets: PickTarget[] }) => {
    if (!args.targets.some((t) => t.partition === p.host.index)) return { value: args.targets.map(() => null) };
    if (!kmeansOnGpu(p.device.cols)) return null;
    let minD2: GPUBuffer;
    return {
      pairs: blocksOf(p.device.rows),
      record: (work, out, offset) => {
        minD2 = recordSeeding(ctx, work, p, args);
        const partials = recordBlockSums(work, minD2, p.device.rows, 1);
        work.encoder.copyBufferToBuffer(partials, 0, out, offset * 8, blocksOf(p.device.rows) * 8);
      },
      decode: async (pairs) => {
        const rows: (Float64Array | null)[] = [];
        for (const t of args.targets) rows.push(t.partition === p.host.index ? await pickRow(ctx, p, minD2, pairs, t.target) : null);
        return rows;
      },
    };
  },
  'kmeans.ppPotential': (ctx, p, args: SeedingArgs & { candidates: Float64Array; trials: number }) => {
    if (!kmeansOnGpu(p.device.cols)) return null;
    return {
      pairs: args.trials,
      record: (work, out, offset) => {
        const minD2 = recordSeeding(ctx, work, p, args);
        recordPotential(work, p.device, minD2, work.input(new Float32Array(args.candidates), 'kmeans++ candidates'), args.trials, out, offset);
      },
      decode: (pairs) => pairsToDD(pairs, args.trials),
    };
  },
  'kmeans.parSample': (ctx, p, args: SampleArgs) => {
    if (!kmeansOnGpu(p.device.cols)) return null;
    // Room for four times the rows a round samples on average in all (more: the distances are read back and sampled here).
    const cap = Math.min(p.device.rows, 4 * args.oversampling + 1024);
    let minD2: GPUBuffer;
    return {
      pairs: Math.ceil((1 + cap) / 2),
      record: (work, out, offset) => {
        minD2 = recordSeeding(ctx, work, p, args);
        recordParSample(work, p.device.rows, minD2, args.key, p.host.firstRow, args.oversampling, args.phi, cap, out, 2 * offset);
      },
      decode: async (pairs): Promise<ScoredRow[]> => {
        const rows = sampledRows(asU32(pairs), cap)
          ?? parSampleCpu(new Float32Array(await readBack(ctx, minD2, p.device.rows * 4, 0)), args.key, p.host.firstRow, args.oversampling, args.phi);
        return rows.map((r) => ({ score: 0, row: p.host.firstRow + r, values: p.host.row(r) }));
      },
    };
  },
  'kmeans.ppDrop': (_ctx, p, { run }: { run: string }) => {
    p.seeding.get(run)?.minD2.destroy();
    p.seeding.delete(run);
    dropScratch(p.host, run);
    return { value: null };
  },
  'stats.moments': (_ctx, p, { shift, yShift, maxima }: MomentsArgs) => {
    const { cols, hasY, rows } = p.device;
    if (!gramOnGpu(cols + (hasY ? 1 : 0))) return null;
    const shifts = [...(shift ?? new Float64Array(cols)), ...(hasY ? [yShift] : [])];
    const pairs = momentPairs(shifts.length);
    return {
      // The moments' pairs, then (when asked) the columns' largest |x| (one word each).
      pairs: pairs.length / 2 + (maxima ? Math.ceil(cols / 2) : 0),
      record: (work, out, offset) => {
        recordGram(work, p.device, shifts, pairs, out, offset);
        if (maxima) recordMaxAbs(work, p.device, out, 2 * (offset + pairs.length / 2));
      },
      decode: (result) => momentsResultOf(result, rows, cols, hasY, maxima),
    };
  },
  'linreg.gram': (_ctx, p, { shift, yShift }: { shift: Float64Array; yShift: number }) => {
    if (!p.device.hasY || !gramOnGpu(p.device.cols + 1)) return null; // the CPU code reports a missing target
    const d = p.device.cols, pairs = gramPairs(d);
    return {
      pairs: pairs.length / 2,
      record: (work, out, offset) => recordGram(work, p.device, [...shift, yShift], pairs, out, offset),
      decode: (result) => gramResultOf(result, d),
    };
  },
  'linreg.residualSumSq': (_ctx, p, { coefficients, intercept }: { coefficients: Float64Array; intercept: number }) => {
    if (!p.device.hasY) return null;
    return {
      pairs: 1,
      record: (work, out, offset) => recordResidual(work, p.device, coefficients, intercept, out, offset),
      decode: (result) => pairsToDD(result, 1),
    };
  },
};
