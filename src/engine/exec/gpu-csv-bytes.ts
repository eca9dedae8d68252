// A CSV chunk's raw bytes for the GPU: read with one fs.readSync into a buffer reused from task
// to task (a GPU worker must not touch bytes in JS loops, and fresh memory costs page faults), and
// uploaded through one staging ring per device.

import { closeSync, readSync } from 'node:fs';
import type { GpuContext } from '../gpu/device.js';
import { StagingRing, uploadNew } from '../gpu/buffers.js';
import type { CsvChunk } from '../io/csv/index.js';
import { openInput } from '../io/csv/input-file.js';

let reused = Buffer.alloc(0);

/**
 * The chunk's bytes, ending in '\n' (one is appended after a last record that lacks it). The view
 * is only valid until the next call.
 */
export function readChunkBytes(chunk: CsvChunk): Uint8Array {
  const length = chunk.end - chunk.start;
  if (reused.length < length + 1) reused = Buffer.allocUnsafe(Math.max(length + 1, reused.length * 2));
  const { fd } = openInput(chunk.path, chunk.displayName);
  let got = 0;
  try {
    while (got < length) {
      const n = readSync(fd, reused, got, length - got, chunk.start + got);
      if (n === 0) break;
      got += n;
    }
  } finally {
    closeSync(fd);
  }
  if (got > 0 && reused[got - 1] !== 0x0a) reused[got++] = 0x0a;
  return reused.subarray(0, got);
}

const rings = new WeakMap<GPUDevice, StagingRing>();

/** A device buffer holding `bytes`, uploaded through the device's staging ring. */
export function uploadChunk(gpu: GpuContext, bytes: Uint8Array): Promise<GPUBuffer> {
  let ring = rings.get(gpu.device);
  if (!ring) { ring = new StagingRing(gpu); rings.set(gpu.device, ring); }
  return uploadNew(gpu, bytes, 'csv chunk', ring);
}
