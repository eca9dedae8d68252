// A CSV chunk's raw bytes for the GPU: read with one fs.readSync into a buffer reused from task
// to task (fresh memory costs page faults), and uploaded through one staging ring per device.

import { closeSync, readSync } from 'node:fs';
import type { GpuContext } from '../gpu/device.js';
import { StagingRing, uploadNew } from '../gpu/buffers.js';
import type { CsvChunk } from '../io/csv/index.js';
import { openInput } from '../io/csv/input-file.js';

/** Host buffers for chunk bytes, reused from task to task (a worker runs up to two at once). */
const spare: Buffer[] = [];

/** A chunk's bytes, and the call that gives their memory back for the next chunk. */
export interface ChunkBytes { bytes: Uint8Array; release(): void }

/** The chunk's bytes, ending in '\n' (one is appended after a last record that lacks it). */
export function readChunkBytes(chunk: CsvChunk): ChunkBytes {
  const length = chunk.end - chunk.start;
  let buf = spare.pop() ?? Buffer.alloc(0);
  if (buf.length < length + 1) buf = Buffer.allocUnsafe(Math.max(length + 1, buf.length * 2));
  const { fd } = openInput(chunk.path, chunk.displayName);
  let got = 0;
  try {
    while (got < length) {
      const n = readSync(fd, buf, got, length - got, chunk.start + got);
      if (n === 0) break;
      got += n;
    }
  } finally {
    closeSync(fd);
  }
  if (got > 0 && buf[got - 1] !== 0x0a) buf[got++] = 0x0a;
  return { bytes: buf.subarray(0, got), release: () => { spare.push(buf); } };
}

const rings = new WeakMap<GPUDevice, StagingRing>();

/** A device buffer holding `bytes`, uploaded through the device's staging ring. */
export function uploadChunk(gpu: GpuContext, bytes: Uint8Array): Promise<GPUBuffer> {
  let ring = rings.get(gpu.device);
  if (!ring) { ring = new StagingRing(gpu); rings.set(gpu.device, ring); }
  return uploadNew(gpu, bytes, 'csv chunk', ring);
}
