// Exact grouping of hashed keys on the GPU (WGSL: key-hash.wgsl.ts): rows are grouped by their
// 64-bit key hash with the group-by's own hash table, then every row's key fields are compared,
// byte by byte, with its group representative's. The result names each row's representative row, an
// exact group id, or says that two different keys shared a hash (the caller then uses the CPU).

import { RuntimeFailure } from '../engine/errors.js';
import type { GpuContext } from '../engine/gpu/device.js';
import { freeBuffer, kernelFor, readU32, storageBuffer, uniformWords, workgroupsFor } from '../engine/gpu/buffers.js';
import { insertKeys, nextPow2 } from './groupby-aggregate.js';
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
 * For each row, (representative row, 0) as two u32 words ((n, 0) for a row without a key), in a
 * new device buffer the caller frees; null when a hash collision was found.
 */
export async function exactKeyGroups(ctx: GpuContext, bytes: GPUBuffer, keys: HashedKeys): Promise<GPUBuffer | null> {
  const { n } = keys;
  for (let capacity = nextPow2(2 * n); ; capacity *= 2) {
    const table = await insertKeys(ctx, keys.words, keys.validMask, true, n, capacity);
    if (!table) {
      // Only when the table filled up, which 2n slots for n keys never should: retry larger, once.
      if (capacity > 2 * nextPow2(2 * n)) throw new RuntimeFailure('GPU key table overflowed at full capacity');
      continue;
    }
    const groupOf = storageBuffer(ctx, Math.max(1, n) * 8, 'key groups');
    const mismatch = storageBuffer(ctx, 4, 'key mismatch flag');
    const params = uniformWords(ctx, [n, keys.keyCount]);
    try {
      ctx.device.queue.writeBuffer(mismatch, 0, new Uint32Array(1));
      kernelFor(ctx, 'key-verify', KEY_VERIFY_WGSL)
        .dispatch('verify_keys', [bytes, keys.spans, keys.validMask, table.owner, table.rowSlot, groupOf, mismatch, params], workgroupsFor(n));
      const [collided] = await readU32(ctx, mismatch, 1);
      if (collided === 0) return groupOf;
      freeBuffer(ctx, groupOf);
      return null;
    } finally {
      for (const b of [table.owner, table.counts, table.firstRow, table.rowSlot, mismatch]) freeBuffer(ctx, b);
      params.destroy();
    }
  }
}
