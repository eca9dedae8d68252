// A CSV chunk's raw bytes for the GPU, read from the file straight into the device's staging
// buffers (one copy: page cache to staging memory) and uploaded slot by slot. The host keeps no
// copy of the chunk: the few bytes it needs afterwards (group keys' text) are gathered on the
// device (kernels/span-bytes.ts).

import { closeSync } from 'node:fs';
import type { GpuContext } from '../gpu/device.js';
import { stagingRingOf, storageBuffer } from '../gpu/buffers.js';
import type { CsvChunk } from '../io/csv/index.js';
import { openInput, readInto, readIntoAsync } from '../io/csv/input-file.js';

/**
 * The chunk on the device, ending in '\n' (one is appended after a last record that lacks it),
 * and its length in bytes. The caller frees `data`.
 */
export async function uploadChunkFromFile(gpu: GpuContext, chunk: CsvChunk): Promise<{ data: GPUBuffer; length: number }> {
  const size = chunk.end - chunk.start;
  const { fd } = openInput(chunk.path, chunk.displayName);
  try {
    const last = new Uint8Array(1);
    const endsInNewline = size === 0 || (readInto(fd, last, chunk.end - 1) === 1 && last[0] === 0x0a);
    const length = endsInNewline ? size : size + 1;
    const data = storageBuffer(gpu, length, 'csv chunk');
    // Read on libuv's threads, slots at once: the worker's main thread keeps driving the GPU meanwhile.
    await stagingRingOf(gpu).fill(data, 0, length, async (view, at) => {
      const fromFile = Math.min(view.length, size - at);
      if (await readIntoAsync(fd, view.subarray(0, fromFile), chunk.start + at) !== fromFile) throw new Error(`${chunk.displayName} changed while being read`);
      if (fromFile < view.length) view[fromFile] = 0x0a;
    });
    return { data, length };
  } finally {
    closeSync(fd);
  }
}
