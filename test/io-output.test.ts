import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { columnFromValues, type Batch } from '../src/engine/batch.js';
import { formatFloat, formatTimestamp } from '../src/engine/io/format-value.js';
import { cleanStaleTempFiles, formatFromPath, openFileWriter, openStreamWriter } from '../src/engine/io/output/index.js';
import { arrowTableToBatch } from '../src/engine/io/arrow-batch.js';
import { rebatched } from '../src/engine/io/output/rebatch.js';
import { PARQUET_BATCH_ROWS, rowGroupRows } from '../src/engine/io/output/parquet-writer.js';
import { arrow } from '../src/engine/io/apache-arrow.js';
import { batchRows, duckdb, duckRowsLike, sampleBatch, tempDir } from './io-formats-fixture.js';

const dir = tempDir('output');

async function writeFile(path: string, format: Parameters<typeof openFileWriter>[1], batches: Batch[]) {
  const w = await openFileWriter(path, format, batches[0].schema);
  for (const b of batches) await w.write(b);
  await w.close();
}

async function streamText(format: Parameters<typeof openStreamWriter>[1], batches: Batch[]): Promise<Buffer> {
  const out = new PassThrough();
  const parts: Buffer[] = [];
  out.on('data', (d: Buffer) => parts.push(d));
  const w = openStreamWriter(out, format, batches[0].schema);
  for (const b of batches) await w.write(b);
  await w.close();
  return Buffer.concat(parts);
}

describe('value formatting', () => {
  test('float64 text matches DuckDB CSV writer', async () => {
    const xs = [1, 0.1, -2.5, 1e15, 1e16, 1e20, 1e21, 1e-4, 1e-5, 1e-7, 1 / 3, -0, 0, 123456789012345680, 2.5e-300,
      Number.MAX_VALUE, Number.MIN_VALUE, 100, 12345.678, NaN, Infinity, -Infinity];
    const values = xs.map((x, i) => `(${i}, '${Object.is(x, -0) ? '-0.0' : String(x)}'::DOUBLE)`).join(',');
    const path = join(dir, 'floats.csv');
    await (await duckdb()).run(`COPY (SELECT x FROM (VALUES ${values}) t(i, x) ORDER BY i) TO '${path}' (HEADER false)`);
    const duck = readFileSync(path, 'utf8').trim().split('\n');
    expect(xs.map(formatFloat)).toEqual(duck);
  });

  test('timestamps match DuckDB strftime, before 1970 and with microseconds', async () => {
    const us = [0n, 1n, -1n, 1_577_836_800_500_000n, -86_400_000_000n * 365n * 300n + 7n, 253_402_300_799_999_999n];
    const sql = us.map((u) => `strftime(make_timestamp(${u}::BIGINT), '%Y-%m-%d %H:%M:%S.%f')`).join(', ');
    const row = (await (await duckdb()).runAndReadAll(`SELECT ${sql}`)).getRows()[0] as string[];
    expect(us.map((u) => formatTimestamp(u))).toEqual(row.map((s) => s.replace(/\.000000$/, '')));
    expect(formatTimestamp(1_577_836_800_500_000n, true)).toBe('2020-01-01T00:00:00.500000Z');
  });

  test('formatFromPath picks formats and rejects unknown extensions', () => {
    expect(formatFromPath('a/b.CSV')).toBe('csv');
    expect(formatFromPath('x.feather')).toBe('arrow');
    expect(formatFromPath('x.parquet')).toBe('parquet');
    expect(formatFromPath('x.jsonl')).toBe('jsonl');
    expect(() => formatFromPath('x.txt')).toThrow(expect.objectContaining({ exitCode: 2 }));
  });
});

describe('round trips read back by DuckDB', () => {
  const batches = [sampleBatch(700), sampleBatch(300, 700)];
  const all = [...batchRows(batches[0]), ...batchRows(batches[1])];

  test('csv', async () => {
    const path = join(dir, 'rt.csv');
    await writeFile(path, 'csv', batches);
    const rel = `read_csv('${path}', header=true, allow_quoted_nulls=false, columns={'id':'BIGINT','big':'BIGINT','x':'DOUBLE','s':'VARCHAR','b':'BOOLEAN','ts':'TIMESTAMP'})`;
    expect(await duckRowsLike(batches[0], rel)).toEqual(all);
  });

  test('csv keeps NaN and infinities', async () => {
    const b: Batch = { schema: [{ name: 'v', type: 'float64' }], length: 4, columns: [columnFromValues('float64', [NaN, Infinity, -Infinity, null])] };
    const path = join(dir, 'nan.csv');
    await writeFile(path, 'csv', [b]);
    expect(readFileSync(path, 'utf8')).toBe('v\nnan\ninf\n-inf\n\n');
  });

  test('jsonl, with ints beyond 2^53 exact', async () => {
    const path = join(dir, 'rt.jsonl');
    await writeFile(path, 'jsonl', batches);
    const rel = `read_json('${path}', format='newline_delimited', columns={'id':'BIGINT','big':'BIGINT','x':'DOUBLE','s':'VARCHAR','b':'BOOLEAN','ts':'TIMESTAMP'})`;
    expect(await duckRowsLike(batches[0], rel)).toEqual(all);
    const firstBig = readFileSync(path, 'utf8').split('\n')[0];
    expect(firstBig).toContain(`"big":${(2n ** 53n * 1000n).toString()}`);
  });

  test('parquet', async () => {
    const path = join(dir, 'rt.parquet');
    await writeFile(path, 'parquet', batches);
    expect(await duckRowsLike(batches[0], `read_parquet('${path}')`)).toEqual(all);
  });

  test('arrow file reads back through apache-arrow', async () => {
    const path = join(dir, 'rt.arrow');
    await writeFile(path, 'arrow', batches);
    expect(batchRows(arrowTableToBatch(arrow.tableFromIPC(readFileSync(path))))).toEqual(all);
  });

  test('empty results still carry the schema', async () => {
    const empty = sampleBatch(0);
    for (const fmt of ['csv', 'parquet'] as const) {
      const path = join(dir, `empty.${fmt}`);
      await writeFile(path, fmt, [empty]);
      const rel = fmt === 'csv' ? `read_csv('${path}', header=true)` : `read_parquet('${path}')`;
      const cols = (await (await duckdb()).runAndReadAll(`DESCRIBE SELECT * FROM ${rel}`)).getRows().map((r) => r[0]);
      expect(cols).toEqual(['id', 'big', 'x', 's', 'b', 'ts']);
    }
  });
});

describe('stream writers', () => {
  test('table shows the first 20 rows and counts all', async () => {
    const text = (await streamText('table', [sampleBatch(15), sampleBatch(15, 15)])).toString('utf8');
    const lines = text.trimEnd().split('\n');
    expect(lines[0].split(/\s+/)).toEqual(['id', 'big', 'x', 's', 'b', 'ts']);
    expect(lines.at(-1)).toBe('30 rows');
    // header, rule, 20 rows (a newline inside a string is shown escaped), '...', count
    expect(lines.length).toBe(24);
    expect(lines.slice(2, 22).map((l) => Number(l.trim().split(/\s+/)[0]))).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(text).toContain('two\\nlines');
  });

  test('arrow on a stream is the IPC stream format', async () => {
    const bytes = await streamText('arrow', [sampleBatch(50), sampleBatch(50, 50)]);
    expect(batchRows(arrowTableToBatch(arrow.tableFromIPC(bytes)))).toEqual([...batchRows(sampleBatch(50)), ...batchRows(sampleBatch(50, 50))]);
  });
});

describe('atomic files', () => {
  test('aborted mid-way leaves no file and no temp file', async () => {
    const sub = tempDir('atomic');
    const path = join(sub, 'out.parquet');
    for (const fmt of ['csv', 'parquet', 'arrow', 'jsonl'] as const) {
      const w = await openFileWriter(path, fmt, sampleBatch(1).schema);
      await w.write(sampleBatch(5000));
      expect(existsSync(path)).toBe(false);
      await w.abort();
      expect(readdirSync(sub)).toEqual([]);
    }
  });

  test('an existing destination is replaced only on close', async () => {
    const sub = tempDir('replace');
    const path = join(sub, 'out.csv');
    writeFileSync(path, 'old\n');
    const w = await openFileWriter(path, 'csv', sampleBatch(1).schema);
    await w.write(sampleBatch(10));
    expect(readFileSync(path, 'utf8')).toBe('old\n');
    await w.close();
    expect(readFileSync(path, 'utf8').split('\n')[0]).toBe('id,big,x,s,b,ts');
    expect(readdirSync(sub)).toEqual(['out.csv']);
  });

  test('unwritable destinations fail at open naming the path', async () => {
    const missing = join(dir, 'no-such-dir', 'out.csv');
    await expect(openFileWriter(missing, 'csv', sampleBatch(1).schema)).rejects.toMatchObject({ exitCode: 1, message: expect.stringContaining(missing) });
    const ro = tempDir('readonly');
    chmodSync(ro, 0o555);
    const isRoot = process.getuid?.() === 0; // root ignores directory permissions
    if (!isRoot) await expect(openFileWriter(join(ro, 'o.csv'), 'csv', sampleBatch(1).schema)).rejects.toMatchObject({ exitCode: 1, message: expect.stringContaining('permission denied') });
    chmodSync(ro, 0o755);
  });

  test('cleanStaleTempFiles removes only files of dead processes', async () => {
    const sub = tempDir('stale');
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const stale = `.out.csv.gpuframe-${dead}-0a1b2c3d.tmp`;
    const live = `.out.csv.gpuframe-${process.pid}-0a1b2c3d.tmp`;
    for (const n of [stale, live, 'other.tmp']) writeFileSync(join(sub, n), 'x');
    await cleanStaleTempFiles(sub);
    expect(readdirSync(sub).sort()).toEqual([live, 'other.tmp'].sort());
  });
});

describe('fixed batches for the binary formats', () => {
  test('rebatched hands on batches of exactly N rows (the last fewer), rows in order, whatever came in', async () => {
    const got: Batch[] = [];
    const inner = { write: async (b: Batch) => { got.push(b); }, close: async () => {}, abort: async () => {} };
    const w = rebatched(inner, 1000);
    const sizes = [10, 2500, 0, 990, 1, 3, 1500];
    let at = 0;
    for (const n of sizes) { await w.write(sampleBatch(n, at)); at += n; }
    expect(at).toBe(5004);
    expect(got.map((b) => b.length)).toEqual([1000, 1000, 1000, 1000, 1000]);
    await w.close();
    expect(got.map((b) => b.length)).toEqual([1000, 1000, 1000, 1000, 1000, 4]);
    const ids = got.flatMap((b) => batchRows(b).map((r) => r[0]));
    expect(ids).toEqual(Array.from({ length: at }, (_, i) => BigInt(i)));
    expect(batchRows(got[1])).toEqual(batchRows(sampleBatch(1000, 1000)));
  });

  test('Parquet row groups: a whole number of output batches, from the schema alone', () => {
    const schema = sampleBatch(1).schema; // int64 ×2, float64, string, bool, timestamp: 57 bytes a row by the estimate
    expect(rowGroupRows(schema)).toBe(16 * PARQUET_BATCH_ROWS);
    const wide = Array.from({ length: 200 }, (_, i) => ({ name: `s${i}`, type: 'string' as const }));
    expect(rowGroupRows(wide)).toBe(PARQUET_BATCH_ROWS);
    expect(rowGroupRows(wide.slice(0, 8))).toBe(5 * PARQUET_BATCH_ROWS);
  });
});
