// The Arrow C Data Interface reader (arrow-ffi.ts) on structs built by hand in a plain buffer, so
// that what parquet-wasm never produces here (array offsets, unaligned buffers, 64-bit string
// offsets, uint64 past int64) is exercised too; and Parquet files with types it leaves to
// apache-arrow (dictionaries, half floats), read through the fallback.

import { openAsBlob, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as pw from 'parquet-wasm';
import { describe, expect, test } from 'vitest';
import { valueAt, type Batch } from '../src/engine/batch.js';
import { FfiMemory, ffiFieldType } from '../src/engine/io/arrow-ffi.js';
import { arrow } from '../src/engine/io/apache-arrow.js';
import { parquetBatchRows } from '../src/engine/io/parquet-chunks.js';
import { planParquetChunks, readParquetChunk } from '../src/engine/io/parquet.js';
import { asGiven, batchRows, tempDir } from './io-formats-fixture.js';

/** Writes structs into one buffer the way a wasm32 producer lays them out. */
class StructWriter {
  readonly buffer = new ArrayBuffer(1 << 16);
  private readonly view = new DataView(this.buffer);
  private top = 8; // address 0 stays the null pointer

  alloc(bytes: number, align = 8): number {
    this.top = Math.ceil(this.top / align) * align;
    const at = this.top;
    this.top += bytes;
    return at;
  }
  bytes(data: Uint8Array, align = 8): number {
    const at = this.alloc(data.length, align);
    new Uint8Array(this.buffer).set(data, at);
    return at;
  }
  cString(s: string): number { return this.bytes(new Uint8Array([...Buffer.from(s), 0]), 1); }
  pointers(ptrs: number[]): number {
    const at = this.alloc(4 * ptrs.length, 4);
    ptrs.forEach((p, i) => this.view.setUint32(at + 4 * i, p, true));
    return at;
  }
  schema(format: string, name: string, children: number[] = [], dictionary = 0): number {
    const at = this.alloc(48);
    this.view.setUint32(at, this.cString(format), true);
    this.view.setUint32(at + 4, this.cString(name), true);
    this.view.setBigInt64(at + 24, BigInt(children.length), true);
    this.view.setUint32(at + 32, this.pointers(children), true);
    this.view.setUint32(at + 36, dictionary, true);
    return at;
  }
  array(length: number, nullCount: number, offset: number, buffers: number[], children: number[] = []): number {
    const at = this.alloc(64);
    this.view.setBigInt64(at, BigInt(length), true);
    this.view.setBigInt64(at + 8, BigInt(nullCount), true);
    this.view.setBigInt64(at + 16, BigInt(offset), true);
    this.view.setBigInt64(at + 24, BigInt(buffers.length), true);
    this.view.setBigInt64(at + 32, BigInt(children.length), true);
    this.view.setUint32(at + 40, this.pointers(buffers), true);
    this.view.setUint32(at + 44, this.pointers(children), true);
    return at;
  }
}

const bitmap = (bits: number[]) => Uint8Array.from({ length: Math.ceil(bits.length / 8) }, (_, b) => bits.slice(8 * b, 8 * b + 8).reduce((s, v, i) => s | (v << i), 0));
const le = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

describe('the Arrow C Data Interface reader', () => {
  test('each kind of column, with array offsets, nulls and unaligned buffers', () => {
    const w = new StructWriter();
    // Every array starts at offset 1: its first value is a decoy.
    const validity = w.bytes(bitmap([1, 1, 0, 1]));
    const int16 = w.bytes(le(Int16Array.of(99, -3, 7, 0)), 2);
    const odd = w.alloc(33, 8) + 1; // an address that no 8-byte view may start at
    new Uint8Array(w.buffer).set(le(BigInt64Array.of(5n, -(2n ** 40n), 0n, 123n)), odd);
    const f32 = w.bytes(le(Float32Array.of(9, 0.5, -1.25, 3)));
    const large = w.bytes(le(BigInt64Array.of(0n, 2n, 5n, 5n, 9n)));
    const chars = w.bytes(new TextEncoder().encode('xxhéyyzz'));
    const bools = w.bytes(bitmap([1, 0, 1, 1]));
    const nanos = w.bytes(le(BigInt64Array.of(0n, -1n, 1_999n, -86_400_000_000_001n)));
    const days = w.bytes(le(Int32Array.of(0, -1, 19_000, 1)));
    const dec = w.bytes(le(Uint32Array.of(0, 0, 0, 0, 12345, 0, 0, 0, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0, 0, 0, 0)));
    const fields: [string, string, number[]][] = [
      ['s', 'a', [validity, int16]],
      ['l', 'b', [0, odd]],
      ['f', 'c', [validity, f32]],
      ['U', 'd', [0, large, chars]],
      ['b', 'e', [validity, bools]],
      ['tsn:UTC', 'f', [0, nanos]],
      ['tdD', 'g', [validity, days]],
      ['d:10,2', 'h', [0, dec]],
    ];
    const schema = w.schema('+s', '', fields.map(([format, name]) => w.schema(format, name)));
    const struct = w.array(3, 0, 0, [0], fields.map(([, , bufs], i) => w.array(3, i % 2 === 0 ? 1 : 0, 1, bufs)));
    const memory = new FfiMemory(w.buffer);
    const ffiFields = memory.schemaFields(schema);
    expect(ffiFields.map((f) => [f.name, f.format])).toEqual(fields.map(([format, name]) => [name, format]));
    expect(ffiFields.map(ffiFieldType)).toEqual(['int64', 'int64', 'float64', 'string', 'bool', 'timestamp', 'timestamp', 'float64']);
    const ours = ffiFields.map((f) => ({ name: f.name, type: ffiFieldType(f)! }));
    const batch = memory.batchOf([struct], ffiFields, [7, 6, 5, 4, 3, 2, 1, 0], [...ours].reverse());
    expect(batch.length).toBe(3);
    expect(batchRows(batch).map((r) => [...r].reverse())).toEqual([
      [-3n, -(2n ** 40n), 0.5, 'hé', false, -1n, -86_400_000_000n, 123.45],
      [null, 0n, null, '', null, 1n, null, -0.01],
      [0n, 123n, 3, 'yyzz', true, -86_400_000_001n, 86_400_000_000n, 0],
    ]);
    // The batch holds copies: overwriting the memory changes nothing.
    new Uint8Array(w.buffer).fill(0xee);
    expect(valueAt(batch.columns[4], 0)).toBe('hé');
  });

  test('a uint64 past the int64 range is a DataError naming the column; a null there is not', () => {
    const w = new StructWriter();
    const values = w.bytes(le(BigUint64Array.of(1n, 2n ** 63n)));
    const field = w.schema('+s', '', [w.schema('L', 'big')]);
    const memory = new FfiMemory(w.buffer);
    const fields = memory.schemaFields(field);
    const read = (nulls: number[]) => {
      const validity = nulls.length > 0 ? w.bytes(bitmap([1, 1].map((v, i) => (nulls.includes(i) ? 0 : v)))) : 0;
      return memory.batchOf([w.array(2, nulls.length, 0, [0], [w.array(2, nulls.length, 0, [validity, values])])], fields, [0], [{ name: 'big', type: 'int64' }]);
    };
    expect(() => read([])).toThrow(/value 9223372036854775808 of unsigned 64-bit column 'big' exceeds the int64 range/);
    expect(batchRows(read([1]))).toEqual([[1n], [null]]);
  });

  test('dictionaries, half floats and nested types are left to apache-arrow', () => {
    expect(ffiFieldType({ name: 'k', format: 'i', dictionary: true })).toBeNull();
    expect(ffiFieldType({ name: 'h', format: 'e', dictionary: false })).toBeNull();
    expect(ffiFieldType({ name: 'n', format: '+l', dictionary: false })).toBeNull();
    expect(ffiFieldType({ name: 'v', format: 'vu', dictionary: false })).toBeNull();
  });
});

describe('Parquet chunks', () => {
  const dir = tempDir('parquet-ffi');

  test('a file with a dictionary column reads through apache-arrow with the same values', async () => {
    const words = ['ab', 'héllo', '', 'zz'];
    const n = 5000;
    const dict = arrow.vectorFromArray(Array.from({ length: n }, (_, i) => (i % 9 === 4 ? null : words[i % 4])), new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()));
    const id = arrow.vectorFromArray(Array.from({ length: n }, (_, i) => BigInt(i)), new arrow.Int64());
    const table = new arrow.Table({ id, k: dict });
    const path = join(dir, 'dict.parquet');
    writeFileSync(path, pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(table, 'stream'))));
    // The file's Arrow schema keeps the dictionary, so the reader cannot take its direct path.
    const file = await pw.ParquetFile.fromFile(await openAsBlob(path));
    const ffi = file.schema().intoFFI();
    expect(new FfiMemory(pw.wasmMemory().buffer).schemaFields(ffi.addr()).map((f) => f.dictionary)).toEqual([false, true]);
    ffi.free();
    file.free();
    const { schema, chunks } = await planParquetChunks(asGiven(path), 64 << 20);
    expect(schema).toEqual([{ name: 'id', type: 'int64' }, { name: 'k', type: 'string' }]);
    const batch: Batch = await readParquetChunk(chunks[0], ['k', 'id']);
    expect(batch.length).toBe(n);
    const want = Array.from({ length: n }, (_, i) => [i % 9 === 4 ? null : words[i % 4], BigInt(i)]);
    const got = batchRows(batch);
    expect(got.findIndex((r, i) => r[0] !== want[i][0] || r[1] !== want[i][1])).toBe(-1);
  });

  test('record batches: a chunk in one unless its uncompressed size passes 64 MB', () => {
    expect(parquetBatchRows({ rows: 2_000_000, bytes: 64 << 20 })).toBe(2_000_000);
    expect(parquetBatchRows({ rows: 0, bytes: 0 })).toBe(1);
    expect(parquetBatchRows({ rows: 4_000_000, bytes: 256 << 20 })).toBe(1_000_000);
    expect(parquetBatchRows({ rows: 10, bytes: 2 ** 30 })).toBe(1024);
  });

  test('a chunk over 64 MB reads in several record batches, joined with the values of one', async () => {
    const n = 300_000;
    const pad = 'x'.repeat(250); // ~75 MB of strings: two batches once the footer's size says 64 MB
    const table = new arrow.Table({
      id: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => BigInt(i)), new arrow.Int64()),
      s: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => (i % 1000 === 7 ? null : `${i}${pad}`)), new arrow.Utf8()),
      x: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => (i < n / 2 ? i / 4 : null)), new arrow.Float64()),
    });
    const path = join(dir, 'wide.parquet');
    writeFileSync(path, pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(table, 'stream'))));
    const { chunks } = await planParquetChunks(asGiven(path), 1 << 30);
    expect(chunks.length).toBe(1);
    expect(chunks[0].bytes).toBeGreaterThan(64 << 20);
    expect(parquetBatchRows(chunks[0])).toBeLessThan(n);
    const batch = await readParquetChunk(chunks[0], ['x', 's', 'id']);
    expect(batch.length).toBe(n);
    const got = batchRows(batch);
    const bad = got.findIndex((r, i) => r[0] !== (i < n / 2 ? i / 4 : null) || r[1] !== (i % 1000 === 7 ? null : `${i}${pad}`) || r[2] !== BigInt(i));
    expect(bad).toBe(-1);
  });
});
