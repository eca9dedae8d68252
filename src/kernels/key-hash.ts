// Exact grouping of hashed keys on the GPU (WGSL: key-hash.wgsl.ts): rows are grouped by their
// 64-bit key hash with the group-by's own hash table, then every row's key fields are compared,
// byte by byte, with those of the row owning its slot. Either the table groups the keys exactly,
// or two different keys shared a hash (the caller then uses the CPU).

import type { GpuContext } from '../engine/gpu/device.js';
import { freeBuffer, kernelFor, readU32, sharedUniform, storageBuffer, workgroupsFor } from '../engine/gpu/buffers.js';
import type { KeyTable } from './groupby-aggregate.js';
import { KEY_VERIFY_WGSL } from './key-hash.wgsl.js';

/** The group-by keys of n rows, on the device. */
export interface HashedKeys {
  n: number;
  /** Key fields per row. */
  keyCount: number;
  /** 2 u32 words per row: the row's 64-bit key (a hash of its key fields). */
  words: GPUBuffer;
  /** 1 bit per row (LSB first): the row has a key (rows without one form no group). */
  validMask: GPUBuffer;
  /** 2 words per (key field k, row r) at 2 * (k * n + r): the field's text (key-hash.wgsl.ts). */
  spans: GPUBuffer;
}

/**
 * Whether the rows grouped by `table` (built on keys.words) group by their key fields exactly:
 * false when two different keys shared a 64-bit hash (the caller then uses the CPU).
 */
export async function keysGroupExactly(ctx: GpuContext, bytes: GPUBuffer, keys: HashedKeys, table: KeyTable): Promise<boolean> {
  const mismatch = storageBuffer(ctx, 4, 'key mismatch flag');
  const params = sharedUniform(ctx, [keys.n, keys.keyCount]);
  kernelFor(ctx, 'key-verify', KEY_VERIFY_WGSL)
    .dispatch('verify_keys', [bytes, keys.spans, keys.validMask, table.owner, table.rowSlot, mismatch, params], workgroupsFor(keys.n));
  const [collided] = await readU32(ctx, mismatch, 1);
  freeBuffer(ctx, mismatch);
  return collided === 0;
}
