// Packing a byte-per-row validity mask (src/engine/batch.ts) into the bit mask kernels read.

import type { Validity } from '../engine/batch.js';

/** 1 bit per row, LSB first in u32 words; null (no nulls) gives one all-ones word. */
export function packValidity(valid: Validity, length: number): { words: Uint32Array; hasNulls: boolean } {
  if (valid === null) return { words: new Uint32Array([0xffffffff]), hasNulls: false };
  const words = new Uint32Array(Math.max(1, Math.ceil(length / 32)));
  for (let start = 0; start < length; start += 4096) packSlice(valid, words, start, Math.min(length, start + 4096));
  return { words, hasNulls: true };
}

// Host loops run per 4096-row slice in small functions: a hot top-level loop writing large typed
// arrays crashes dawn.node processes (notes/webgpu.md).
function packSlice(valid: Uint8Array, words: Uint32Array, start: number, end: number): void {
  for (let i = start; i < end; i++) if (valid[i]) words[i >>> 5] |= 1 << (i & 31);
}
