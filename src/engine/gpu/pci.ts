// The machine's GPUs as the PCI bus shows them, and how a process is pinned to one. Kept apart from
// device.ts so that choosing GPUs and starting their workers does not load WebGPU (dawn.node) in
// the parent process: only GPU workers open devices.

import { execFile, execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { UsageError } from '../errors.js';
import type { DeviceMode } from '../exec/gpu-select.js';
import type { GpuInfo } from './device.js';

/** The env that pins a child process to one GPU through Mesa's device-select layer. */
export function pinnedEnv(driPrime: string): NodeJS.ProcessEnv {
  return { ...process.env, DRI_PRIME: driPrime, MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE: '1', XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' };
}

/** 0000:06:00.0 or 00000000:06:00.0 → pci-0000_06_00_0 */
export function driPrimeOf(busId: string): string {
  const m = /^(?:[0-9a-f]*?([0-9a-f]{1,4})):([0-9a-f]{2}):([0-9a-f]{2})\.([0-9a-f])$/i.exec(busId.trim());
  if (!m) throw new Error(`not a PCI bus id: ${busId}`);
  return `pci-${m[1].padStart(4, '0')}_${m[2]}_${m[3]}_${m[4]}`.toLowerCase();
}

/**
 * gpuBusIds() without starting nvidia-smi (0.1-0.2 s on the H200 machine, before any worker could
 * start): the GPUs NVIDIA's kernel driver lists in /proc/driver/nvidia/gpus, in bus order, as
 * nvidia-smi orders them. Null where there is no such list. Only a guess for starting GPU workers
 * early: a run adopts those only for GPUs that gpuBusIds() names too.
 */
export function quickGpuBusIds(dir = '/proc/driver/nvidia/gpus'): string[] | null {
  try {
    const ids = readdirSync(dir).filter((d) => /^[0-9a-f]+:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$/i.test(d));
    return ids.length > 0 ? ids.sort((a, b) => driPrimeOf(a).localeCompare(driPrimeOf(b))) : null;
  } catch {
    return null;
  }
}

let busIdsSeen: string[] | null = null;

/** PCI bus ids of the machine's GPUs: nvidia-smi when present, else display-class PCI devices (asked once per process). */
export function gpuBusIds(): string[] {
  busIdsSeen ??= findGpuBusIds();
  return busIdsSeen;
}

function findGpuBusIds(): string[] {
  try {
    const out = execFileSync('nvidia-smi', ['--query-gpu=pci.bus_id', '--format=csv,noheader'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 });
    const ids = out.split('\n').map((s) => s.trim()).filter(Boolean);
    if (ids.length > 0) return ids;
  } catch { /* no nvidia-smi: fall through */ }
  const root = '/sys/bus/pci/devices';
  try {
    return readdirSync(root).filter((dev) => {
      try { return readFileSync(`${root}/${dev}/class`, 'utf8').trim().startsWith('0x03'); } catch { return false; }
    }).sort();
  } catch {
    return [];
  }
}

/** A GPU's device memory in bytes, as its driver reports it. */
export interface GpuMemory { totalBytes: number; freeBytes: number }

/**
 * Device memory of the GPUs by bus (keyed by driPrimeOf), from one nvidia-smi call; empty where
 * there is none (another vendor's GPUs, or no GPU) or it takes longer than `timeoutMs`. WebGPU
 * tells no memory size: its maxBufferSize is the largest single buffer (1 TiB on the H200s).
 */
export function gpuMemoryByBus(timeoutMs = 10_000): Promise<Map<string, GpuMemory>> {
  return new Promise((resolve) => {
    execFile('nvidia-smi', ['--query-gpu=pci.bus_id,memory.total,memory.free', '--format=csv,noheader,nounits'], { encoding: 'utf8', timeout: timeoutMs }, (err, stdout) => {
      resolve(err ? new Map() : parseGpuMemory(stdout));
    });
  });
}

/** nvidia-smi's `bus id, total MiB, free MiB` lines by bus (lines it cannot read are left out). */
export function parseGpuMemory(text: string): Map<string, GpuMemory> {
  const out = new Map<string, GpuMemory>();
  for (const line of text.split('\n')) {
    const [busId, total, free] = line.split(',').map((s) => s.trim());
    if (!busId || !/^\d+$/.test(total ?? '') || !/^\d+$/.test(free ?? '')) continue;
    try {
      out.set(driPrimeOf(busId), { totalBytes: Number(total) * 2 ** 20, freeBytes: Number(free) * 2 ** 20 });
    } catch { /* not a bus id */ }
  }
  return out;
}

/** Parses --gpus '0,1' into distinct non-negative indices. */
export function parseGpuList(text: string): number[] {
  const parts = text.split(',').map((p) => p.trim());
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d+$/.test(p)) throw new UsageError(`--gpus '${text}': expected GPU indices such as 0,1 (see \`gpuframe devices\`)`);
    if (out.includes(Number(p))) throw new UsageError(`--gpus '${text}' lists GPU ${p} twice`);
    out.push(Number(p));
  }
  return out;
}

/**
 * The GPUs a run starts workers for, from the PCI bus alone (no probe process: each worker reports
 * what it opened, and one that opens nothing is retired). Without GPUs on the bus: none for
 * --device auto, one unpinned worker (a software adapter such as lavapipe) for --device gpu.
 */
export function gpuCandidates(device: DeviceMode, indices: number[] | undefined, busIds: string[], driPrimeOf: (busId: string) => string): GpuInfo[] {
  if (device === 'cpu') return [];
  if (busIds.length === 0) {
    for (const i of indices ?? []) if (i >= 1) throw new UsageError(`--gpus: there is no GPU ${i}; this machine has no GPU on its PCI bus (see \`gpuframe devices\`)`);
    return device === 'gpu' ? [{ busId: null, driPrime: null, adapter: null }] : [];
  }
  for (const i of indices ?? []) {
    if (i >= busIds.length) throw new UsageError(`--gpus: there is no GPU ${i}; the PCI bus has ${busIds.length} (${busIds.map((b, k) => `${k}: ${b}`).join(', ')})`);
  }
  return (indices ?? busIds.map((_, i) => i)).map((i) => ({ busId: busIds[i], driPrime: driPrimeOf(busIds[i]), adapter: null }));
}
