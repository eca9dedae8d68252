// Inner hash join of two key columns on the GPU, returning (leftRow, rightRow) index pairs in
// left-row order, each left row's matches in right-row order. Keys are two u32 words per row
// (int64 (lo, hi) words, or a 64-bit hash of a string key: then the caller re-checks the strings).
// Null keys never match. WGSL: hash-join.wgsl.ts. CPU twin: hashJoinCpu.

import { RuntimeFailure } from '../engine/errors.js';
import type { GpuContext } from '../engine/gpu/device.js';
import { freeBuffer, kernelFor, readBack, readU32, sharedUniform, storageBuffer, uploadNew, workgroupsFor, type StagingRing } from '../engine/gpu/buffers.js';
import { freeKeyTable, insertKeys, nextPow2, type GroupKeys, type KeyTable } from './groupby-aggregate.js';
import { exclusiveScan } from './prefix-scan.js';
import { packValidity } from './validity.js';
import * as W from './hash-join.wgsl.js';

export interface JoinPairs {
  left: Int32Array;
  right: Int32Array;
}

interface BuiltSide { keys: GPUBuffer; table: KeyTable; capacity: number; segStart: GPUBuffer; sorted: GPUBuffer }

export async function hashJoin(ctx: GpuContext, left: GroupKeys, right: GroupKeys, options: { ring?: StagingRing } = {}): Promise<JoinPairs> {
  const built = await buildSide(ctx, right, options.ring);
  try {
    return await probeSide(ctx, left, built, options.ring);
  } finally {
    for (const b of [built.keys, built.segStart, built.sorted]) freeBuffer(ctx, b);
    freeKeyTable(ctx, built.table);
  }
}

async function buildSide(ctx: GpuContext, right: GroupKeys, ring?: StagingRing): Promise<BuiltSide> {
  const n = right.words.length / 2;
  const keys = await uploadNew(ctx, right.words, 'join build keys', ring);
  const mask = packValidity(right.valid, n);
  const maskBuf = await uploadNew(ctx, mask.words, 'join build validity', ring);
  // Capacity 2n can never overflow (at most n keys).
  const capacity = nextPow2(2 * n);
  const table = await insertKeys(ctx, keys, maskBuf, mask.hasNulls, n, capacity);
  freeBuffer(ctx, maskBuf);
  if (!table) throw new RuntimeFailure('GPU join table overflowed');
  const params = sharedUniform(ctx, [n, capacity, 0]);
  const segStart = storageBuffer(ctx, (capacity + 2) * 4, 'join segments');
  kernelFor(ctx, 'join-segment-sizes', W.JOIN_SEGMENT_SIZES_WGSL).dispatch('segment_sizes', [table.counts, segStart, params], workgroupsFor(capacity + 2));
  exclusiveScan(ctx, segStart, capacity + 2);
  const cursor = storageBuffer(ctx, capacity * 4, 'join cursors');
  const unordered = storageBuffer(ctx, n * 4, 'join rows unordered');
  const sorted = storageBuffer(ctx, n * 4, 'join rows by key');
  kernelFor(ctx, 'join-place', W.JOIN_PLACE_WGSL).dispatch('place_rows', [table.rowSlot, segStart, cursor, unordered, params], workgroupsFor(n));
  kernelFor(ctx, 'join-rank', W.JOIN_RANK_WGSL).dispatch('rank_rows', [table.rowSlot, segStart, unordered, sorted, params], workgroupsFor(n));
  freeBuffer(ctx, cursor);
  freeBuffer(ctx, unordered);
  return { keys, table, capacity, segStart, sorted };
}

async function probeSide(ctx: GpuContext, left: GroupKeys, built: BuiltSide, ring?: StagingRing): Promise<JoinPairs> {
  const n = left.words.length / 2;
  const keys = await uploadNew(ctx, left.words, 'join probe keys', ring);
  const mask = packValidity(left.valid, n);
  const maskBuf = await uploadNew(ctx, mask.words, 'join probe validity', ring);
  const params = sharedUniform(ctx, [n, built.capacity, mask.hasNulls ? 1 : 0]);
  const matchSlot = storageBuffer(ctx, n * 4, 'join match slots');
  const outStart = storageBuffer(ctx, (n + 1) * 4, 'join output offsets');
  kernelFor(ctx, 'join-probe', W.JOIN_PROBE_WGSL)
    .dispatch('probe_rows', [keys, maskBuf, built.keys, built.table.owner, built.segStart, matchSlot, outStart, params], workgroupsFor(n));
  exclusiveScan(ctx, outStart, n + 1);
  const [total] = await readU32(ctx, outStart, 1, n);
  const outLeft = storageBuffer(ctx, Math.max(1, total) * 4, 'join left rows');
  const outRight = storageBuffer(ctx, Math.max(1, total) * 4, 'join right rows');
  kernelFor(ctx, 'join-emit', W.JOIN_EMIT_WGSL)
    .dispatch('emit_pairs', [matchSlot, outStart, built.segStart, built.sorted, outLeft, outRight, params], workgroupsFor(n));
  const result = { left: new Int32Array(await readBack(ctx, outLeft, total * 4)), right: new Int32Array(await readBack(ctx, outRight, total * 4)) };
  for (const b of [keys, maskBuf, matchSlot, outStart, outLeft, outRight]) freeBuffer(ctx, b);
  return result;
}

/** CPU twin and test oracle: a Map from key to right rows in order, probed in left order. */
export function hashJoinCpu(left: GroupKeys, right: GroupKeys): JoinPairs {
  const rows = new Map<string, number[]>();
  const key = (k: GroupKeys, i: number) => `${k.words[2 * i] >>> 0},${k.words[2 * i + 1] >>> 0}`;
  for (let r = 0; r < right.words.length / 2; r++) {
    if (right.valid && !right.valid[r]) continue;
    const k = key(right, r);
    const list = rows.get(k);
    if (list) list.push(r); else rows.set(k, [r]);
  }
  const outL: number[] = [], outR: number[] = [];
  for (let l = 0; l < left.words.length / 2; l++) {
    if (left.valid && !left.valid[l]) continue;
    for (const r of rows.get(key(left, l)) ?? []) { outL.push(l); outR.push(r); }
  }
  return { left: Int32Array.from(outL), right: Int32Array.from(outR) };
}
