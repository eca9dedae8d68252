// CSV chunks parsed and grouped on the GPU (lavapipe): the partial aggregate of every chunk of
// random CSV files (quoted keys with commas, newlines and doubled quotes, null texts, CRLF, a
// last record without newline; float min/max over -0 and 0) equals the CPU reader +
// PartialAggregator's (random files of every shape: fuzz-csv-gpu-aggregate); chunks the GPU path
// must not take (ragged, blank or malformed records, values it does not parse, hash collisions
// forced by the test hook) say so and are left to the CPU; and groupby --device gpu through the
// CLI writes the same bytes as --device cpu.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { valueAt } from '../src/engine/batch.js';
import { readCsvChunk, type CsvOptions } from '../src/engine/io/csv/index.js';
import { parseAggList, type AggregateSpec } from '../src/engine/ops/aggregate/index.js';
import type { CsvSource } from '../src/engine/exec/gpu-csv-aggregate.js';
import { skipGpuTests } from '../src/engine/gpu/test-gpu.js';
import { gpuframe } from './helpers/cli.js';
import { rng, tempDir } from './helpers/data.js';
import { cpuPartial, expectSamePartial, gpuOutcome, sourcesOf } from './helpers/gpu-csv.js';

const dir = tempDir('gpu-csv');
const AGGS = 'count(),count(s),count(i),sum(i),mean(i),min(i),max(i),sum(f),mean(f),min(f),max(f)';

/** Columns ks (string key), ki (int key), i (int64), f (float64), s (string); `eol` ends lines. */
function randomCsv(path: string, rows: number, seed: number, eol: '\n' | '\r\n', groups = 40): void {
  const r = rng(seed);
  const keyText = (g: number) => [`k${g}`, `"k${g}, with comma"`, `"k${g} ""quoted"""`, `"k${g}\nline"`, `ключ${g}`][g % 5];
  const lines = ['ks,ki,i,f,s'];
  for (let n = 0; n < rows; n++) {
    const g = Math.floor(groups * r() ** 2);
    const ks = r() < 0.05 ? '' : r() < 0.03 ? 'NA' : r() < 0.5 && g % 5 === 0 ? `"k${g}"` : keyText(g);
    const ki = r() < 0.05 ? 'null' : String(g * 1_000_003 - 20_000_000);
    const i = r() < 0.05 ? '' : String(BigInt(Math.floor((r() - 0.5) * 2 ** 44)) * 1000n);
    const f = r() < 0.05 ? 'NULL' : ((r() - 0.4) * 10 ** Math.floor(r() * 8 - 3)).toPrecision(1 + Math.floor(r() * 16));
    const s = r() < 0.1 ? '' : r() < 0.5 ? '"x,y"' : 'text';
    lines.push([ks, ki, i, f, s].join(','));
  }
  // The file's last record has no line break.
  writeFileSync(path, lines.join(eol));
}

let badChunks = 0;
/** A source whose layout comes from a good file and whose one chunk is all of `text`. */
async function chunkOf(text: string, opts: Partial<CsvOptions> = {}): Promise<CsvSource> {
  const good = join(dir, 'good.csv');
  writeFileSync(good, 'ks,i,f\na,1,2.5\n');
  const [source] = await sourcesOf(good, 1 << 20, { dtypes: { ks: 'string', i: 'int64', f: 'float64' }, ...opts });
  const path = join(dir, `chunk-${badChunks++}.csv`);
  writeFileSync(path, text);
  return { ...source, chunk: { path, displayName: path, start: 0, end: Buffer.byteLength(text), firstLine: 1, lineOrigin: { offset: 0, line: 1 } } };
}

describe.skipIf(skipGpuTests)('GPU CSV partial aggregates equal the CPU ones', () => {
  const lf = join(dir, 'lf.csv');
  const crlf = join(dir, 'crlf.csv');
  beforeAll(() => {
    randomCsv(lf, 6000, 3, '\n');
    randomCsv(crlf, 6000, 4, '\r\n');
  });

  const variants = [['lf', 'ks', false], ['crlf', 'ks', true], ['lf', 'ki', false], ['crlf', 'ki', true], ['lf', 'ks,ki', true], ['crlf', 'ki,s,ks', false]] as const;
  for (const [file, key, dropna] of variants) {
    it(`${file} file, keys ${key}${dropna ? ', dropna' : ''}: every chunk`, async () => {
      const spec: AggregateSpec = { keys: key.split(','), aggs: parseAggList(AGGS), dropna };
      const sources = await sourcesOf(file === 'lf' ? lf : crlf, 40_000);
      expect(sources.length).toBeGreaterThan(3);
      for (const source of sources) {
        const out = await gpuOutcome(source, spec);
        if (!('partial' in out)) throw new Error(`chunk at ${source.chunk.start} fell back: ${out.fallback}`);
        const want = cpuPartial(source, spec).partial;
        expect(out.rows).toBe(readCsvChunk(source.chunk, source.layout, source.options, source.columns).length);
        expectSamePartial(out.partial, want);
      }
    }, 60_000);
  }

  // A column's sum and its min/max are computed and read back only when asked for (ColumnNeeds):
  // each shape of what is asked, on every chunk, against the CPU. (NaN and infinities, whose flags
  // a float max needs, are not parsed on this path: such chunks go to the CPU reader, below.)
  for (const aggs of ['max(f)', 'min(f),count(f)', 'sum(f),count(i)', 'mean(f),min(i)', 'max(i),count(s),sum(f)', 'count(f),count(i)']) {
    it(`only ${aggs}: every chunk`, async () => {
      const spec: AggregateSpec = { keys: ['ks'], aggs: parseAggList(aggs), dropna: false };
      for (const source of await sourcesOf(lf, 40_000)) {
        const out = await gpuOutcome(source, spec);
        if (!('partial' in out)) throw new Error(`chunk at ${source.chunk.start} fell back: ${out.fallback}`);
        expectSamePartial(out.partial, cpuPartial(source, spec).partial);
      }
    }, 60_000);
  }

  it('reads tab-separated chunks (another delimiter)', async () => {
    const path = join(dir, 'tabs.tsv');
    writeFileSync(path, 'ks\ti\tf\na,b\t1\t2.5\n"x\ty"\t-3\t\na,b\t4\t1e3\r\n"x\ty"\t\t0.5');
    const spec: AggregateSpec = { keys: ['ks'], aggs: parseAggList('count(),sum(i),sum(f),max(f)'), dropna: false };
    const [source] = await sourcesOf(path, 1 << 20, { delimiter: '\t', dtypes: { i: 'int64', f: 'float64' } });
    const out = await gpuOutcome(source, spec);
    if (!('partial' in out)) throw new Error(out.fallback);
    expectSamePartial(out.partial, cpuPartial(source, spec).partial);
    expect(out.partial.groups).toBe(2);
  });

  it('honours --null-values (an empty text field is then a value)', async () => {
    const path = join(dir, 'nulls.csv');
    writeFileSync(path, 'ks,i\nx,1\n-,2\n,3\nx,-\n');
    const spec: AggregateSpec = { keys: ['ks'], aggs: parseAggList('count(),count(i),sum(i)'), dropna: false };
    const [source] = await sourcesOf(path, 1 << 20, { nullValues: ['-'] });
    const out = await gpuOutcome(source, spec);
    if (!('partial' in out)) throw new Error(out.fallback);
    expectSamePartial(out.partial, cpuPartial(source, spec).partial);
    expect(out.partial.groups).toBe(3); // 'x', null ('-'), ''
  });

  it('float min/max over -0 and 0 keep the group\'s first zero, as the CPU does (fuzz-csv-gpu-aggregate, seed 171)', async () => {
    const spec: AggregateSpec = { keys: ['ks'], aggs: parseAggList('min(f),max(f),sum(f)'), dropna: false };
    const small = await chunkOf('a,1,0\na,2,-0\nb,3,-0.0\nb,4,0\nc,5,-0\nc,6,1\nd,7,0e5\nd,8,-1\ne,9,-0\ne,10,-0\n');
    const out = await gpuOutcome(small, spec);
    if (!('partial' in out)) throw new Error(out.fallback);
    expectSamePartial(out.partial, cpuPartial(small, spec).partial);
    // Many groups and rows, so zeros go through the workgroup caches and past them.
    const r = rng(25);
    const rows = Array.from({ length: 20_000 }, (_, i) => `g${Math.floor(r() * 3000)},${i},${r() < 0.9 ? (r() < 0.5 ? '-0' : '0') : r() < 0.5 ? '-1e-20' : '2.5'}\n`);
    const many = await chunkOf(rows.join(''));
    const out2 = await gpuOutcome(many, spec);
    if (!('partial' in out2)) throw new Error(out2.fallback);
    expectSamePartial(out2.partial, cpuPartial(many, spec).partial);
  });
});

describe.skipIf(skipGpuTests)('chunks the GPU path leaves to the CPU reader', () => {
  const spec: AggregateSpec = { keys: ['ks'], aggs: parseAggList('count(),sum(i),sum(f)'), dropna: false };
  const cases: [string, string][] = [
    ['a ragged record', 'a,1,2\nb,3\n'],
    ['a blank line', 'a,1,2\n\nb,3,4\n'],
    ['a quote inside an unquoted field', 'a"b,1,2\n'],
    ['text after a closing quote', '"a"b,1,2\n'],
    ['an unterminated quoted field', 'a,1,2\n"b,3,4\n'],
    ['an int with spaces', 'a, 1,2\n'],
    ['inf as a float', 'a,1,inf\n'],
    ['a quoted number with doubled quotes', 'a,"1""",2\n'],
    ['an int with 19 digits', 'a,1234567890123456789,2\n'],
  ];
  for (const [what, text] of cases) {
    it(what, async () => {
      expect(await gpuOutcome(await chunkOf(text), spec)).toHaveProperty('fallback');
    });
  }

  it('(the same kind of chunk without such records does take the GPU path)', async () => {
    expect(await gpuOutcome(await chunkOf('a,1,2\n"b ""q""",3,4e-3\r\n,"5",-.5\n'), spec)).toHaveProperty('partial');
  });

  it('an empty int field that is not a null text', async () => {
    const source = await chunkOf('x,1,2\ny,,3\n', { nullValues: ['-', 'NA'] });
    expect(await gpuOutcome(source, spec)).toHaveProperty('fallback');
    expect(() => readCsvChunk(source.chunk, source.layout, source.options, source.columns)).toThrow(/cannot parse '' as int64/);
  });

  it('hash collisions (forced by masking the hash) are found; one distinct key per hash is still exact', async () => {
    const path = join(dir, 'collide.csv');
    randomCsv(path, 3000, 9, '\n');
    const full: AggregateSpec = { keys: ['ks'], aggs: parseAggList(AGGS), dropna: false };
    const [source] = await sourcesOf(path, 1 << 30);
    expect(await gpuOutcome(source, full, { hashMask: 0 })).toEqual({ fallback: 'key hash collision' });
    expect(await gpuOutcome(source, full, { hashMask: 0x3 })).toEqual({ fallback: 'key hash collision' });
    // One key (and nulls, which --dropna leaves out) in the whole file: every row hashes alike
    // and nothing collides. Null keys are a group of their own otherwise, so they collide.
    const single = join(dir, 'single.csv');
    writeFileSync(single, 'ks,i\n"a ""b"", c",1\nNA,2\n"a ""b"", c",3\n,4\n');
    const [one] = await sourcesOf(single, 1 << 30);
    const spec: AggregateSpec = { keys: ['ks'], aggs: parseAggList('count(),sum(i)'), dropna: true };
    const out = await gpuOutcome(one, spec, { hashMask: 0 });
    if (!('partial' in out)) throw new Error(out.fallback);
    expectSamePartial(out.partial, cpuPartial(one, spec).partial);
    expect(out.partial.groups).toBe(1);
    expect(valueAt(out.partial.keys[0], 0)).toBe('a "b", c');
    expect(await gpuOutcome(one, { ...spec, dropna: false }, { hashMask: 0 })).toEqual({ fallback: 'key hash collision' });
  });

  it('more groups than the first key table holds (every row its own group): the larger table\'s partial equals the CPU\'s; a collision in it is still found', async () => {
    const spec: AggregateSpec = { keys: ['ks'], aggs: parseAggList('count(),sum(i),mean(f),max(f)'), dropna: false };
    // A chunk of one group first, so that the next chunk's first table is the smallest (2048 slots).
    const small = await chunkOf('a,1,2\n');
    expect(await gpuOutcome(small, spec)).toHaveProperty('partial');
    const rows = Array.from({ length: 6000 }, (_, r) => `"key ${r}, ""${r % 7}""",${r * 3 - 9000},${(r * 0.25).toFixed(2)}\n`).join('');
    const many = await chunkOf(rows);
    for (const keys of [['ks'], ['i'], ['ks', 'i']]) {
      const out = await gpuOutcome(many, { ...spec, keys });
      if (!('partial' in out)) throw new Error(out.fallback);
      expect(out.partial.groups, keys.join(',')).toBe(6000);
      expectSamePartial(out.partial, cpuPartial(many, { ...spec, keys }).partial);
      await gpuOutcome(small, spec);
    }
    expect(await gpuOutcome(many, spec, { hashMask: 0xfff })).toEqual({ fallback: 'key hash collision' });
  });
});

describe.skipIf(skipGpuTests)('groupby --device gpu over CSV through the CLI', () => {
  const path = join(dir, 'cli.csv');
  beforeAll(() => randomCsv(path, 20_000, 21, '\r\n', 500));
  const run = async (by: string, device: string, env: Record<string, string> = {}) => {
    const out = join(dir, `cli-${by.replace(',', '_')}-${device}.csv`);
    // GPU workers alone (--workers 0): with CPU workers beside them, a CPU backup copy may win
    // the race for a chunk and hide what the GPU path did.
    const workers = device === 'gpu' ? '0' : '2';
    const res = await gpuframe(['groupby', path, '--by', by, '--agg', AGGS, '--device', device, '--blocksize', '128KB', '--workers', workers, '-o', out], { env });
    expect(res.code, res.stderr).toBe(0);
    return { stderr: res.stderr, bytes: readFileSync(out) };
  };

  it('writes the same bytes as --device cpu (string, int and two keys; CRLF), every chunk parsed on the GPU', async () => {
    for (const by of ['ks', 'ki', 'ks,ki']) {
      const gpu = await run(by, 'gpu', { GPUFRAME_GPU_CSV_REPORT: '1' });
      const cpu = await run(by, 'cpu');
      expect(gpu.stderr, `--by ${by}`).not.toMatch(/warning|error|read on the CPU/i);
      expect(gpu.bytes.equals(cpu.bytes), `output for --by ${by}`).toBe(true);
    }
  }, 60_000);

  it('chunks with forced hash collisions are read on the CPU; the bytes do not change', async () => {
    const gpu = await run('ks', 'gpu', { GPUFRAME_GPU_CSV_REPORT: '1', GPUFRAME_GPU_KEY_HASH_MASK: '3' });
    expect(gpu.stderr).toMatch(/read on the CPU: key hash collision/);
    expect(gpu.bytes.equals((await run('ks', 'cpu')).bytes)).toBe(true);
  }, 60_000);
});
