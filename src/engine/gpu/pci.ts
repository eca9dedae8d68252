// The machine's GPUs as the PCI bus shows them, and how a process is pinned to one. Kept apart from
// device.ts so that choosing GPUs and starting their workers does not load WebGPU (dawn.node) in
// the parent process: only GPU workers open devices.

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

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

/** PCI bus ids of the machine's GPUs: nvidia-smi when present, else display-class PCI devices. */
export function gpuBusIds(): string[] {
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
