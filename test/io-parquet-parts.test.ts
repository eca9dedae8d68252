// Parquet parts (one row group each, encoded apart) joined into one file: the footer codec writes
// back the bytes it read; the joined file reads in DuckDB and in our reader with every row, its
// row groups and page indexes where the parts' were, moved; and the Parquet writer's bytes do
// not depend on how many parts it encodes at once.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { concatBatches, type Batch } from '../src/engine/batch.js';
import { encodeParquetPart, parquetWriter } from '../src/engine/io/output/parquet-writer.js';
import { ParquetJoiner } from '../src/engine/io/output/parquet-parts.js';
import { field, readStruct, writeStruct, type ThriftList, type ThriftStruct } from '../src/engine/io/output/thrift-compact.js';
import { planParquetChunks, readParquetChunk } from '../src/engine/io/parquet.js';
import { AtomicFileSink } from '../src/engine/io/output/byte-sink.js';
import { asGiven, batchRows, duckdb, duckRowsLike, sampleBatch, tempDir } from './io-formats-fixture.js';

const dir = tempDir('parquet-parts');

function footerOf(file: Uint8Array): Uint8Array {
  const n = file.length;
  const length = new DataView(file.buffer, file.byteOffset + n - 8, 4).getUint32(0, true);
  return file.subarray(n - 8 - length, n - 8);
}

describe('joining Parquet parts', () => {
  test('the footer codec writes back the bytes it read', () => {
    const footer = footerOf(encodeParquetPart([sampleBatch(5000)]));
    expect(Buffer.from(writeStruct(readStruct(footer))).equals(Buffer.from(footer))).toBe(true);
  });

  test('three parts joined: every row, in order, for DuckDB and our reader; row groups and page indexes moved', async () => {
    const parts: Batch[] = [sampleBatch(70_000), sampleBatch(3, 70_000), sampleBatch(20_000, 70_003)];
    const joiner = new ParquetJoiner();
    const pieces = parts.flatMap((p) => joiner.add(encodeParquetPart([p])));
    const path = join(dir, 'joined.parquet');
    writeFileSync(path, Buffer.concat([...pieces, joiner.footer()]));
    const all = concatBatches(parts[0].schema, parts);
    expect(await duckRowsLike(all, `read_parquet('${path}')`)).toEqual(batchRows(all));
    const { chunks } = await planParquetChunks(asGiven(path), 1);
    expect(chunks.map((c) => c.rows)).toEqual([70_000, 3, 20_000]);
    const back = await Promise.all(chunks.map((c) => readParquetChunk(c, all.schema.map((f) => f.name))));
    const rows = back.flatMap(batchRows), want = batchRows(all);
    expect(rows.length).toBe(want.length);
    expect(rows.findIndex((r, i) => r.some((v, c) => v !== want[i][c]))).toBe(-1);
    // Each column chunk's pages (from its dictionary page, where it has one) lie inside the file.
    const meta = await (await duckdb()).runAndReadAll(`select row_group_id, row_group_num_rows, coalesce(dictionary_page_offset, data_page_offset), total_compressed_size from parquet_metadata('${path}') order by row_group_id, column_id`);
    const size = readFileSync(path).length;
    let pagesEnd = 0;
    for (const [group, , offset, bytes] of meta.getRows() as [bigint, bigint, bigint, bigint][]) {
      expect(Number(offset)).toBeGreaterThanOrEqual(4);
      expect(Number(offset) + Number(bytes)).toBeLessThan(size);
      expect(Number(group)).toBeLessThan(3);
      pagesEnd = Math.max(pagesEnd, Number(offset) + Number(bytes));
    }
    // The page indexes moved too, all after the last pages (one range for a reader to fetch, not
    // the whole file): each chunk's offset index starts at its first data page.
    const file = readFileSync(path);
    const footer = readStruct(footerOf(file));
    const chunks3 = (field(footer, 4)!.value as ThriftList).items.flatMap((g) => (field(g as ThriftStruct, 1)!.value as ThriftList).items as ThriftStruct[]);
    expect(chunks3.length).toBe(3 * all.schema.length);
    for (const c of chunks3) {
      const at = Number(field(c, 4)!.value), length = Number(field(c, 5)!.value);
      expect(Math.min(at, Number(field(c, 6)!.value))).toBeGreaterThanOrEqual(pagesEnd);
      const pages = (field(readStruct(file.subarray(at, at + length)), 1)!.value as ThriftList).items as ThriftStruct[];
      const dataPage = field(field(c, 3)!.value as ThriftStruct, 9)!.value;
      expect(field(pages[0], 1)!.value).toBe(dataPage);
      const columnIndexAt = Number(field(c, 6)!.value);
      expect(() => readStruct(file.subarray(columnIndexAt, columnIndexAt + Number(field(c, 7)!.value)))).not.toThrow();
    }
  });

  test('the writer gives the same bytes encoding one part at a time or many at once, and for a result without rows', async () => {
    const rows = sampleBatch(150_000);
    const write = async (name: string, concurrency: number, batches: Batch[]) => {
      const path = join(dir, name);
      let n = 0;
      const w = parquetWriter(await AtomicFileSink.open(path), rows.schema, {
        concurrency,
        // Each part later than the next: the joined order must not follow when they finish.
        encode: (b) => { const delay = 100 - 20 * n++; return new Promise((resolve) => setTimeout(() => resolve(encodeParquetPart([b])), Math.max(0, delay))); },
      }, 40_000);
      for (const b of batches) await w.write(b);
      await w.close();
      return readFileSync(path);
    };
    const one = await write('one.parquet', 1, [rows]);
    const many = await write('many.parquet', 4, [sampleBatch(1000), sampleBatch(99_000, 1000), sampleBatch(50_000, 100_000)]);
    expect(one.equals(many)).toBe(true);
    expect(await duckRowsLike(rows, `read_parquet('${join(dir, 'many.parquet')}')`)).toEqual(batchRows(rows));
    const groups = await (await duckdb()).runAndReadAll(`select count(distinct row_group_id) from parquet_metadata('${join(dir, 'many.parquet')}')`);
    expect(Number(groups.getRows()[0][0])).toBe(4);
    const empty = await write('empty.parquet', 2, []);
    expect(await duckRowsLike(rows, `read_parquet('${join(dir, 'empty.parquet')}')`)).toEqual([]);
    expect(empty.length).toBeGreaterThan(12);
  });
});
