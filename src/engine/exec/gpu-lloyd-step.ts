// The k-means step over a GPU worker's partitions, recorded one round ahead.
//
// A Lloyd round's commands are the same every round but for the centres' values and the distance
// bound that comes with them. So they live in buffers of this step's own, and the commands are
// recorded while the device runs the round before: when the next round's centres arrive, the worker
// writes them and submits. On H200s, recording took 0.6–1.2 ms of every round (5.3–5.8 ms on one
// GPU, 3.3–3.7 ms on two; thirteenth session), all of it between the message's arrival and the
// device's start.
//
// The words are those of mapPartitions' generic path (the same kernels, parameters and one summed
// output), so which path ran a round never changes the model.
//
// A round whose inertia is not wanted (every Lloyd round but the last) runs the bounded step
// (kmeans.wgsl.ts): the partitions keep each row's nearest centre and bounds on the device, and
// only rows whose bounds no longer prove their centre are measured again. Its sums and counts are
// the full step's words at the same centres (the distance sums are 0); a round that wants the
// inertia runs the full step and leaves the bounds as they were.

import type { GpuContext } from '../gpu/device.js';
import { fillU32, freeBuffer, pendingEncoder, storageBuffer, submit, throwIfGpuFailed, uniformWords, writeBuffer } from '../gpu/buffers.js';
import {
  boundCheckParams, centreDrifts, centreExponent, maxBitsOf, recordBoundedStep, recordStepWith, stepPairs, stepParams, type RowBounds,
} from '../../kernels/kmeans.js';
import { GpuWork, type DeviceMatrix } from '../../kernels/ml-matrix.js';
import { RuntimeFailure } from '../errors.js';

/** What a round is asked for; a step serves every round with the same. */
export interface LloydStepShape { parts: readonly DeviceMatrix[]; k: number; countsOnly: boolean; scaleRows: number; maxAbs: Float64Array }

/** Which kernels a round runs: the full step, or the bounded one. */
type StepMode = 'full' | 'bounded';

/** The bounded step's state: per partition its rows' labels and bounds, and the sums kept from round to round. */
interface BoundedState {
  parts: RowBounds[];
  totals: GPUBuffer;
  drift: GPUBuffer;
  /** The f32 centres the labels, bounds and sums are of; null: none yet (the next round starts afresh). */
  centres: Float32Array | null;
}

export class LloydStep {
  /** Pairs of the one summed result (stepLayout's words, as f32 pairs). */
  readonly pairs: number;
  private readonly centres: GPUBuffer;
  private readonly maxBits: GPUBuffer;
  private readonly params: GPUBuffer[];
  private readonly out: GPUBuffer;
  private readonly readback: GPUBuffer;
  /** The next round's commands, recorded while the device ran this one, for the mode of this one. */
  private next: { mode: StepMode; commands: GPUCommandBuffer } | null = null;
  /** The bounded step's state: undefined until a round asks for it, null where it cannot run (counts alone, non-finite data, no device memory left). */
  private bounded: BoundedState | null | undefined = undefined;
  private listed: number[] | null = null;
  private running = false;
  /** The centres' exponent the parameters hold (it seldom changes between rounds). */
  private exponent: number | null = null;

  constructor(private readonly ctx: GpuContext, readonly shape: LloydStepShape) {
    const { parts, k } = shape, d = parts[0].cols, device = ctx.device;
    this.pairs = stepPairs(k, d);
    this.centres = device.createBuffer({ size: k * d * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, label: 'kmeans centres' });
    this.maxBits = device.createBuffer({ size: d * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, label: 'kmeans column maxima' });
    writeBuffer(ctx, this.maxBits, 0, maxBitsOf(shape.maxAbs));
    // The centres' exponent in each partition's parameters (stepParams' words) is written by the
    // first round and again whenever it changes.
    this.params = parts.map((m) => uniformWords(ctx, stepParams(m, shape.scaleRows, 0, 0)));
    this.out = device.createBuffer({ size: this.pairs * 8, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, label: 'kmeans step' });
    // The summed words, then (bounded rounds) each partition's count of rows measured again.
    this.readback = device.createBuffer({ size: this.pairs * 8 + 4 * parts.length, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'kmeans step readback' });
  }

  /** Whether a round is running (its buffers are in use). */
  get busy(): boolean {
    return this.running;
  }

  /** Whether this step serves a round of `shape` (the same partitions on the device, clusters, basis). */
  serves(shape: LloydStepShape): boolean {
    const mine = this.shape;
    return mine.k === shape.k && mine.countsOnly === shape.countsOnly && mine.scaleRows === shape.scaleRows
      && mine.parts.length === shape.parts.length && mine.parts.every((m, i) => m === shape.parts[i])
      && mine.maxAbs.length === shape.maxAbs.length && mine.maxAbs.every((v, i) => Object.is(v, shape.maxAbs[i]));
  }

  /**
   * One round against `centers` (k × d): the partitions' summed step words, as f32 pairs.
   * `inertia: false`: the distance sums are not wanted (left 0), and the bounded step may run.
   * `submitted` is called once the device has the round.
   */
  async run(centers: Float64Array, { inertia = true, submitted = () => {} }: { inertia?: boolean; submitted?: () => void } = {}): Promise<Float32Array> {
    this.running = true;
    const f32 = new Float32Array(centers);
    const state = inertia ? null : this.boundedState();
    try {
      const drift = state ? this.startBounded(state, f32) : null;
      const mode: StepMode = drift ? 'bounded' : 'full';
      const exponent = centreExponent(f32);
      const commands = this.next?.mode === mode ? this.next.commands : this.record(mode);
      this.next = null;
      writeBuffer(this.ctx, this.centres, 0, f32);
      if (drift) writeBuffer(this.ctx, state!.drift, 0, drift);
      if (exponent !== this.exponent) {
        this.shape.parts.forEach((m, i) => writeBuffer(this.ctx, this.params[i], 0, Uint32Array.from(stepParams(m, this.shape.scaleRows, exponent, 0))));
        this.exponent = exponent;
      }
      submit(this.ctx, commands);
      if (drift) state!.centres = f32;
      const read = this.readback.mapAsync(GPUMapMode.READ);
      submitted();
      // Recorded now, while the device runs this round; the readback it copies into is unmapped
      // again before the commands are submitted.
      this.next = { mode, commands: this.record(mode) };
      await read;
      throwIfGpuFailed(this.ctx);
      const mapped = this.readback.getMappedRange();
      const words = new Float32Array(mapped.slice(0, this.pairs * 8));
      this.listed = drift ? Array.from(new Uint32Array(mapped.slice(this.pairs * 8))) : null;
      this.readback.unmap();
      return words;
    } catch (err) {
      this.next = null;
      this.exponent = null;
      if (this.bounded) this.bounded.centres = null;
      throw err;
    } finally {
      this.running = false;
    }
  }

  /** Rows each partition's last round measured again, when it was a bounded round (else null): how much of the work the bounds saved. */
  get listedRows(): readonly number[] | null {
    return this.listed;
  }

  /** The bounded step's state, made on first use; null where it cannot run. */
  private boundedState(): BoundedState | null {
    if (this.bounded !== undefined) return this.bounded;
    const { parts, k, countsOnly, maxAbs } = this.shape;
    this.bounded = null;
    if (countsOnly || !maxAbs.every(Number.isFinite)) return null;
    const made: GPUBuffer[] = [];
    const buffer = (bytes: number, label: string) => { const b = storageBuffer(this.ctx, bytes, label); made.push(b); return b; };
    try {
      const rowState = parts.map((m): RowBounds => ({
        labels: buffer(4 * m.rows, 'kmeans labels'),
        bounds: buffer(8 * m.rows, 'kmeans bounds'),
        list: buffer(4 * (m.rows + 1), 'kmeans listed rows'),
        checkParams: uniformWords(this.ctx, boundCheckParams(m.rows, k, m.cols)),
      }));
      this.bounded = { parts: rowState, totals: buffer(this.pairs * 8, 'kmeans bounded sums'), drift: buffer((2 * k + 4) * 4, 'kmeans centre drift'), centres: null };
    } catch (err) {
      // No device memory left for the bounds: every round runs the full step.
      if (!(err instanceof RuntimeFailure)) throw err;
      for (const b of made) freeBuffer(this.ctx, b);
    }
    return this.bounded;
  }

  /** The drift words for a bounded round to `f32` (starting afresh when the state has no centres); null: run the full step. */
  private startBounded(state: BoundedState, f32: Float32Array): Float32Array | null {
    const { k } = this.shape, d = this.shape.parts[0].cols;
    const drift = centreDrifts(state.centres ?? f32, f32, k, d);
    if (drift === null) { state.centres = null; return null; }
    if (state.centres === null) {
      // Every row unlabelled and the sums zero: the round lists every row.
      state.parts.forEach((p, i) => fillU32(this.ctx, p.labels, 0xffffffff, this.shape.parts[i].rows));
      pendingEncoder(this.ctx).clearBuffer(state.totals);
    }
    return drift;
  }

  private record(mode: StepMode): GPUCommandBuffer {
    const { parts, k, countsOnly } = this.shape;
    const work = new GpuWork(this.ctx);
    let result = this.out;
    if (mode === 'bounded') {
      const state = this.bounded!;
      for (const p of state.parts) work.encoder.clearBuffer(p.list, 0, 4);
      parts.forEach((m, i) => recordBoundedStep(work, m, this.params[i], this.maxBits, this.centres, k, state.drift, state.parts[i], state.totals));
      result = state.totals;
      state.parts.forEach((p, i) => work.encoder.copyBufferToBuffer(p.list, 0, this.readback, this.pairs * 8 + 4 * i, 4));
    } else {
      work.encoder.clearBuffer(this.out);
      parts.forEach((m, i) => recordStepWith(work, m, this.params[i], this.maxBits, this.centres, k, this.out, { countsOnly }));
    }
    work.encoder.copyBufferToBuffer(result, 0, this.readback, 0, this.pairs * 8);
    return work.encoder.finish();
  }

  destroy(): void {
    this.next = null;
    for (const b of [this.centres, this.maxBits, ...this.params, this.out, this.readback]) b.destroy();
    if (this.bounded) {
      for (const p of this.bounded.parts) { for (const b of [p.labels, p.bounds, p.list]) freeBuffer(this.ctx, b); p.checkParams.destroy(); }
      for (const b of [this.bounded.totals, this.bounded.drift]) freeBuffer(this.ctx, b);
    }
    this.bounded = undefined;
  }
}
