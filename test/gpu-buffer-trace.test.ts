// GPUFRAME_TRACE_BUFFERS: every createBuffer of a traced device is logged with its label, size,
// usage, mapped-at-creation flag, time and caller, and the log reaches the file (its directory
// made if missing); tracing is off without the variable. A stand-in device (no GPU needed): the
// wrapper must pass each call through.

import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bufferTraceDir, traceBufferCreation, type BufferTraceEntry } from '../src/engine/gpu/buffer-trace.js';

describe('buffer creation trace', () => {
  it('is off unless GPUFRAME_TRACE_BUFFERS names a directory', () => {
    expect(bufferTraceDir({})).toBe(null);
    expect(bufferTraceDir({ GPUFRAME_TRACE_BUFFERS: '' })).toBe(null);
    expect(bufferTraceDir({ GPUFRAME_TRACE_BUFFERS: '/tmp/x' })).toBe('/tmp/x');
  });

  it('logs each createBuffer and passes it through', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'gpuframe-trace-')), 'not yet made');
    const made: GPUBufferDescriptor[] = [];
    const device = { createBuffer: (d: GPUBufferDescriptor) => { made.push(d); return { size: d.size } as unknown as GPUBuffer; } } as unknown as GPUDevice;
    const flush = traceBufferCreation(device, dir);
    const a = device.createBuffer({ label: 'csv chunk', size: 1 << 20, usage: 140 });
    device.createBuffer({ size: 64, usage: 6, mappedAtCreation: true });
    flush();
    expect(a.size).toBe(1 << 20);
    expect(made.map((d) => d.size)).toEqual([1 << 20, 64]);
    const log = JSON.parse(readFileSync(join(dir, `buffers-${process.pid}.json`), 'utf8')) as BufferTraceEntry[];
    expect(log.map(([label, bytes, usage, mapped]) => [label, bytes, usage, mapped])).toEqual([['csv chunk', 1 << 20, 140, 0], ['', 64, 6, 1]]);
    for (const [, , , , ms, at, caller] of log) {
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(at).toBeGreaterThan(0);
      expect(caller).toMatch(/gpu-buffer-trace\.test\.ts/);
    }
  });
});
