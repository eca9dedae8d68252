// Opening a WebGPU device (Dawn through the npm `webgpu` package) and describing the machine's GPUs.
// One process drives one GPU: the executor pins a worker to a GPU with DRI_PRIME + the Mesa
// device-select layer, and inside that worker `openGpu()` takes whatever adapter Dawn offers.

import { execFile } from 'node:child_process';
import { create, globals } from 'webgpu';
import { driPrimeOf, gpuBusIds, pinnedEnv } from './pci.js';
import { checkFusedFma } from './fma.js';
import { checkSubgroupLayout, UNCHECKED_LAYOUT, type SubgroupLayout } from './subgroups.js';
import { bufferTraceDir, traceBufferCreation } from './buffer-trace.js';

export interface GpuContext {
  adapter: GPUAdapter;
  device: GPUDevice;
  /** Features the device was created with. */
  features: ReadonlySet<string>;
  hasSubgroups: boolean;
  /** Whether subgroup kernels may run here (subgroups.ts); 'not checked' until `checked` resolves. */
  subgroupLayout: SubgroupLayout;
  /** Whether fma() is fused here (fma.ts); false until `checked` resolves. */
  fusedFma: boolean;
  /** The device checks openGpu starts (subgroup layout, fma); kernels recorded before they resolve use their plain forms. */
  checked: Promise<void>;
  hasTimestamps: boolean;
  isSoftware: boolean;
  /** Set once the device is lost; callers stop dispatching and report a RuntimeFailure. */
  lostReason: string | null;
  /** Uncaptured validation/out-of-memory errors (a kernel bug or exhausted memory). */
  errors: string[];
}

export interface AdapterDescription {
  name: string;
  vendor: string;
  architecture: string;
  backend: string;
  isSoftware: boolean;
  limits: Record<string, number>;
  features: string[];
}

export interface GpuInfo {
  /** PCI bus id as the driver reports it (e.g. 0000:06:00.0), null for a software adapter. */
  busId: string | null;
  /** DRI_PRIME value that pins a process to this GPU (e.g. pci-0000_06_00_0). */
  driPrime: string | null;
  /** What a process pinned to this GPU sees through WebGPU, or null when it sees no adapter. */
  adapter: AdapterDescription | null;
  /** Why probing failed, when it did. */
  error?: string;
}

const SOFTWARE_NAMES = /llvmpipe|lavapipe|swiftshader|software/i;
const WANTED_FEATURES: GPUFeatureName[] = ['subgroups', 'timestamp-query'];

// The instance (and each adapter, kept in its GpuContext) must stay referenced while a device
// lives: dawn.node crashes the process when either is garbage-collected first (notes/webgpu.md).
// Timestamps are not quantised, so kernel timings (timing.ts) are exact. GPUFRAME_DAWN_FLAGS adds
// dawn.node flags (space-separated), to measure Dawn settings such as its toggles.
let gpuInstance: GPU | null = null;
function gpu(): GPU {
  if (!gpuInstance) {
    Object.assign(globalThis, globals);
    process.env.XDG_RUNTIME_DIR ??= '/tmp';
    const extra = (process.env.GPUFRAME_DAWN_FLAGS ?? '').split(/\s+/).filter((f) => f !== '');
    gpuInstance = create(['disable-dawn-features=timestamp_quantization', ...extra]);
  }
  return gpuInstance;
}

function adapterIsSoftware(adapter: GPUAdapter): boolean {
  return isSoftwareInfo(adapterInfoOf(adapter));
}

/** All numeric limits of an adapter (or device), as a plain object. */
function limitsOf(limits: GPUSupportedLimits): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key in limits) {
    const v = (limits as unknown as Record<string, unknown>)[key];
    if (typeof v === 'number') out[key] = v;
  }
  return out;
}

/**
 * Opens the process's GPU with the adapter's maximum limits and the subgroups/timestamp-query
 * features when offered, and starts the checks of how its subgroups are laid out (subgroups.ts)
 * and whether its fma() is fused (fma.ts): GpuContext.checked. Null when there is no adapter, or
 * only a software one and `allowSoftware` is not set.
 */
export async function openGpu(options: { allowSoftware?: boolean } = {}): Promise<GpuContext | null> {
  const adapter = await gpu().requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) return null;
  const isSoftware = adapterIsSoftware(adapter);
  if (isSoftware && !options.allowSoftware) return null;
  const requiredFeatures = WANTED_FEATURES.filter((f) => adapter.features.has(f));
  const device = await adapter.requestDevice({
    requiredFeatures,
    requiredLimits: limitsOf(adapter.limits),
  });
  const traceDir = bufferTraceDir();
  if (traceDir) traceBufferCreation(device, traceDir);
  const ctx: GpuContext = {
    adapter,
    device,
    features: new Set(requiredFeatures),
    hasSubgroups: requiredFeatures.includes('subgroups'),
    subgroupLayout: UNCHECKED_LAYOUT,
    fusedFma: false,
    checked: Promise.resolve(),
    hasTimestamps: requiredFeatures.includes('timestamp-query'),
    isSoftware,
    lostReason: null,
    errors: [],
  };
  device.onuncapturederror = (ev) => { ctx.errors.push(ev.error.message); };
  void device.lost.then((info) => { ctx.lostReason = info.message || info.reason || 'device lost'; });
  // Not awaited here: a GPU worker reports ready without it (its warm-up waits for it, beside the
  // kernel compiles), so it stays off the start-up path.
  ctx.checked = Promise.all([
    checkSubgroupLayout(ctx).then((layout) => { ctx.subgroupLayout = layout; }),
    checkFusedFma(ctx).then((fused) => { ctx.fusedFma = fused; }),
  ]).then(() => undefined);
  return ctx;
}

export function describeAdapter(ctx: Pick<GpuContext, 'adapter'>): AdapterDescription {
  const { adapter } = ctx;
  return describeRaw(adapterInfoOf(adapter), limitsOf(adapter.limits), [...adapter.features]);
}

interface RawInfo { vendor: string; architecture: string; device: string; description: string; isFallbackAdapter?: boolean }

function adapterInfoOf(adapter: GPUAdapter): RawInfo {
  const i = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
  return { vendor: i.vendor, architecture: i.architecture, device: i.device, description: i.description, isFallbackAdapter: i.isFallbackAdapter };
}

function isSoftwareInfo(info: RawInfo): boolean {
  return info.isFallbackAdapter === true || SOFTWARE_NAMES.test(`${info.vendor} ${info.architecture} ${info.device} ${info.description}`);
}

function describeRaw(info: RawInfo, limits: Record<string, number>, features: string[]): AdapterDescription {
  return {
    name: info.description || info.device || 'unknown',
    vendor: info.vendor,
    architecture: info.architecture,
    // Dawn does not report its backend; on Linux it builds only Vulkan.
    backend: process.platform === 'linux' ? 'vulkan' : process.platform === 'darwin' ? 'metal' : 'd3d12',
    isSoftware: isSoftwareInfo(info),
    limits,
    features: [...features].sort(),
  };
}

// Child script: print what a (pinned) process sees, as raw adapter data. It runs in a separate
// process so that the caller needs no GPU and each probe gets its own device-select decision;
// it imports only the webgpu package so that it works from src/ (vitest) and dist/ alike.
const PROBE_SCRIPT = (webgpuUrl: string) => `
const { create, globals } = await import(${JSON.stringify(webgpuUrl)});
Object.assign(globalThis, globals);
const a = await create([]).requestAdapter({ powerPreference: 'high-performance' });
const limits = {};
if (a) for (const k in a.limits) if (typeof a.limits[k] === 'number') limits[k] = a.limits[k];
const i = a && a.info;
process.stdout.write(JSON.stringify(a ? { info: { vendor: i.vendor, architecture: i.architecture, device: i.device,
  description: i.description, isFallbackAdapter: i.isFallbackAdapter }, limits, features: [...a.features] } : null));
process.exit(0);`;

function probe(env: NodeJS.ProcessEnv): Promise<{ adapter: AdapterDescription | null; error?: string }> {
  const script = PROBE_SCRIPT(import.meta.resolve('webgpu'));
  return new Promise((resolve) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { env, timeout: 60_000 }, (err, stdout) => {
      if (err) return resolve({ adapter: null, error: String(err.message).split('\n')[0] });
      try {
        const raw = JSON.parse(stdout) as { info: RawInfo; limits: Record<string, number>; features: string[] } | null;
        resolve({ adapter: raw ? describeRaw(raw.info, raw.limits, raw.features) : null });
      } catch {
        resolve({ adapter: null, error: `unreadable probe output: ${stdout.slice(0, 200)}` });
      }
    });
  });
}

/**
 * The machine's GPUs and what a process pinned to each sees. Without any GPU: the software
 * adapter (flagged isSoftware, busId null) when there is one, else [].
 */
export async function listGpus(): Promise<GpuInfo[]> {
  const busIds = gpuBusIds();
  if (busIds.length === 0) {
    const seen = await probe({ ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' });
    return seen.adapter ? [{ busId: null, driPrime: null, ...seen }] : [];
  }
  // One probe process per GPU, all at once: each spends most of its time starting Node and Vulkan.
  return Promise.all(busIds.map(async (busId): Promise<GpuInfo> => {
    const driPrime = driPrimeOf(busId);
    return { busId, driPrime, ...(await probe(pinnedEnv(driPrime))) };
  }));
}
