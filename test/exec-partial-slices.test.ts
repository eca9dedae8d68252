// A groupby combined in key ranges by the workers (partial-slices.ts) against one merge in the
// parent: the same bytes for any number of ranges, slice sizes and switch points; and through the
// CLI, the same output as one process and as DuckDB when the workers cut their partials themselves.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { columnFromValues, concatBatches, sliceBatch, type Batch, type DType } from '../src/engine/batch.js';
import { finalizeAggregate, parseAggList, PartialAggregator, PartialMerger, type AggregateSpec, type PartialAggregate } from '../src/engine/ops/aggregate/index.js';
import { readAggregateRange, SliceCombine, writePartialSlices } from '../src/engine/exec/partial-slices.js';
import { gpuframe } from './helpers/cli.js';
import { normaliseCell } from './helpers/compare.js';
import { rng, tempDir } from './helpers/data.js';
import { query } from './helpers/duckdb.js';

const dir = tempDir('partial-slices');

function makeBatch(fields: [string, DType, unknown[]][]): Batch {
  return { schema: fields.map(([name, type]) => ({ name, type })), length: fields[0][2].length, columns: fields.map(([, type, values]) => columnFromValues(type, values)) };
}

/** Partials of `batch` cut into `blocks` blocks, in order. */
function partialsOf(batch: Batch, spec: AggregateSpec, blocks: number): PartialAggregate[] {
  const rows = Math.ceil(batch.length / blocks);
  const out: PartialAggregate[] = [];
  for (let start = 0; start < batch.length; start += rows) {
    const agg = new PartialAggregator(batch.schema, spec);
    agg.add(sliceBatch(batch, start, Math.min(batch.length, start + rows)));
    out.push(agg.finish());
  }
  return out;
}

function oneMerge(partials: PartialAggregate[]): Batch {
  const m = new PartialMerger();
  for (const p of partials) m.add(p);
  return finalizeAggregate(m.result()!);
}

/** The ranged combine: the first `mergedFirst` partials merged (as the parent does before it switches), then slices. */
function rangedCombine(partials: PartialAggregate[], mergedFirst: number, ranges: number, sliceGroups: number): Batch {
  const merger = new PartialMerger();
  for (const p of partials.slice(0, mergedFirst)) merger.add(p);
  const schema = partials[0].schema;
  const combine = new SliceCombine(schema, dir);
  const held = merger.result();
  if (held) combine.add(writePartialSlices(held, dir, sliceGroups));
  for (const p of partials.slice(mergedFirst)) combine.add(writePartialSlices(p, dir, sliceGroups));
  const fragments = combine.fragments(ranges);
  expect(fragments.length).toBeLessThanOrEqual(ranges);
  return concatBatches(schema, fragments.map((f) => readAggregateRange(f.source as Parameters<typeof readAggregateRange>[0])));
}

function bytesOf(b: Batch): string {
  return JSON.stringify(b.columns.map((c) => ({ ...c, values: 'values' in c ? Buffer.from(c.values.buffer, c.values.byteOffset, c.values.byteLength).toString('hex') : undefined,
    data: c.type === 'string' ? Buffer.from(c.data).toString('hex') : undefined, offsets: c.type === 'string' ? Array.from(c.offsets) : undefined, valid: c.valid && Array.from(c.valid) })));
}

describe('groupby combined in key ranges', () => {
  const r = rng(7);
  const n = 30_000;
  // Keys that rise through the input (each block its own key range: the case a sample of the first
  // partial would split badly), keys spread over the whole space, and two-column keys with nulls.
  const rising = Array.from({ length: n }, (_, i) => Math.floor(i / 2));
  const spread = Array.from({ length: n }, () => Math.floor(r() * 5000));
  const words = ['', 'a', 'b', 'ab', 'ba', 'zz', 'é'];
  const s = Array.from({ length: n }, () => (r() < 0.05 ? null : words[Math.floor(r() * words.length)] + Math.floor(r() * 300)));
  const t = Array.from({ length: n }, () => (r() < 0.05 ? null : Math.floor(r() * 40) - 20));
  // -0 and 0 in the same groups: min/max keep a group's first zero, so the merge order shows. As a
  // key: -0 and 0 one group, NaN one group, nulls last.
  const f = Array.from({ length: n }, () => (r() < 0.1 ? (r() < 0.5 ? -0 : 0) : r() < 0.05 ? null : r() < 0.02 ? NaN : (r() - 0.5) * 10 ** Math.floor(r() * 30 - 15)));
  const v = Array.from({ length: n }, () => BigInt(Math.floor((r() - 0.5) * 2 ** 52)) * 100n); // sums past 2^53, within int64
  const batch = makeBatch([['rising', 'int64', rising], ['spread', 'int64', spread], ['s', 'string', s], ['t', 'int64', t], ['f', 'float64', f], ['v', 'int64', v]]);
  const aggs = 'count(),sum(v),sum(f),mean(f),min(f),max(f),var(f),nunique(s),nunique(f),min(s),max(s)';

  for (const keys of [['rising'], ['spread'], ['s', 't'], ['f']]) {
    it(`keys ${keys.join(',')}: the bytes of one merge, for any ranges, slice sizes and switch points`, () => {
      const spec: AggregateSpec = { keys, aggs: parseAggList(aggs), dropna: false };
      const partials = partialsOf(batch, spec, 7);
      const want = bytesOf(oneMerge(partials));
      for (const [mergedFirst, ranges, sliceGroups] of [[0, 1, 1024], [0, 5, 100], [2, 16, 257], [1, 64, 1], [7, 3, 5000]]) {
        expect(bytesOf(rangedCombine(partials, mergedFirst, ranges, sliceGroups)), `${mergedFirst} merged first, ${ranges} ranges, slices of ${sliceGroups}`).toBe(want);
      }
    });
  }
});

describe('groupby with partials the workers cut into slices (CLI)', () => {
  it('a group per key over 300k keys: the output of one process and of DuckDB', async () => {
    // Over 2^18 groups in a partial: the workers write slices; rising keys in two blocks, then spread keys.
    // From Arrow: over CSV, a key sample this distinct sends the rows to an exchange instead (next test).
    const file = join(dir, 'many.csv');
    const lines = ['k,s,v'];
    for (let i = 0; i < 600_000; i++) {
      const k = i < 400_000 ? i : (i * 7919) % 400_000;
      lines.push(`${k},${i % 3 === 0 ? '' : `s${i % 11}`},${(i % 1000) - 500}`);
    }
    writeFileSync(file, lines.join('\n') + '\n');
    const arrow = join(dir, 'many.arrow');
    expect((await gpuframe(['read-csv', file, '-o', arrow])).code).toBe(0);
    const run = async (out: string, workers: string) => {
      const res = await gpuframe(['groupby', arrow, '--by', 'k', '--agg', 'count(),sum(v),nunique(s),max(s)', '-o', join(dir, out), '--workers', workers, '--blocksize', '4MB', '--trace', join(dir, `${out}.trace.json`)]);
      expect(res.code, res.stderr).toBe(0);
      return readFileSync(join(dir, out), 'utf8');
    };
    const [two, none] = [await run('two.csv', '2'), await run('none.csv', '0')];
    expect(readFileSync(join(dir, 'two.csv.trace.json'), 'utf8')).toContain('(aggregate-range)');
    expect(two).toBe(none);
    const ref = await query(`select k, count(*), sum(v), count(distinct s), max(s) from read_csv('${file}') group by k order by k`);
    const ours = two.trim().split('\n').slice(1).map((line) => line.split(','));
    expect(ours.length).toBe(ref.length);
    for (const i of [0, 1, 12345, 199_999, 200_000, 399_999]) {
      expect(ours[i].map((c) => (c === '' ? null : c))).toEqual(ref[i].map((c) => { const x = normaliseCell(c); return x === null ? null : String(x); }));
    }
  });
});

describe('groupby with about a group per row: rows exchanged by key range (CLI)', () => {
  // Keys nearly all distinct in every partition: the partitions cut their rows by key range and
  // each range is aggregated once (row-exchange.ts). The bytes must not depend on the workers, the
  // block size (so the ranges), or whether the exchange ran at all (--workers 0 and 1 never do).
  const file = join(dir, 'distinct.csv');
  const r = rng(17);
  const lines = ['id,name,x,y'];
  for (let i = 0; i < 120_000; i++) {
    const id = r() < 0.01 ? '' : String(Math.floor(r() * 2_000_000) - 1_000_000);
    const name = r() < 0.02 ? '' : `n${Math.floor(r() * 40)}`;
    lines.push(`${id},${name},${Math.floor(r() * 1e6) - 5e5},${(r() * 1000 - 500).toFixed(3)}`);
  }
  writeFileSync(file, lines.join('\n') + '\n');
  const aggs = 'count(),sum(x),mean(y),min(y),max(x),var(y),nunique(name),max(name)';

  it('the same bytes for any workers and block size, against DuckDB; dropna too', async () => {
    const run = async (out: string, args: string[]) => {
      const res = await gpuframe(['groupby', file, '--by', 'id,name', '--agg', aggs, '-o', join(dir, out), '--trace', join(dir, `${out}.trace.json`), ...args]);
      expect(res.code, res.stderr).toBe(0);
      return readFileSync(join(dir, out), 'utf8');
    };
    const base = await run('x-none.csv', ['--workers', '0']);
    for (const [name, args] of [['x-two', ['--workers', '2', '--blocksize', '256KB']], ['x-three', ['--workers', '3', '--blocksize', '600KB']]] as const) {
      expect(await run(`${name}.csv`, [...args])).toBe(base);
      expect(readFileSync(join(dir, `${name}.csv.trace.json`), 'utf8')).toContain('(rows-range)');
    }
    const ref = await query(`select id, name, count(*), sum(x), avg(y), min(y), max(x), var_samp(y), count(distinct name), max(name)
      from read_csv('${file}', types={'id': 'BIGINT'}) group by id, name order by id nulls last, name nulls last`);
    const ours = base.trim().split('\n').slice(1).map((line) => line.split(','));
    expect(ours.length).toBe(ref.length);
    for (let i = 0; i < ref.length; i += 997) {
      const want = ref[i].map((c) => { const x = normaliseCell(c); return x === null ? null : x; });
      ours[i].forEach((cell, c) => {
        const w = want[c];
        if (typeof w === 'number' && !Number.isInteger(w)) expect(Math.abs(Number(cell) - w)).toBeLessThanOrEqual(1e-12 * Math.abs(w));
        else expect(cell === '' ? null : cell).toBe(w === null ? null : String(w));
      });
    }
    const dropped = await run('x-dropna.csv', ['--workers', '2', '--blocksize', '256KB', '--dropna']);
    expect(dropped).toBe(await run('x-dropna-none.csv', ['--workers', '0', '--dropna']));
    expect(dropped.split('\n').some((line) => line.startsWith(',') || /^[^,]*,,/.test(line))).toBe(false);
  });

  it('over Parquet too (its sample read through a row limit): the bytes of the CSV', async () => {
    const parquet = join(dir, 'distinct.parquet');
    expect((await gpuframe(['read-csv', file, '-o', parquet])).code).toBe(0);
    const out = (name: string) => join(dir, name);
    const args = ['--by', 'id,name', '--agg', aggs];
    expect((await gpuframe(['groupby', file, ...args, '-o', out('p-csv.csv'), '--workers', '0'])).code).toBe(0);
    const res = await gpuframe(['groupby', parquet, ...args, '-o', out('p-two.csv'), '--workers', '2', '--trace', out('p-two.json')]);
    expect(res.code, res.stderr).toBe(0);
    expect(readFileSync(out('p-two.json'), 'utf8')).toContain('(rows-range)');
    expect(readFileSync(out('p-two.csv'), 'utf8')).toBe(readFileSync(out('p-csv.csv'), 'utf8'));
  });
});
