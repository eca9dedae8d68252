// Timing GPU work on the GPU itself, with `timestamp-query`. Wall-clock timing of short GPU work
// measures Node's event polling as much as the GPU (notes/webgpu.md), so kernel throughput is
// taken from timestamps the device writes at the start and end of each compute pass.
//
//   const t = new KernelTimer(ctx, 64);
//   kernel.dispatch('entry', buffers, wg, encoder, t.writes('entry'));   // one timed pass
//   t.spanStart('copy', enc); enc.copyBufferToBuffer(...); t.spanEnd('copy', enc); // non-pass work
//   const ns = await t.read();   // Map label -> { ns summed over passes, passes }
//
// Without timestamp-query (a device may lack it), `timestampsUnavailable(ctx)` says why and
// callers time by wall clock over many repetitions (`wallClockNs`).
//
// Dawn rounds timestamps down to multiples of 65,536 ns unless the instance is created with
// `disable-dawn-features=timestamp_quantization` (measured on lavapipe, webgpu 0.6.2); `quantized`
// says whether the last read looked rounded, so callers can warn that short passes are unreliable.

import { performance } from 'node:perf_hooks';
import { RuntimeFailure } from '../errors.js';
import { submit, submittedWorkDone, throwIfGpuFailed } from './buffers.js';
import type { GpuContext } from './device.js';

export interface TimedLabel {
  /** Nanoseconds, summed over the label's passes (or spans). */
  ns: number;
  /** How many passes (or spans) were timed under the label. */
  passes: number;
}

/** Why this device cannot time by timestamps, or null when it can. */
export function timestampsUnavailable(ctx: Pick<GpuContext, 'hasTimestamps'>): string | null {
  return ctx.hasTimestamps
    ? null
    : 'timestamp-query is not available on this GPU device: time by wall clock over many repetitions instead';
}

/** Dawn's timestamp quantum while its timestamp_quantization toggle is on. */
export const QUANTUM_NS = 65536n;

/** A pair of query slots: [begin, end]; a pass or span fills both. */
interface Pair { label: string; index: number }

export class KernelTimer {
  private readonly querySet: GPUQuerySet;
  private readonly resolveBuf: GPUBuffer;
  private readonly readBuf: GPUBuffer;
  private pairs: Pair[] = [];
  private readonly openSpans = new Map<string, number>();
  /** Whether every timestamp of the last read was a multiple of QUANTUM_NS (Dawn's quantization on). */
  quantized = false;

  /** Room for `maxPasses` timed passes or spans between two reads. Throws when the device lacks timestamps. */
  constructor(private readonly ctx: GpuContext, readonly maxPasses = 64) {
    const why = timestampsUnavailable(ctx);
    if (why) throw new RuntimeFailure(why);
    const count = 2 * maxPasses;
    this.querySet = ctx.device.createQuerySet({ type: 'timestamp', count, label: 'kernel timer' });
    this.resolveBuf = ctx.device.createBuffer({ size: count * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
    this.readBuf = ctx.device.createBuffer({ size: count * 8, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  }

  private allocate(label: string): number {
    if (this.pairs.length >= this.maxPasses) throw new RuntimeFailure(`KernelTimer: more than ${this.maxPasses} timed passes before read()`);
    const index = 2 * this.pairs.length;
    this.pairs.push({ label, index });
    return index;
  }

  /** Timestamp writes for one compute pass (GpuKernel.dispatch's last argument), counted under `label`. */
  writes(label: string): GPUComputePassTimestampWrites {
    const index = this.allocate(label);
    return { querySet: this.querySet, beginningOfPassWriteIndex: index, endOfPassWriteIndex: index + 1 };
  }

  /**
   * Starts timing work that is not one compute pass (copies, several passes, several submits):
   * an empty compute pass writes the start time, into `encoder` or submitted at once. Both span
   * markers are end-of-pass writes, which wait for the work recorded before them, so a span
   * starts when earlier work is done rather than overlapping its tail.
   */
  spanStart(label: string, encoder?: GPUCommandEncoder): void {
    if (this.openSpans.has(label)) throw new RuntimeFailure(`KernelTimer: span '${label}' is already open`);
    const index = this.allocate(label);
    this.openSpans.set(label, index);
    this.markerPass({ querySet: this.querySet, endOfPassWriteIndex: index }, encoder);
  }

  /** Ends the span `label`: an empty compute pass writes the end time once earlier work is done. */
  spanEnd(label: string, encoder?: GPUCommandEncoder): void {
    const index = this.openSpans.get(label);
    if (index === undefined) throw new RuntimeFailure(`KernelTimer: span '${label}' was not started`);
    this.openSpans.delete(label);
    this.markerPass({ querySet: this.querySet, endOfPassWriteIndex: index + 1 }, encoder);
  }

  private markerPass(timestampWrites: GPUComputePassTimestampWrites, encoder?: GPUCommandEncoder): void {
    const enc = encoder ?? this.ctx.device.createCommandEncoder();
    enc.beginComputePass({ timestampWrites }).end();
    if (!encoder) submit(this.ctx, enc.finish());
  }

  /**
   * Resolves the timestamps of everything timed since the last read (the work must have been
   * submitted), reads them back, and starts over. Durations per label, in nanoseconds.
   */
  async read(): Promise<Map<string, TimedLabel>> {
    if (this.openSpans.size > 0) throw new RuntimeFailure(`KernelTimer: spans still open: ${[...this.openSpans.keys()].join(', ')}`);
    const pairs = this.pairs;
    this.pairs = [];
    const out = new Map<string, TimedLabel>();
    if (pairs.length === 0) return out;
    const count = 2 * pairs.length;
    const enc = this.ctx.device.createCommandEncoder();
    enc.resolveQuerySet(this.querySet, 0, count, this.resolveBuf, 0);
    enc.copyBufferToBuffer(this.resolveBuf, 0, this.readBuf, 0, count * 8);
    submit(this.ctx, enc.finish());
    await this.readBuf.mapAsync(GPUMapMode.READ, 0, count * 8);
    throwIfGpuFailed(this.ctx);
    const stamps = new BigUint64Array(this.readBuf.getMappedRange(0, count * 8).slice(0));
    this.readBuf.unmap();
    this.quantized = stamps.every((t) => t % QUANTUM_NS === 0n);
    for (const { label, index } of pairs) {
      // Clamped at 0: some drivers' counters are not monotonic across a pass on every GPU engine.
      const ns = stamps[index + 1] > stamps[index] ? Number(stamps[index + 1] - stamps[index]) : 0;
      const t = out.get(label) ?? { ns: 0, passes: 0 };
      out.set(label, { ns: t.ns + ns, passes: t.passes + 1 });
    }
    return out;
  }

  destroy(): void {
    this.querySet.destroy();
    this.resolveBuf.destroy();
    this.readBuf.destroy();
  }
}

/**
 * The fallback without timestamps: nanoseconds per repetition of the work `encode` records,
 * by wall clock over `repetitions` of it in one submit (after one untimed warm-up run). Use
 * enough repetitions that the submit-to-done latency (event polling) is small next to them.
 */
export async function wallClockNs(ctx: GpuContext, encode: (encoder: GPUCommandEncoder) => void, repetitions: number): Promise<number> {
  const run = async (reps: number) => {
    const enc = ctx.device.createCommandEncoder();
    for (let r = 0; r < reps; r++) encode(enc);
    submit(ctx, enc.finish());
    await submittedWorkDone(ctx);
  };
  await run(1);
  const t0 = performance.now();
  await run(repetitions);
  const ns = (performance.now() - t0) * 1e6;
  throwIfGpuFailed(ctx);
  return ns / repetitions;
}

/** GPUFRAME_GPU_PHASES=1: GPU workers report where a task's time goes (PhaseTimes, message latencies). */
export const GPU_PHASES = process.env.GPUFRAME_GPU_PHASES === '1';

/**
 * Wall-clock time per phase on the host, summed when a phase repeats (levels of a forest), written
 * to stderr with `report` when GPUFRAME_GPU_PHASES=1 (diagnosis of where a GPU task's time goes).
 */
export class PhaseTimes {
  private readonly enabled = GPU_PHASES;
  private last = performance.now();
  private readonly ms = new Map<string, number>();

  /** Ends the current phase, named `phase`. */
  mark(phase: string): void {
    if (!this.enabled) return;
    const now = performance.now();
    this.ms.set(phase, (this.ms.get(phase) ?? 0) + now - this.last);
    this.last = now;
  }

  report(what: string): void {
    if (this.enabled) process.stderr.write(`${what}; ms: ${[...this.ms].map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}\n`);
  }
}
