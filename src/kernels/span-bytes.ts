// Byte spans [start, end) of a buffer on the device, packed one after another and read back once
// (WGSL: span-bytes.wgsl.ts). Why: the text of a GPU group-by's keys lies in the chunk already on
// the device; reading it again from the file meant reading the whole chunk once groups passed a
// thousand (90k groups of two string keys: ~0.4 s of a 256 MB chunk's ~1 s on an H200).

import type { GpuContext } from '../engine/gpu/device.js';
import { freeBuffer, kernelFor, readU32, sharedUniform, storageBuffer, uploadNew, workgroupsFor } from '../engine/gpu/buffers.js';
import { GATHER_SPANS_WGSL } from './span-bytes.wgsl.js';

/** Spans packed in order: span i is data[offsets[i], offsets[i + 1]). */
export interface PackedSpans { data: Uint8Array; offsets: Uint32Array }

/** Output offsets of spans of the given bounds (an end below its start counts as empty). */
function packedOffsets(starts: Uint32Array, ends: Uint32Array): Uint32Array {
  const offsets = new Uint32Array(starts.length + 1);
  for (let i = 0; i < starts.length; i++) offsets[i + 1] = offsets[i] + Math.max(0, ends[i] - starts[i]);
  return offsets;
}

/** The spans of `bytes`, a device buffer (its bytes as u32 words, little-endian). */
export async function gatherSpans(ctx: GpuContext, bytes: GPUBuffer, starts: Uint32Array, ends: Uint32Array): Promise<PackedSpans> {
  const offsets = packedOffsets(starts, ends);
  const total = offsets[starts.length];
  if (total === 0) return { data: new Uint8Array(0), offsets };
  const words = Math.ceil(total / 4);
  const startBuf = await uploadNew(ctx, starts, 'span starts');
  const offsetBuf = await uploadNew(ctx, offsets, 'span offsets');
  const packed = storageBuffer(ctx, words * 4, 'packed spans');
  kernelFor(ctx, 'gather-spans', GATHER_SPANS_WGSL)
    .dispatch('gather_spans', [bytes, startBuf, offsetBuf, packed, sharedUniform(ctx, [starts.length, words, total])], workgroupsFor(words));
  const out = await readU32(ctx, packed, words);
  for (const b of [startBuf, offsetBuf, packed]) freeBuffer(ctx, b);
  return { data: new Uint8Array(out.buffer, out.byteOffset, total), offsets };
}

/** The CPU twin of gatherSpans. */
export function gatherSpansCpu(bytes: Uint8Array, starts: Uint32Array, ends: Uint32Array): PackedSpans {
  const offsets = packedOffsets(starts, ends);
  const data = new Uint8Array(offsets[starts.length]);
  for (let i = 0; i < starts.length; i++) data.set(bytes.subarray(starts[i], starts[i] + offsets[i + 1] - offsets[i]), offsets[i]);
  return { data, offsets };
}
