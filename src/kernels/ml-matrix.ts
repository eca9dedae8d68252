// Device-resident design matrices for the ML kernels, and deterministic sums over their rows.
// A partition's float64 rows are uploaded once as raw words and split on the device into
// column-major f32 pairs (xr = x rounded to f32, xl = the rest; ml-matrix.wgsl.ts), so no JS loop
// touches each value in the GPU worker. Sums run per block of BLOCK_ROWS rows in a fixed order and
// then over blocks in block order, in double-float: the same partition gives the same bits on
// any run, whichever worker holds it.

import type { GpuContext } from '../engine/gpu/device.js';
import { freeBuffer, kernelFor, readStaging, releaseReadStaging, sharedUniform, storageBuffer, submit, throwIfGpuFailed, workgroupsFor, writeBuffer, type StagingRing } from '../engine/gpu/buffers.js';
import type { DDArray } from '../engine/ml/double-double.js';
import { memoryPiece, type BytePiece, type ColumnBlock } from '../engine/io/byte-pieces.js';
import { BLOCK_ROWS, BLOCK_SUMS_WGSL, DECODE_PIECE_ROWS, ML_DECODE_PIECES_WGSL, ML_MATRIX_WGSL, REDUCE_BLOCKS_WGSL, REDUCE_FAN } from './ml-matrix.wgsl.js';

export { BLOCK_ROWS };

/** A partition on the device: `cols` feature columns, then the target column when `hasY`. */
export interface DeviceMatrix {
  rows: number;
  cols: number;
  hasY: boolean;
  xr: GPUBuffer;
  xl: GPUBuffer;
}

const MAX_WORKGROUPS = 65535;

export function blocksOf(rows: number): number {
  return Math.max(1, Math.ceil(rows / BLOCK_ROWS));
}

/** Whether a partition of this shape fits the device's binding limit (else its tasks run on the CPU copy). */
export function deviceMatrixFits(ctx: GpuContext, rows: number, columns: number): boolean {
  return rows > 0 && rows * columns * 4 <= ctx.device.limits.maxStorageBufferBindingSize && blocksOf(rows) * 64 <= 2 ** 31;
}

/** Uploads row-major float64 `x` (rows × cols) and `y` through `ring` and splits them on the device. */
export function uploadMatrix(ctx: GpuContext, ring: StagingRing, x: Float64Array, y: Float64Array | null, rows: number, cols: number): Promise<DeviceMatrix> {
  const sources = [...(cols > 0 ? [{ pieces: [memoryPiece(x)], srcCols: cols, colStart: 0 }] : []), ...(y ? [{ pieces: [memoryPiece(y)], srcCols: 1, colStart: cols }] : [])];
  return uploadSources(ctx, ring, sources, rows, cols, y !== null);
}

/**
 * Uploads float64 columns (the features, then the target when `hasY`) as they come from a
 * partition's batches or its file: column j is columns[j]'s pieces end to end (one per batch, in
 * row order), copied from them straight into staging memory. No row-major copy and no joined
 * column is made on the host.
 */
export function uploadColumns(ctx: GpuContext, ring: StagingRing, columns: readonly (readonly BytePiece[])[], rows: number, hasY: boolean): Promise<DeviceMatrix> {
  return uploadSources(ctx, ring, columns.map((pieces, j) => ({ pieces, srcCols: 1, colStart: j })), rows, columns.length - (hasY ? 1 : 0), hasY);
}

/** Each source holds `srcCols` row-major columns of the matrix from column `colStart`, in pieces laid end to end; decoded on the device slice by slice. */
async function uploadSources(ctx: GpuContext, ring: StagingRing, sources: readonly { pieces: readonly BytePiece[]; srcCols: number; colStart: number }[],
                             rows: number, cols: number, hasY: boolean): Promise<DeviceMatrix> {
  const columns = cols + (hasY ? 1 : 0);
  const xr = storageBuffer(ctx, rows * columns * 4, 'matrix xr');
  const xl = storageBuffer(ctx, rows * columns * 4, 'matrix xl');
  const kernel = kernelFor(ctx, 'ml-matrix', ML_MATRIX_WGSL);
  const widest = Math.max(1, ...sources.map((s) => s.srcCols));
  const sliceRows = Math.max(1, Math.floor(Math.min(ctx.device.limits.maxStorageBufferBindingSize, 64 << 20) / (widest * 8)));
  const src = storageBuffer(ctx, Math.min(rows, sliceRows) * widest * 8, 'matrix f64 slice');
  try {
    for (const { pieces, srcCols, colStart } of sources) {
      let end = 0;
      const placed = pieces.map((piece) => ({ piece, at: (end += piece.byteLength) - piece.byteLength }));
      const sourceSliceRows = Math.max(1, Math.floor(sliceRows * widest / srcCols));
      for (let start = 0; start < rows; start += sourceSliceRows) {
        const n = Math.min(sourceSliceRows, rows - start);
        await ring.fill(src, 0, n * srcCols * 8, (view, at) => copyPlaced(placed, start * srcCols * 8 + at, view));
        kernel.dispatch('decode', [sharedUniform(ctx, [n, srcCols, start, rows, colStart]), src, xr, xl], workgroupsFor(n * srcCols));
      }
    }
  } finally {
    freeBuffer(ctx, src);
  }
  return { rows, cols, hasY, xr, xl };
}

/**
 * Uploads float64 columns (the features, then the target when `hasY`) from blocks laid end to
 * end in row order (a file's record batches: blocks(), arrow-file-columns.ts), each copied whole
 * into staging memory, a few blocks at a time, and decoded on the device from where each column
 * lies in it (decode_pieces): a read per block or staging slot rather than one per column and
 * batch, whose per-call costs (a promise, its garbage) bound the worker's main thread.
 */
export async function uploadBlocks(ctx: GpuContext, ring: StagingRing, blocks: readonly ColumnBlock[], rows: number, hasY: boolean, groupBytes = 64 << 20): Promise<DeviceMatrix> {
  const columns = blocks[0]?.columnOffsets.length ?? 0, cols = columns - (hasY ? 1 : 0);
  const xr = storageBuffer(ctx, rows * columns * 4, 'matrix xr');
  const xl = storageBuffer(ctx, rows * columns * 4, 'matrix xl');
  const kernel = kernelFor(ctx, 'ml-decode-pieces', ML_DECODE_PIECES_WGSL);
  const aligned = (bytes: number) => Math.ceil(bytes / 8) * 8;
  const srcBytes = Math.min(ctx.device.limits.maxStorageBufferBindingSize, Math.max(groupBytes, ...blocks.map((b) => aligned(b.byteLength))));
  const src = storageBuffer(ctx, srcBytes, 'matrix batches');
  try {
    let firstRow = 0;
    for (let from = 0; from < blocks.length;) {
      // The next blocks that fit the source buffer, each at an 8-byte aligned place in it.
      const group: { piece: ColumnBlock; at: number; firstRow: number }[] = [];
      let bytes = 0;
      for (; from < blocks.length && (group.length === 0 || bytes + blocks[from].byteLength <= srcBytes); from++) {
        group.push({ piece: blocks[from], at: bytes, firstRow });
        bytes = aligned(bytes + blocks[from].byteLength);
        firstRow += blocks[from].rows;
      }
      await ring.fill(src, 0, bytes, (view, at) => copyPlaced(group, at, view));
      const table: number[] = [];
      for (const { piece: block, at, firstRow: r0 } of group) {
        block.columnOffsets.forEach((offset, j) => {
          for (let r = 0; r < block.rows; r += DECODE_PIECE_ROWS) table.push((at + offset) / 8 + r, Math.min(DECODE_PIECE_ROWS, block.rows - r), j * rows + r0 + r, 0);
        });
      }
      const pieces = storageBuffer(ctx, table.length * 4, 'matrix decode pieces');
      writeBuffer(ctx, pieces, 0, new Uint32Array(table));
      kernel.dispatch('decode_pieces', [sharedUniform(ctx, [table.length / 4, 0, 0, 0]), src, xr, xl, pieces], Math.min(65535, table.length / 4));
      freeBuffer(ctx, pieces);
    }
    if (firstRow !== rows) throw new Error(`blocks of ${firstRow} rows for a matrix of ${rows}`);
  } finally {
    freeBuffer(ctx, src);
  }
  return { rows, cols, hasY, xr, xl };
}

/**
 * Copies bytes [from, from + view.length) of a layout of pieces, each at its byte `at` (gaps left
 * as they are), into `view`: the pieces' copies (file reads) at once.
 */
async function copyPlaced(placed: readonly { piece: BytePiece; at: number }[], from: number, view: Uint8Array): Promise<void> {
  const copies: (void | Promise<void>)[] = [];
  for (const { piece, at } of placed) {
    const start = Math.max(from, at), end = Math.min(from + view.length, at + piece.byteLength);
    if (start < end) copies.push(piece.copyTo(view.subarray(start - from, end - from), start - at));
  }
  await Promise.all(copies);
}

/** A kernel as GpuWork.dispatch takes it: label (one compile per label), WGSL, entry point. */
export type KernelSource = readonly [label: string, code: string, entry: string];

export const BLOCK_SUMS: KernelSource = ['ml-block-sums', BLOCK_SUMS_WGSL, 'block_sums'];
export const REDUCE_BLOCKS: KernelSource = ['ml-reduce-blocks', REDUCE_BLOCKS_WGSL, 'reduce_blocks'];

/** Compiles the kernels on the driver's threads (kernelsPrepared waits for them); a failure shows at the kernel's first dispatch. */
export function prepareKernels(ctx: GpuContext, sources: readonly KernelSource[]): void {
  for (const [label, code, entry] of sources) kernelFor(ctx, label, code).prepare([entry]).catch(() => {});
}

export function freeMatrix(ctx: GpuContext, m: DeviceMatrix): void {
  freeBuffer(ctx, m.xr);
  freeBuffer(ctx, m.xl);
}

/**
 * The commands of one task, recorded into an encoder and submitted at `flush` and `finish`;
 * `finish` reads results back in the last submission and frees the temporary buffers.
 */
export class GpuWork {
  private current: GPUCommandEncoder;
  private readonly temps: GPUBuffer[] = [];
  /** Temporaries that `recycle` leaves alone: shared by every partition of the work (centres, say). */
  private readonly kept = new Set<GPUBuffer>();
  /** sharedInput's buffers, by label and contents. */
  private readonly shared = new Map<string, GPUBuffer>();

  constructor(readonly ctx: GpuContext) {
    this.current = ctx.device.createCommandEncoder();
  }

  /** Where commands are recorded now. */
  get encoder(): GPUCommandEncoder {
    return this.current;
  }

  /** Submits what is recorded so far, so the device starts on it while the host records the rest. */
  flush(): void {
    submit(this.ctx, this.current.finish());
    this.current = this.ctx.device.createCommandEncoder();
  }

  /** Kernel parameters: a shared uniform buffer, so rounds that repeat them repeat their bind groups too. */
  params(words: readonly number[]): GPUBuffer {
    return sharedUniform(this.ctx, words);
  }

  /** A zeroed temporary (a recycled one is cleared by this work's own commands, before the rest). */
  temp(bytes: number, label: string): GPUBuffer {
    const b = storageBuffer(this.ctx, bytes, label, this.encoder);
    this.temps.push(b);
    return b;
  }

  /** A temporary buffer holding `data` (small inputs: centres, shifts), written before the commands run. */
  input(data: Float32Array | Uint32Array, label: string): GPUBuffer {
    // Not cleared in the encoder: the write below reaches the queue before the encoder's commands
    // (writeBuffer submits the pending clear of a recycled buffer first).
    const b = storageBuffer(this.ctx, data.byteLength, label);
    this.temps.push(b);
    if (data.byteLength > 0) writeBuffer(this.ctx, b, 0, data);
    return b;
  }

  /**
   * An input holding `data`, made once per work for each label and contents and kept until
   * `finish`: what every partition's commands read alike (shifts, a model), written once rather
   * than once per partition (a write submits the pending commands).
   */
  sharedInput(data: Float32Array | Uint32Array, label: string): GPUBuffer {
    const key = `${label}:${data instanceof Float32Array ? 'f' : 'u'}:${data.join(',')}`;
    let buf = this.shared.get(key);
    if (!buf) this.shared.set(key, buf = this.keep(this.input(data, label)));
    return buf;
  }

  /** Keeps temporary `buf` until `finish`, past any `recycle` (a buffer every partition's commands read). */
  keep(buf: GPUBuffer): GPUBuffer {
    this.kept.add(buf);
    return buf;
  }

  /** Where the temporaries made from now on begin, for `recycle`. */
  mark(): number {
    return this.temps.length;
  }

  /**
   * Submits what is recorded and gives the temporaries made since `mark` (but those kept) back
   * for reuse: a partition's, so the next partition's come from the pool rather than from fresh
   * device memory (milliseconds each on a real GPU). Commands recorded later that reuse them run
   * after these (one queue), and a reused buffer is cleared first.
   */
  recycle(mark: number): void {
    this.flush();
    for (const b of this.temps.splice(mark)) {
      if (this.kept.has(b)) this.temps.push(b);
      else freeBuffer(this.ctx, b);
    }
  }

  /** Records a dispatch of kernel `entry` of WGSL `code` (compiled once per `label`); a KernelSource spreads into the first three. */
  dispatch(label: string, code: string, entry: string, buffers: readonly (GPUBuffer | null)[], workgroups: number): void {
    kernelFor(this.ctx, label, code).dispatch(entry, buffers, Math.max(1, Math.min(MAX_WORKGROUPS, workgroups)), this.encoder);
  }

  /** Submits everything and returns the f32 contents of each requested (buffer, floats) range. */
  async finish(reads: readonly { buf: GPUBuffer; floats: number; offset?: number }[]): Promise<Float32Array[]> {
    const staging = reads.map((r) => {
      const size = Math.max(4, r.floats * 4);
      const s = readStaging(this.ctx, size);
      if (r.floats > 0) this.encoder.copyBufferToBuffer(r.buf, (r.offset ?? 0) * 4, s, 0, r.floats * 4);
      return s;
    });
    submit(this.ctx, this.encoder.finish());
    let read = false;
    try {
      await Promise.all(staging.map((s) => s.mapAsync(GPUMapMode.READ)));
      throwIfGpuFailed(this.ctx);
      const out = staging.map((s, i) => new Float32Array(s.getMappedRange().slice(0, reads[i].floats * 4)));
      for (const s of staging) s.unmap();
      read = true;
      return out;
    } finally {
      for (const s of staging) { if (read) releaseReadStaging(this.ctx, s); else s.destroy(); }
      this.release();
    }
  }

  /** Frees the temporaries (after a failure before finish, too). */
  release(): void {
    for (const b of this.temps.splice(0)) freeBuffer(this.ctx, b);
  }
}

/**
 * Records per-block sums of `entries` runs of `rows` f32 values (entry e at values[e × rows]):
 * returns the partials buffer, partial[e × blocks + b] as (hi, lo).
 */
export function recordBlockSums(work: GpuWork, values: GPUBuffer, rows: number, entries: number): GPUBuffer {
  const blocks = blocksOf(rows);
  const partials = work.temp(blocks * entries * 8, 'block sums');
  work.dispatch(...BLOCK_SUMS, [work.params([rows, blocks, entries, 0]), values, partials], blocks * entries);
  return partials;
}

/**
 * Records out[outOffset + e] = Σ over blocks of the partials (double-float): partial[e × blocks + b]
 * ('entry-major') or partial[b × entries + e] ('block-major'), in a fixed tree of REDUCE_FAN-wide
 * levels, each summing its blocks in order; the tree depends on `blocks` alone, never on the device.
 */
export function recordReduceBlocks(work: GpuWork, partials: GPUBuffer, blocks: number, entries: number, out: GPUBuffer, outOffset: number, layout: 'entry-major' | 'block-major' = 'entry-major'): void {
  let source = partials, n = blocks, blockMajor = layout === 'block-major';
  for (;;) {
    const groups = Math.ceil(n / REDUCE_FAN);
    const last = groups === 1;
    const target = last ? out : work.temp(groups * entries * 8, 'reduced blocks');
    work.dispatch(...REDUCE_BLOCKS, [work.params([n, entries, last ? outOffset : 0, blockMajor ? 1 : 0]), source, target], workgroupsFor(groups * entries));
    if (last) return;
    source = target; n = groups; blockMajor = true;
  }
}

/** CPU twin of dfAdd (ml-matrix.wgsl.ts) in f32 steps: twoSum of the high words, the low words added to its error, renormalised. */
function dfAddCpu(ah: number, al: number, bh: number, bl: number): [number, number] {
  const f = Math.fround;
  const s = f(ah + bh), bb = f(s - ah);
  const err = f(f(ah - f(s - bb)) + f(bh - bb));
  const t = f(f(err + al) + bl);
  const r = f(s + t);
  return [r, f(t - f(r - s))];
}

/** CPU twin of recordReduceBlocks: the same tree, the same f32 steps; (hi, lo) pairs in and out. */
export function reduceBlocksCpu(partials: Float32Array, blocks: number, entries: number, layout: 'entry-major' | 'block-major' = 'entry-major'): Float32Array {
  let source = partials, n = blocks, blockMajor = layout === 'block-major';
  for (;;) {
    const groups = Math.ceil(n / REDUCE_FAN);
    const target = new Float32Array(groups * entries * 2);
    for (let g = 0; g < groups; g++) {
      for (let e = 0; e < entries; e++) {
        let acc: [number, number] = [0, 0];
        for (let b = g * REDUCE_FAN; b < Math.min(n, (g + 1) * REDUCE_FAN); b++) {
          const at = blockMajor ? b * entries + e : e * n + b;
          acc = dfAddCpu(acc[0], acc[1], source[2 * at], source[2 * at + 1]);
        }
        [target[2 * (g * entries + e)], target[2 * (g * entries + e) + 1]] = acc;
      }
    }
    if (groups === 1) return target;
    source = target; n = groups; blockMajor = true;
  }
}

/** Double-float pairs (hi, lo) [offset, offset + n) as a DDArray for the trainers' double-double combine. */
export function pairsToDD(pairs: Float32Array, n: number, offset = 0): DDArray {
  const hi = new Float64Array(n), lo = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    hi[i] = pairs[2 * (offset + i)];
    lo[i] = pairs[2 * (offset + i) + 1];
  }
  return { hi, lo };
}

/** A float64 as the (hi, lo) f32 pair a double-float argument travels as. */
export function splitDouble(v: number): [number, number] {
  const hi = Math.fround(v);
  return [hi, Math.fround(v - hi)];
}

/** CPU twin of the decode kernel for one value: [xr, xl]. */
export function decodeCpu(v: number): [number, number] {
  const words = new Uint32Array(new Float64Array([v]).buffer);
  const [lw, hw] = [words[0], words[1]];
  const e = (hw >>> 20) & 0x7ff;
  if (e === 0) return [0, 0];
  if (e === 0x7ff) return [v, 0];
  const top = (1 << 23) | ((hw & 0xfffff) << 3) | (lw >>> 29);
  const next = (lw >>> 5) & 0xffffff;
  const s = hw >>> 31 ? -1 : 1;
  const hi = Math.fround(s * top * 2 ** (e - 1023 - 23));
  const lo = Math.fround(s * next * 2 ** (e - 1023 - 47));
  const r = Math.fround(hi + lo);
  return [r, Math.fround(Math.fround(hi - r) + lo)];
}
