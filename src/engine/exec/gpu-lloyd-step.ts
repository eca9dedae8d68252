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

import type { GpuContext } from '../gpu/device.js';
import { submit, throwIfGpuFailed, uniformWords, writeBuffer } from '../gpu/buffers.js';
import { centreExponent, maxBitsOf, recordStepWith, stepPairs, stepParams } from '../../kernels/kmeans.js';
import { GpuWork, type DeviceMatrix } from '../../kernels/ml-matrix.js';

/** What a round is asked for; a step serves every round with the same. */
export interface LloydStepShape { parts: readonly DeviceMatrix[]; k: number; countsOnly: boolean; scaleRows: number; maxAbs: Float64Array }

export class LloydStep {
  /** Pairs of the one summed result (stepLayout's words, as f32 pairs). */
  readonly pairs: number;
  private readonly centres: GPUBuffer;
  private readonly maxBits: GPUBuffer;
  private readonly params: GPUBuffer[];
  private readonly out: GPUBuffer;
  private readonly readback: GPUBuffer;
  /** The next round's commands, recorded while the device ran this one. */
  private next: GPUCommandBuffer | null = null;
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
    this.readback = device.createBuffer({ size: this.pairs * 8, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'kmeans step readback' });
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

  /** One round against `centers` (k × d): the partitions' summed step words, as f32 pairs. `submitted` is called once the device has the round. */
  async run(centers: Float64Array, submitted: () => void = () => {}): Promise<Float32Array> {
    this.running = true;
    try {
      const f32 = new Float32Array(centers);
      const exponent = centreExponent(f32);
      const commands = this.next ?? this.record();
      this.next = null;
      writeBuffer(this.ctx, this.centres, 0, f32);
      if (exponent !== this.exponent) {
        this.shape.parts.forEach((m, i) => writeBuffer(this.ctx, this.params[i], 0, Uint32Array.from(stepParams(m, this.shape.scaleRows, exponent, 0))));
        this.exponent = exponent;
      }
      submit(this.ctx, commands);
      const read = this.readback.mapAsync(GPUMapMode.READ);
      submitted();
      // Recorded now, while the device runs this round; the readback it copies into is unmapped
      // again before the commands are submitted.
      this.next = this.record();
      await read;
      throwIfGpuFailed(this.ctx);
      const words = new Float32Array(this.readback.getMappedRange().slice(0));
      this.readback.unmap();
      return words;
    } catch (err) {
      this.next = null;
      this.exponent = null;
      throw err;
    } finally {
      this.running = false;
    }
  }

  private record(): GPUCommandBuffer {
    const { parts, k, countsOnly } = this.shape;
    const work = new GpuWork(this.ctx);
    work.encoder.clearBuffer(this.out);
    parts.forEach((m, i) => recordStepWith(work, m, this.params[i], this.maxBits, this.centres, k, this.out, { countsOnly }));
    work.encoder.copyBufferToBuffer(this.out, 0, this.readback, 0, this.pairs * 8);
    return work.encoder.finish();
  }

  destroy(): void {
    this.next = null;
    for (const b of [this.centres, this.maxBits, ...this.params, this.out, this.readback]) b.destroy();
  }
}
