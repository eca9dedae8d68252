// Diagnosis of device-buffer creation: with GPUFRAME_TRACE_BUFFERS=<dir>, every createBuffer of a
// process's device is logged (label, bytes, usage, mapped at creation, its time on the main thread,
// when, and the caller) to <dir>/buffers-<pid>.json; `node bench/buffer-census.mjs <dir>` sums them
// up. A GPU worker's main thread bounds a GPU CSV run, and creating buffers was a large share of it.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** One createBuffer: label, bytes, usage bits, mapped at creation (1/0), ms it took, ms since the process's time origin, caller. */
export type BufferTraceEntry = [string, number, number, number, number, number, string];

/** The directory GPUFRAME_TRACE_BUFFERS names, or null when tracing is off. */
export function bufferTraceDir(env: NodeJS.ProcessEnv = process.env): string | null {
  return env.GPUFRAME_TRACE_BUFFERS ? env.GPUFRAME_TRACE_BUFFERS : null;
}

/**
 * Wraps `device.createBuffer` to log each call; the log is written every 200 ms and at exit (a
 * worker that is killed keeps what was written last). Returns the function that writes it.
 */
export function traceBufferCreation(device: GPUDevice, dir: string): () => void {
  const create = device.createBuffer.bind(device);
  const log: BufferTraceEntry[] = [];
  device.createBuffer = (descriptor: GPUBufferDescriptor) => {
    const t = performance.now();
    const buffer = create(descriptor);
    const caller = (new Error().stack ?? '').split('\n').slice(2, 3).map((l) => l.trim().replace(/^at /, '').replace(/\(file:\/\/.*?\/(dist|src)\//, '(')).join('');
    log.push([descriptor.label ?? '', descriptor.size, descriptor.usage, descriptor.mappedAtCreation ? 1 : 0, performance.now() - t, t, caller]);
    return buffer;
  };
  // Created here, so that naming a fresh directory is enough (a missing one made the writes fail silently).
  try { mkdirSync(dir, { recursive: true }); } catch { /* a diagnosis must not fail the run */ }
  const file = join(dir, `buffers-${process.pid}.json`);
  let written = 0;
  const flush = () => {
    if (log.length === written) return;
    written = log.length;
    try { writeFileSync(file, JSON.stringify(log)); } catch { /* a diagnosis must not fail the run */ }
  };
  setInterval(flush, 200).unref();
  process.on('exit', flush);
  return flush;
}
