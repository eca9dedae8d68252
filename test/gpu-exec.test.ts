// The GPU executor on lavapipe: GPU partial aggregates match the CPU ones (in process, with many
// GPU calls per partition), groupby through the CLI with --device gpu gives the same bytes as
// --device cpu, a killed GPU worker's task is retried, a lost device fails the run clearly, what
// Dawn prints in a worker stays off the command's stdout, and the device-select output that
// identifies a worker's GPU is parsed.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Batch } from '../src/engine/batch.js';
import { readCsvFile } from '../src/engine/io/csv/index.js';
import { finalizeAggregate, parseAggList, PartialAggregator, type AggregateSpec } from '../src/engine/ops/aggregate/index.js';
import { gpuPartialAggregate, gpuSupports } from '../src/engine/exec/gpu-aggregate.js';
import { parseDeviceSelect } from '../src/engine/exec/gpu-pool.js';
import { gpuWorkerFor, startGpuWorkersEarly } from '../src/engine/exec/gpu-worker-process.js';
import { driPrimeOf } from '../src/engine/gpu/pci.js';
import { ResidentCache } from '../src/engine/exec/gpu-resident.js';
import { skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';
import { gpuframe, shell } from './helpers/cli.js';
import { factCsv, tempDir } from './helpers/data.js';

const dir = tempDir('gpu-exec');
const facts = join(dir, 'facts.csv');
const GPU_AGGS = 'count(),count(i),count(ks),sum(i),mean(i),min(i),max(i),sum(f),mean(f),min(f),max(f),min(ts),max(ts)';

beforeAll(() => {
  factCsv(facts, { rows: 30_000, groups: 300, seed: 5, nullShare: 0.1 });
});

describe.skipIf(skipGpuTests)('GPU partial aggregates equal CPU ones', () => {
  let batch: Batch;
  beforeAll(async () => {
    batch = (await readCsvFile(facts)).batch;
  });
  afterEach(() => { delete process.env.GPUFRAME_GPU_MAX_ROWS; });

  for (const [keys, dropna] of [['ki', false], ['ki', true], ['ts', false], ['ks', false], ['ks,b', true], ['b', false]] as const) {
    it(`keys ${keys}${dropna ? ', dropna' : ''}, 4096 rows per GPU call`, async () => {
      process.env.GPUFRAME_GPU_MAX_ROWS = '4096';
      const spec: AggregateSpec = { keys: keys.split(','), aggs: parseAggList(GPU_AGGS), dropna };
      expect(gpuSupports(spec, batch.schema)).toBe(true);
      const cpu = new PartialAggregator(batch.schema, spec);
      cpu.add(batch);
      const expected = finalizeAggregate(cpu.finish());
      const got = finalizeAggregate(await gpuPartialAggregate(await testGpu(), [batch], batch.schema, spec));
      expect(got.length).toBe(expected.length);
      expect(got.schema).toEqual(expected.schema);
      got.columns.forEach((c, i) => expect(c, got.schema[i].name).toEqual(expected.columns[i]));
    });
  }

  it('says which aggregates have no GPU form', () => {
    const spec = (agg: string): AggregateSpec => ({ keys: ['ks'], aggs: parseAggList(agg), dropna: false });
    expect(gpuSupports(spec('var(f)'), batch.schema)).toBe(false);
    expect(gpuSupports(spec('nunique(i)'), batch.schema)).toBe(false);
    expect(gpuSupports(spec('min(ks)'), batch.schema)).toBe(false);
    expect(gpuSupports(spec('count(b),max(ts)'), batch.schema)).toBe(true);
  });
});

describe.skipIf(skipGpuTests)('groupby --device gpu through the CLI', () => {
  const run = async (name: string, args: string[], env: Record<string, string> = {}) => {
    const out = join(dir, `${name}.csv`);
    // GPU workers alone (--workers 0) so these tests see the GPU executor, not CPU backups racing it.
    const workers = args.includes('gpu') ? '0' : '2';
    const res = await gpuframe(['groupby', facts, ...args, '-o', out, '--blocksize', '256KB', '--workers', workers], { env });
    return { ...res, out: res.code === 0 ? readFileSync(out) : null };
  };

  it('same bytes as --device cpu: string, int and two-column keys; a CPU-only aggregate', async () => {
    for (const [by, aggs] of [['ks', GPU_AGGS], ['ki', GPU_AGGS], ['ks,b', `${GPU_AGGS},var(f),nunique(i)`]]) {
      const name = by.replace(',', '_');
      const gpu = await run(`${name}-gpu`, ['--by', by, '--agg', aggs, '--device', 'gpu']);
      const cpu = await run(`${name}-cpu`, ['--by', by, '--agg', aggs, '--device', 'cpu']);
      expect(gpu.stderr, by).not.toMatch(/warning|error/i);
      expect(gpu.code).toBe(0);
      expect(cpu.code).toBe(0);
      expect(gpu.out!.equals(cpu.out!), `output for --by ${by}`).toBe(true);
    }
  }, 60_000);

  it('--trace puts the GPU worker\'s start-up (process, device) on its row, before its first task', async () => {
    const trace = join(dir, 'gpu-trace.json');
    const res = await run('traced', ['--by', 'ki', '--agg', 'count()', '--device', 'gpu', '--trace', trace]);
    expect(res.code, res.stderr).toBe(0);
    const events: { name: string; ph: string; tid: number; ts: number; dur: number; args?: { name: string } }[] = JSON.parse(readFileSync(trace, 'utf8')).traceEvents;
    const tidOf = (name: string) => events.find((e) => e.ph === 'M' && e.args?.name === name)!.tid;
    const on = (tid: number) => events.filter((e) => e.ph === 'X' && e.tid === tid);
    const worker = on(tidOf('gpu-worker-0'));
    const [start, open] = ['start GPU worker (Node, modules)', 'open GPU device'].map((name) => worker.find((e) => e.name === name)!);
    const firstTask = worker.filter((e) => e.name.startsWith('groupby')).sort((a, b) => a.ts - b.ts)[0];
    expect(start.dur).toBeGreaterThan(0);
    expect(start.ts + start.dur).toBeLessThanOrEqual(open.ts + 1);
    expect(open.ts + open.dur).toBeLessThanOrEqual(firstTask.ts + 1);
    // The parent's row begins with its own start (time 0 is the parent process's start).
    expect(on(tidOf('parent')).find((e) => e.name.startsWith('start gpuframe'))!.ts).toBe(0);
  }, 30_000);

  it('a GPU worker started before oclif loads is adopted by the run; a run that fails first still exits at once', async () => {
    const trace = join(dir, 'early-trace.json');
    const env = { GPUFRAME_EARLY_GPU_WORKERS: '1' };
    const early = await run('early', ['--by', 'ki', '--agg', GPU_AGGS, '--device', 'gpu', '--trace', trace], env);
    expect(early.code, early.stderr).toBe(0);
    const cpu = await run('early-ref', ['--by', 'ki', '--agg', GPU_AGGS, '--device', 'cpu']);
    expect(early.out!.equals(cpu.out!)).toBe(true);
    const events: { name: string; ph: string; ts: number; dur: number }[] = JSON.parse(readFileSync(trace, 'utf8')).traceEvents;
    const slice = (prefix: string) => events.find((e) => e.ph === 'X' && e.name.startsWith(prefix))!;
    // The worker's process started while the parent was still loading the CLI and building the plan.
    const parentStart = slice('start gpuframe');
    expect(slice('start GPU worker').ts).toBeLessThan(parentStart.ts + parentStart.dur);
    // Only one worker: the pool adopted the early one rather than starting another.
    expect(events.filter((e) => e.ph === 'X' && e.name.startsWith('open GPU device')).length).toBe(1);
    const failed = await run('early-fails', ['--by', 'nope', '--agg', 'count()', '--device', 'gpu'], env);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/unknown key column 'nope'/);
  }, 30_000);

  it('guessed chunk cuts that land inside quoted line breaks: the GPU path refuses the chunk, the run replans, same bytes', async () => {
    // Quoted keys with line breaks, one every few records, and 300-byte chunks: many guesses
    // (the next line break after each grid point) fall inside quotes. GPUFRAME_PLAN_THREADS=2
    // makes this small file count as large (cut-points.ts worthGuessing).
    const path = join(dir, 'quoted-breaks.csv');
    const rows = Array.from({ length: 3000 }, (_, i) => `${i % 7 === 0 ? `"k${i % 11}\nline"` : `k${i % 11}`},${i},${(i % 13) * 0.5}`);
    writeFileSync(path, 'ks,i,f\n' + rows.join('\n') + '\n');
    const out = (name: string) => join(dir, `${name}.csv`);
    const args = (name: string, device: string) => ['groupby', path, '--by', 'ks', '--agg', 'count(),sum(i),max(f)', '--blocksize', '300B', '--device', device, '--workers', device === 'gpu' ? '0' : '2', '-o', out(name)];
    const trace = join(dir, 'quoted-gpu.json');
    const gpu = await gpuframe([...args('quoted-gpu', 'gpu'), '--trace', trace], { env: { GPUFRAME_PLAN_THREADS: '2' } });
    const cpu = await gpuframe(args('quoted-cpu', 'cpu'));
    expect(gpu.code, gpu.stderr).toBe(0);
    expect(cpu.code, cpu.stderr).toBe(0);
    expect(readFileSync(out('quoted-gpu')).equals(readFileSync(out('quoted-cpu')))).toBe(true);
    // Planned twice: on guessed cuts, then (after a chunk refused to end inside quotes) on exact ones.
    const names = (JSON.parse(readFileSync(trace, 'utf8')).traceEvents as { name: string }[]).map((e) => e.name);
    expect(names.filter((n) => n.startsWith('plan chunks')).length).toBe(2);
  }, 60_000);

  it('a worker started early is adopted for the same GPU however its bus id is written, and only with the same settings', () => {
    const gpu = (busId: string) => ({ busId, driPrime: driPrimeOf(busId), adapter: null });
    // As /proc/driver/nvidia/gpus writes it (the early guess), then as nvidia-smi does (the run).
    const [early] = startGpuWorkersEarly([gpu('0000:06:00.0')], false);
    const adopted = gpuWorkerFor(gpu('00000000:06:00.0'), false);
    const otherGpu = gpuWorkerFor(gpu('0000:07:00.0'), false);
    const [early2] = startGpuWorkersEarly([gpu('0000:08:00.0')], false);
    const otherSettings = gpuWorkerFor(gpu('0000:08:00.0'), true);
    try {
      expect(adopted).toBe(early);
      expect(otherGpu).not.toBe(early);
      expect(otherSettings).not.toBe(early2);
    } finally {
      for (const w of [early, otherGpu, early2, otherSettings]) w.child.kill('SIGKILL');
    }
  });

  it('a GPU worker killed mid-run has its task retried; the output does not change', async () => {
    const marker = join(dir, 'killed.marker');
    const args = ['--by', 'ki', '--agg', GPU_AGGS, '--dropna'];
    const killed = await run('killed', [...args, '--device', 'gpu'], { GPUFRAME_FAULT: 'kill-worker@2', GPUFRAME_FAULT_MARKER: marker });
    expect(existsSync(marker)).toBe(true);
    expect(killed.code).toBe(0);
    const cpu = await run('killed-ref', [...args, '--device', 'cpu']);
    expect(killed.out!.equals(cpu.out!)).toBe(true);
  }, 40_000);

  it('a lost device with no other GPU fails the run and says why', async () => {
    const res = await run('lost', ['--by', 'ki', '--agg', 'count()', '--device', 'gpu'], { GPUFRAME_GPU_FAULT: 'lose-device@1' });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/no GPU is left .*device lost/);
  }, 30_000);

  it('what Dawn prints in a GPU worker (a shader compilation warning: dawn.node writes it to stdout) reaches stderr, never the output on stdout', async () => {
    const args = ['groupby', facts, '--by', 'ki', '--agg', 'count(),sum(i)', '--format', 'csv', '--blocksize', '256KB'];
    const warned = await gpuframe([...args, '--device', 'gpu', '--workers', '0'], { env: { GPUFRAME_GPU_FAULT: 'shader-warning@1' } });
    const cpu = await gpuframe([...args, '--device', 'cpu', '--workers', '2']);
    expect(warned.code).toBe(0);
    expect(warned.stderr).toMatch(/Compilation log for .*\n[\s\S]*unrecognized diagnostic rule 'chromium.no_such_rule'/);
    expect(cpu.code, cpu.stderr).toBe(0);
    expect(warned.stdoutBytes.equals(cpu.stdoutBytes)).toBe(true);
  }, 30_000);

  it('--device gpu without any Vulkan driver: exit 1 naming what is missing; a bad --gpus is a usage error', async () => {
    const none = await run('none', ['--by', 'ki', '--agg', 'count()', '--device', 'gpu'], { VK_ICD_FILENAMES: join(dir, 'none.json'), VK_DRIVER_FILES: join(dir, 'none.json') });
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/--device gpu: no usable GPU: WebGPU found no adapter/);
    const bad = await run('bad', ['--by', 'ki', '--agg', 'count()', '--device', 'gpu', '--gpus', '7']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/there is no GPU 7/);
  }, 30_000);
});

describe.skipIf(skipGpuTests)('read-csv | merge | groupby --device gpu', () => {
  // Dimensions keyed by the string key (quoted keys included) and by the int key: most keys once,
  // one twice (a left row then matches two build rows), some absent, one null key row.
  const dimension = (on: 'ks' | 'ki') => {
    const path = join(dir, `dim-${on}.csv`);
    const key = (g: number) => (on === 'ks' ? `"key_${g}${g % 7 === 0 ? ' ""q"", x' : ''}"` : String(g - 150));
    const rows = Array.from({ length: 260 }, (_, g) => `${key(g)},r${g % 6},${(g * 37.25) % 1000},${g * 1000003}`);
    rows.push(`${key(3)},r9,12.5,7`, ',r0,1,1');
    writeFileSync(path, [`${on},region,elev,m`, ...rows].join('\n') + '\n');
    return path;
  };
  const AGGS = 'count(),count(i),sum(i),mean(f),min(f),max(i),sum(elev),mean(elev),max(elev),sum(m),min(region)';

  it('same bytes as --device cpu, with the fact chunks parsed and grouped on the GPU (inner and left joins, string and int keys)', async () => {
    // The last case groups by a bool column, which the GPU CSV path does not parse: its chunks are
    // read on the worker's CPU and aggregated on the GPU (the report says so), with the same bytes.
    for (const [on, how, by] of [['ks', 'inner', 'region'], ['ki', 'left', 'region'], ['ks', 'left', 'ks'], ['ks', 'inner', 'region,b']] as const) {
      const readOnCpu = by.includes(',b');
      const outs = await Promise.all(['gpu', 'cpu'].map(async (device) => {
        const out = join(dir, `merge-${on}-${how}-${device}.csv`);
        const run = `--device ${device} --workers ${device === 'gpu' ? 0 : 2} --blocksize 256KB`;
        const res = await shell(`gpuframe read-csv '${facts}' | gpuframe merge - '${dimension(on)}' --on ${on} --how ${how} | gpuframe groupby --by ${by} --agg '${AGGS}' -o '${out}' ${run}`,
          { env: { GPUFRAME_GPU_CSV_REPORT: '1' } });
        if (readOnCpu && device === 'gpu') expect(res.stderr).toMatch(/was read on the CPU: column b \(bool\)/);
        else expect(res.stderr, `${on} ${how} ${device}`).not.toMatch(/warning|error/i);
        expect(res.code).toBe(0);
        return readFileSync(out);
      }));
      expect(outs[0].equals(outs[1]), `--on ${on} --how ${how} --by ${by}`).toBe(true);
      expect(outs[0].toString().split('\n').length).toBeGreaterThan(5);
    }
  }, 90_000);
});

describe('identifying and caching', () => {
  it('parses the device-select layer output', () => {
    const h200 = ['selectable devices:', '  GPU 0: 10de:2335 "NVIDIA H200" discrete GPU 0000:06:00.0', '  GPU 1: 10de:2335 "NVIDIA H200" discrete GPU 0000:07:00.0',
      'device-select: device_select_find_dri_prime_tag_default selected 1'];
    expect(parseDeviceSelect(h200)).toEqual({ layer: true, selected: '10de:2335 "NVIDIA H200" discrete GPU 0000:07:00.0' });
    expect(parseDeviceSelect(['selectable devices:', '  GPU 0: 10005:0 "llvmpipe (LLVM 15.0.6, 256 bits)" CPU'])).toEqual({ layer: true, selected: '10005:0 "llvmpipe (LLVM 15.0.6, 256 bits)" CPU' });
    expect(parseDeviceSelect(['some other line'])).toEqual({ layer: false, selected: null });
  });

  it('the resident cache evicts least recently used entries past its budget', () => {
    const released: string[] = [];
    const entry = (name: string, bytes: number) => ({ bytes, release: () => released.push(name) });
    const cache = new ResidentCache(100);
    cache.put('a', entry('a', 40));
    cache.put('b', entry('b', 40));
    expect(cache.get('a')).toBeDefined(); // a is now the most recent
    cache.put('c', entry('c', 40));
    expect(released).toEqual(['b']);
    expect(cache.bytesUsed).toBe(80);
    expect(cache.put('huge', entry('huge', 200))).toBe(false);
    cache.clear();
    expect(released.sort()).toEqual(['a', 'b', 'c', 'huge']);
  });
});
