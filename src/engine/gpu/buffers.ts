// Moving bytes to and from the GPU, counting device memory, and dispatching compute kernels.
// Host→device transfer bounds a single pass over data (notes/webgpu.md): uploads go through a
// ring of reused MAP_WRITE staging buffers so that filling one overlaps the copy of another.

import { RuntimeFailure } from '../errors.js';
import type { GpuContext } from './device.js';

/** Counts bytes of device buffers a worker holds against a budget; refuses to go over it. */
export class MemoryBudget {
  used = 0;
  constructor(readonly limitBytes: number) {}

  reserve(bytes: number, what: string): void {
    if (this.used + bytes > this.limitBytes) {
      throw new RuntimeFailure(`GPU memory budget exceeded: ${what} needs ${bytes} bytes, ${this.used} of ${this.limitBytes} in use`);
    }
    this.used += bytes;
  }

  release(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}

const budgets = new WeakMap<GPUDevice, MemoryBudget>();

/**
 * The device's budget: `limitBytes` when given (see budgetBytes), else its maxBufferSize capped at
 * 8 largest bindings (WebGPU tells no memory size).
 */
export function memoryBudget(ctx: GpuContext, limitBytes?: number): MemoryBudget {
  let b = budgets.get(ctx.device);
  if (!b || limitBytes !== undefined) {
    b = new MemoryBudget(limitBytes ?? budgetBytes(ctx.device.limits, null));
    budgets.set(ctx.device, b);
  }
  return b;
}

/** Share of a GPU's free memory (when its driver tells it) that a worker's buffers may hold; the rest is the driver's and Dawn's. */
export const BUDGET_SHARE_OF_FREE = 0.85;

/**
 * A GPU worker's device memory budget: BUDGET_SHARE_OF_FREE of the memory free when it starts,
 * where the driver tells it (nvidia-smi: a 141 GiB H200 then holds ~120 GiB of partitions, not
 * 16), else maxBufferSize capped at 8 largest bindings.
 */
export function budgetBytes(limits: Pick<GPUSupportedLimits, 'maxBufferSize' | 'maxStorageBufferBindingSize'>, freeBytes: number | null): number {
  if (freeBytes !== null && freeBytes > 0) return Math.floor(BUDGET_SHARE_OF_FREE * freeBytes);
  return Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize * 8);
}

const STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/**
 * Commands made without an encoder of their own (clears of recycled buffers, single dispatches,
 * copies for readbacks) are recorded into one pending encoder per device and reach the queue
 * ahead of the next submission, write or readback. A submission per command cost a GPU worker's
 * main thread more than its GPU work (10 GB group-by: about a second of four). Every queue
 * operation goes through `submit` / `writeBuffer` / `submittedWorkDone`, so the queue still sees
 * the commands in the order they were made.
 */
const pendingEncoders = new WeakMap<GPUDevice, GPUCommandEncoder>();

/** The device's pending encoder: what is recorded here is submitted before anything submitted later. */
export function pendingEncoder(ctx: GpuContext): GPUCommandEncoder {
  let enc = pendingEncoders.get(ctx.device);
  if (!enc) { enc = ctx.device.createCommandEncoder(); pendingEncoders.set(ctx.device, enc); }
  return enc;
}

/** Submits the pending commands, then `commands`. */
export function submit(ctx: GpuContext, ...commands: GPUCommandBuffer[]): void {
  const enc = pendingEncoders.get(ctx.device);
  if (enc) pendingEncoders.delete(ctx.device);
  const all = enc ? [enc.finish(), ...commands] : commands;
  if (all.length > 0) ctx.device.queue.submit(all);
}

/** queue.writeBuffer after the pending commands (which may clear the same buffer). */
export function writeBuffer(ctx: GpuContext, buf: GPUBuffer, offset: number, data: ArrayBufferView): void {
  submit(ctx);
  ctx.device.queue.writeBuffer(buf, offset, data as ArrayBufferView<ArrayBuffer>);
}

/** Resolves once everything made so far, pending commands included, has run. */
export function submittedWorkDone(ctx: GpuContext): Promise<void> {
  submit(ctx);
  return ctx.device.queue.onSubmittedWorkDone();
}

/**
 * Freed storage buffers kept for reuse, by size. Allocating device memory costs milliseconds on a
 * real GPU, and a chunk's work allocates a dozen large buffers, so each worker recycles them.
 * Sizes are rounded up to one of 8 steps per power of two so that chunks of slightly different
 * sizes share buffers; a reused buffer is cleared, so it reads as zeros like a new one.
 */
class BufferPool {
  private readonly free = new Map<number, GPUBuffer[]>();
  private readonly held = new WeakSet<GPUBuffer>(); // a buffer freed twice must not be handed out twice
  private bytes = 0;
  constructor(private readonly limitBytes: number) {}

  take(size: number): GPUBuffer | undefined {
    const buf = this.free.get(size)?.pop();
    if (buf) { this.bytes -= size; this.held.delete(buf); }
    return buf;
  }

  /** Keeps `buf` for reuse (true), or says the pool is full (false); a buffer already kept counts as kept. */
  keep(buf: GPUBuffer): boolean {
    if (this.held.has(buf)) return true;
    if (this.bytes + buf.size > this.limitBytes) return false;
    this.held.add(buf);
    let list = this.free.get(buf.size);
    if (!list) { list = []; this.free.set(buf.size, list); }
    list.push(buf);
    this.bytes += buf.size;
    return true;
  }
}

const pools = new WeakMap<GPUDevice, BufferPool>();
function poolOf(ctx: GpuContext): BufferPool {
  let p = pools.get(ctx.device);
  if (!p) { p = new BufferPool(Math.min(4 * 2 ** 30, memoryBudget(ctx).limitBytes / 4)); pools.set(ctx.device, p); }
  return p;
}

/** The pooled size for a request: 16-byte multiples below 4 KiB, else one of 8 steps per power of two. */
function sizeClass(bytes: number, max: number): number {
  const size = Math.max(16, Math.ceil(bytes / 16) * 16);
  if (size <= 4096) return size;
  const step = 2 ** (Math.floor(Math.log2(size - 1)) - 3);
  return Math.min(max, Math.ceil(size / step) * step);
}

/**
 * A device storage buffer of at least `bytes` (rounded up), zero-filled, counted against the budget.
 * A recycled buffer is cleared in `clearIn` when given (work recorded there sees zeros), else in
 * the pending commands.
 */
export function storageBuffer(ctx: GpuContext, bytes: number, label: string, clearIn?: GPUCommandEncoder): GPUBuffer {
  const limit = ctx.device.limits.maxStorageBufferBindingSize;
  if (bytes > limit) {
    throw new RuntimeFailure(`${label}: ${bytes} bytes exceed the GPU's storage binding limit ${limit}; use smaller chunks`);
  }
  const size = sizeClass(bytes, Math.floor(limit / 4) * 4);
  memoryBudget(ctx).reserve(size, label);
  const reused = poolOf(ctx).take(size);
  if (!reused) return ctx.device.createBuffer({ size, usage: STORAGE(), label });
  (clearIn ?? pendingEncoder(ctx)).clearBuffer(reused);
  return reused;
}

/**
 * Throws unless `buf` holds `bytes` in whole 16-byte quads, as kernels that bind it as vec4s need
 * (a binding cut short would clamp the last read to the quad before). storageBuffer's always do.
 */
export function requireWholeQuads(buf: GPUBuffer, bytes: number, user: string): void {
  if (buf.size % 16 !== 0 || buf.size < Math.ceil(bytes / 16) * 16) throw new Error(`${user}: a buffer of ${buf.size} bytes does not hold ${bytes} bytes in whole 16-byte quads`);
}

/** Gives a buffer back: a storage buffer goes to the pool for reuse, anything else is destroyed. */
export function freeBuffer(ctx: GpuContext, buf: GPUBuffer): void {
  memoryBudget(ctx).release(buf.size);
  if (buf.usage === STORAGE() && poolOf(ctx).keep(buf)) return;
  submit(ctx); // pending commands may still use it
  buf.destroy();
}

/**
 * A uniform buffer of these u32 parameters, shared and kept for the device's life (never destroy
 * it): iterative work passes the same parameters every round, and then its bind groups repeat too
 * (GpuKernel caches them). A bounded number are kept: past it the least recently used half is
 * destroyed once the work submitted so far has finished (onSubmittedWorkDone); work still being
 * recorded uses recent ones.
 */
export function sharedUniform(ctx: GpuContext, words: readonly number[]): GPUBuffer {
  let cache = sharedUniforms.get(ctx.device);
  if (!cache) { cache = new Map(); sharedUniforms.set(ctx.device, cache); }
  const key = words.map((w) => w >>> 0).join(',');
  let buf = cache.get(key);
  if (buf) { cache.delete(key); cache.set(key, buf); return buf; }
  buf = uniformWords(ctx, words);
  cache.set(key, buf);
  if (cache.size > MAX_SHARED_UNIFORMS) {
    const oldest = [...cache.keys()].slice(0, cache.size - MAX_SHARED_UNIFORMS / 2);
    const retired = oldest.map((k) => { const b = cache!.get(k)!; cache!.delete(k); return b; });
    void submittedWorkDone(ctx).then(() => { for (const b of retired) b.destroy(); }, () => {});
  }
  return buf;
}

const MAX_SHARED_UNIFORMS = 4096;
const sharedUniforms = new WeakMap<GPUDevice, Map<string, GPUBuffer>>();

/** A small uniform buffer of u32 parameters (padded to 16 bytes). */
export function uniformWords(ctx: GpuContext, words: readonly number[]): GPUBuffer {
  const data = new Uint32Array(Math.max(4, Math.ceil(words.length / 4) * 4));
  data.set(words.map((w) => w >>> 0));
  const buf = ctx.device.createBuffer({ size: data.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  ctx.device.queue.writeBuffer(buf, 0, data); // a new buffer: no pending command uses it
  return buf;
}

/**
 * Several reused MAP_WRITE buffers: `upload` fills one while earlier ones are still being copied;
 * each is re-mapped (mapAsync) after its copy is submitted and awaited before its next use.
 */
export class StagingRing {
  private readonly slots: { buf: GPUBuffer; ready: Promise<void> }[] = [];
  private next = 0;

  constructor(private readonly ctx: GpuContext, readonly slotBytes = 16 << 20, slotCount = 4) {
    for (let i = 0; i < slotCount; i++) {
      const buf = ctx.device.createBuffer({ size: slotBytes, usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
      this.slots.push({ buf, ready: Promise.resolve() });
    }
  }

  /** Copies `src` into `dst` at `dstOffset` (both multiples of 4 bytes; src is padded with zeros). */
  upload(src: ArrayBufferView, dst: GPUBuffer, dstOffset = 0): Promise<void> {
    const bytes = new Uint8Array(src.buffer, src.byteOffset, src.byteLength);
    return this.fill(dst, dstOffset, bytes.length, (view, at) => view.set(bytes.subarray(at, at + view.length)));
  }

  /**
   * Fills `length` bytes of `dst` from `dstOffset` (a multiple of 4) slot by slot: `write(view,
   * at)` puts bytes [at, at + view.length) straight into a mapped staging slot (from a file read,
   * say: no copy in between); the tail of the last slot is padded with zeros to a multiple of 4.
   * The slots of one fill are written at once (an asynchronous `write`, such as a file read on
   * libuv's threads, then overlaps its slots with each other and with the main thread's work).
   */
  async fill(dst: GPUBuffer, dstOffset: number, length: number, write: (view: Uint8Array, at: number) => void | Promise<void>): Promise<void> {
    const parts: Promise<void>[] = [];
    for (let at = 0; at < length; at += this.slotBytes) parts.push(this.fillSlot(dst, dstOffset, at, Math.min(length - at, this.slotBytes), write));
    await Promise.all(parts);
  }

  private async fillSlot(dst: GPUBuffer, dstOffset: number, at: number, part: number, write: (view: Uint8Array, at: number) => void | Promise<void>): Promise<void> {
    const padded = Math.ceil(part / 4) * 4;
    // Claim the slot before waiting, so that concurrent uploads never share one.
    const slot = this.slots[this.next];
    this.next = (this.next + 1) % this.slots.length;
    const previous = slot.ready;
    let mapped!: () => void;
    slot.ready = new Promise<void>((resolve) => { mapped = resolve; });
    await previous;
    try {
      const view = new Uint8Array(slot.buf.getMappedRange(0, padded));
      try {
        await write(view.subarray(0, part), at);
        view.fill(0, part);
      } finally {
        slot.buf.unmap();
      }
      pendingEncoder(this.ctx).copyBufferToBuffer(slot.buf, 0, dst, dstOffset + at, padded);
      submit(this.ctx);
    } finally {
      // Mapped again for its next use, also after a failed write (else the slot would wait forever).
      // A failed map shows up at the slot's next getMappedRange, in that upload.
      slot.buf.mapAsync(GPUMapMode.WRITE).then(mapped, mapped);
    }
  }

  destroy(): void {
    for (const s of this.slots) s.buf.destroy();
  }
}

const rings = new WeakMap<GPUDevice, StagingRing>();

/** The device's one staging ring, shared by everything a worker uploads (slots are claimed, so uploads may overlap). */
export function stagingRingOf(ctx: GpuContext): StagingRing {
  let ring = rings.get(ctx.device);
  // Eight 16 MiB slots: two 64 MB chunks can fill slots at once while earlier copies run.
  if (!ring) { ring = new StagingRing(ctx, 16 << 20, 8); rings.set(ctx.device, ring); }
  return ring;
}

/** A device buffer holding `data` (uploaded through `ring`, or queue.writeBuffer without one). */
export async function uploadNew(ctx: GpuContext, data: ArrayBufferView, label: string, ring?: StagingRing): Promise<GPUBuffer> {
  const buf = storageBuffer(ctx, data.byteLength, label);
  if (ring) {
    await ring.upload(data, buf);
  } else if (data.byteLength > 0) {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const padded = Math.ceil(bytes.length / 4) * 4;
    if (padded === bytes.length) writeBuffer(ctx, buf, 0, bytes);
    else { const tmp = new Uint8Array(padded); tmp.set(bytes); writeBuffer(ctx, buf, 0, tmp); }
  }
  return buf;
}

/** Reads `bytes` from `src` at `offset` back to the host (a multiple of 4). */
export async function readBack(ctx: GpuContext, src: GPUBuffer, bytes = src.size, offset = 0): Promise<ArrayBuffer> {
  const size = Math.max(4, Math.ceil(bytes / 4) * 4);
  const staging = readStaging(ctx, size);
  pendingEncoder(ctx).copyBufferToBuffer(src, offset, staging, 0, size);
  submit(ctx);
  try {
    await staging.mapAsync(GPUMapMode.READ, 0, size);
    throwIfGpuFailed(ctx);
  } catch (err) {
    staging.destroy();
    throw err;
  }
  const out = staging.getMappedRange(0, size).slice(0, bytes);
  staging.unmap();
  releaseReadStaging(ctx, staging);
  return out;
}

/**
 * Readback buffers (MAP_READ) kept for reuse by size class: a chunk reads back half a dozen small
 * results, and creating a mappable buffer for each was a tenth of a GPU worker's main thread.
 */
const readPools = new WeakMap<GPUDevice, Map<number, GPUBuffer[]>>();
const READ_POOL_MAX_BYTES = 16 << 20;
const READ_POOL_PER_SIZE = 8;

/** An unmapped MAP_READ | COPY_DST buffer of at least `bytes` (a multiple of 4). */
export function readStaging(ctx: GpuContext, bytes: number): GPUBuffer {
  const size = sizeClass(bytes, Number.MAX_SAFE_INTEGER);
  const reused = readPools.get(ctx.device)?.get(size)?.pop();
  return reused ?? ctx.device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
}

/** Gives back an unmapped readStaging buffer. */
export function releaseReadStaging(ctx: GpuContext, buf: GPUBuffer): void {
  let pool = readPools.get(ctx.device);
  if (!pool) { pool = new Map(); readPools.set(ctx.device, pool); }
  const list = pool.get(buf.size) ?? [];
  if (buf.size > READ_POOL_MAX_BYTES || list.length >= READ_POOL_PER_SIZE) { buf.destroy(); return; }
  list.push(buf);
  pool.set(buf.size, list);
}

/** Validation or device errors surface here, at the next readback, as a RuntimeFailure. */
export function throwIfGpuFailed(ctx: GpuContext): void {
  const problem = ctx.lostReason ?? ctx.errors[0];
  if (problem) throw new RuntimeFailure(`GPU error: ${problem}`);
}

export async function readU32(ctx: GpuContext, src: GPUBuffer, count: number, offsetWords = 0): Promise<Uint32Array> {
  return new Uint32Array(await readBack(ctx, src, count * 4, offsetWords * 4));
}

/**
 * Fills a buffer with one u32 value, by a kernel in the pending commands (a host array written through
 * writeBuffer cost a key table's worth of bytes at ~1 GB/s). Storage buffers come zeroed
 * (storageBuffer): zero never needs filling.
 */
export function fillU32(ctx: GpuContext, buf: GPUBuffer, value: number, words = buf.size / 4): void {
  kernelFor(ctx, 'fill-u32', FILL_U32_WGSL).dispatch('fill', [sharedUniform(ctx, [words, value]), buf], workgroupsFor(words));
}

const FILL_U32_WGSL = /* wgsl */ `
struct Params { n: u32, value: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(256)
fn fill(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = gid.x; i < p.n; i += nwg.x * 256u) { out[i] = p.value; }
}`;

export const WORKGROUP_SIZE = 256;
/** Workgroups for a grid-stride loop over n items (kernels loop, so the count is capped). */
export function workgroupsFor(n: number, perThread = 1): number {
  return Math.max(1, Math.min(8192, Math.ceil(n / perThread / WORKGROUP_SIZE)));
}

/**
 * One WGSL module compiled once; each entry point gets its pipeline on first use. A dispatch
 * binds buffers to @group(0) @binding(0..n-1) in the order given.
 */
export class GpuKernel {
  private readonly module: GPUShaderModule;
  private readonly pipelines = new Map<string, GPUComputePipeline>();
  private readonly bindGroups = new Map<string, GPUBindGroup>(); // Map order = least recently used first

  constructor(private readonly ctx: GpuContext, readonly code: string, readonly label: string) {
    this.module = ctx.device.createShaderModule({ code, label });
  }

  /**
   * Compiles the entry points' pipelines now (the first dispatch would otherwise pay for it), on
   * the driver's threads: all of the CSV group-by's at once took 0.44 s on an H200 against 0.8 s
   * one by one (NVIDIA's shader disk cache off), and leave this thread free meanwhile.
   */
  async prepare(entries: readonly string[]): Promise<void> {
    const done = Promise.all(entries.map(async (entry) => {
      if (this.pipelines.has(entry)) return;
      const p = await this.ctx.device.createComputePipelineAsync(this.pipelineDescriptor(entry));
      if (!this.pipelines.has(entry)) this.pipelines.set(entry, p);
    }));
    const preparing = preparingOn(this.ctx.device), settled = done.then(() => {}, () => {});
    preparing.add(settled);
    void settled.then(() => preparing.delete(settled));
    await done;
  }

  /** Whether the entry point's pipeline exists (prepared, or dispatched once). */
  compiled(entry: string): boolean {
    return this.pipelines.has(entry);
  }

  private pipeline(entry: string): GPUComputePipeline {
    let p = this.pipelines.get(entry);
    if (!p) {
      p = this.ctx.device.createComputePipeline(this.pipelineDescriptor(entry));
      this.pipelines.set(entry, p);
    }
    return p;
  }

  private pipelineDescriptor(entry: string): GPUComputePipelineDescriptor {
    return { layout: 'auto', compute: { module: this.module, entryPoint: entry }, label: `${this.label}.${entry}` };
  }

  /**
   * The bind group of these buffers for an entry point. Kept (a bounded number, most recent): a
   * Lloyd round or a chunk binds the same buffers as the last one (kept or pooled buffers, shared
   * uniforms), and making a bind group costs more than recording the dispatch.
   */
  private bindGroup(entry: string, pipeline: GPUComputePipeline, buffers: readonly (GPUBuffer | null)[]): GPUBindGroup {
    const key = `${entry}:${buffers.map((b) => (b ? idOf(b) : '-')).join(',')}`;
    let group = this.bindGroups.get(key);
    if (group) { this.bindGroups.delete(key); this.bindGroups.set(key, group); return group; }
    group = this.ctx.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: buffers.flatMap((buffer, binding) => (buffer ? [{ binding, resource: { buffer } }] : [])),
    });
    this.bindGroups.set(key, group);
    if (this.bindGroups.size > MAX_BIND_GROUPS) this.bindGroups.delete(this.bindGroups.keys().next().value!);
    return group;
  }

  /** Records a dispatch into `encoder`, or into the pending commands when none is given. */
  dispatch(entry: string, buffers: readonly (GPUBuffer | null)[], workgroups: number, encoder?: GPUCommandEncoder, timestampWrites?: GPUComputePassTimestampWrites): void {
    const pipeline = this.pipeline(entry);
    const bindGroup = this.bindGroup(entry, pipeline, buffers);
    const pass = (encoder ?? pendingEncoder(this.ctx)).beginComputePass(timestampWrites ? { timestampWrites } : {});
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(workgroups);
    pass.end();
  }
}

const MAX_BIND_GROUPS = 1024;

/** Each device's compiles started by GpuKernel.prepare and not yet settled. */
const preparingByDevice = new WeakMap<GPUDevice, Set<Promise<void>>>();
function preparingOn(device: GPUDevice): Set<Promise<void>> {
  let s = preparingByDevice.get(device);
  if (!s) preparingByDevice.set(device, s = new Set());
  return s;
}

/**
 * Resolves once the kernels being prepared have compiled (or failed: their first dispatch then
 * compiles again and reports the error). Wait for it before recording work that may use them, so
 * a dispatch does not compile a second time, on this thread, what the driver is compiling already.
 */
export async function kernelsPrepared(ctx: GpuContext): Promise<void> {
  await Promise.all(preparingOn(ctx.device));
}

/** A number per buffer object, for bind-group keys (a destroyed buffer's number is never reused). */
const bufferIds = new WeakMap<GPUBuffer, number>();
let nextBufferId = 0;
function idOf(buf: GPUBuffer): number {
  let id = bufferIds.get(buf);
  if (id === undefined) { id = nextBufferId++; bufferIds.set(buf, id); }
  return id;
}

const kernelCache = new WeakMap<GPUDevice, Map<string, GpuKernel>>();
/** The device's compiled kernel for a WGSL source, compiled on first request. */
export function kernelFor(ctx: GpuContext, label: string, code: string): GpuKernel {
  let m = kernelCache.get(ctx.device);
  if (!m) { m = new Map(); kernelCache.set(ctx.device, m); }
  let k = m.get(label);
  if (!k) { k = new GpuKernel(ctx, code, label); m.set(label, k); }
  else if (k.code !== code) throw new Error(`kernel label '${label}' is used for two different WGSL sources`);
  return k;
}

/** The same bytes as u32 words (kernel words read back or sent as i32 or f32 arrays). */
export function asU32(a: Int32Array | Float32Array): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, a.length);
}
