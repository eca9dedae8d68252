import type * as Arrow from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { concatBatches } from '../src/engine/batch.js';
import { float64Extents, planArrowChunks, readArrowChunk } from '../src/engine/io/arrow.js';
import { ArrowFileColumns } from '../src/engine/io/arrow-file-columns.js';
import { columnFromValues } from '../src/engine/batch.js';
import { open } from 'node:fs/promises';
import { arrowSchemaToSchema, arrowTableToBatch, batchToArrowTable } from '../src/engine/io/arrow-batch.js';
// The same copy of apache-arrow as the code under test (its CommonJS build; see apache-arrow.ts).
import { arrow } from '../src/engine/io/apache-arrow.js';

import { EMPTY_NAMED_FIELDS, EMPTY_NAMED_FIELD_NAMES, emptyNamedRows, asGiven, batchRows, duckRowsLike, fieldsTable, openArrowBatchWriter, sampleBatch, tempDir } from './io-formats-fixture.js';

const dir = tempDir('arrow');

/** Input types that need conversion, built by apache-arrow with known values. */
function variedTable(): Arrow.Table {
  const n = 6;
  const days = [-1, 0, 1, 18262, null, 36524];
  return new arrow.Table({
    i8: arrow.vectorFromArray([-128, 0, 127, null, 5, -5], new arrow.Int8()),
    u32: arrow.vectorFromArray([0, 1, 4294967295, 7, null, 3], new arrow.Uint32()),
    u64: arrow.vectorFromArray([0n, 2n ** 63n - 1n, null, 9n, 10n, 11n], new arrow.Uint64()),
    f32: arrow.vectorFromArray([0.5, -1.25, null, 3, 1e10, -0], new arrow.Float32()),
    day: arrow.vectorFromArray(days.map((d) => (d === null ? null : new Date(d * 86_400_000))), new arrow.DateDay()),
    tsns: arrow.makeVector(arrow.makeData({ type: new arrow.TimestampNanosecond('Europe/Paris'), length: n, nullCount: 0,
      data: BigInt64Array.from([-1n, 0n, 999n, 1000n, 1_577_836_800_123_456_789n, -1_500n]) })),
    tss: arrow.makeVector(arrow.makeData({ type: new arrow.TimestampSecond(), length: n, nullCount: 0,
      data: BigInt64Array.from([-1n, 0n, 1n, 2n, 3n, 1_000_000_000n]) })),
    dict: arrow.vectorFromArray(['a', 'bé', 'a', null, 'c', 'bé'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
    large: arrow.vectorFromArray(['x', '', null, '日本', 'y', 'z'], new arrow.LargeUtf8()),
    bool: arrow.vectorFromArray([true, false, null, true, true, false], new arrow.Bool()),
  });
}

describe('Arrow conversion', () => {
  test('maps Arrow types onto ours with the right values', () => {
    const b = arrowTableToBatch(variedTable());
    expect(b.schema.map((f) => f.type)).toEqual(['int64', 'int64', 'int64', 'float64', 'timestamp', 'timestamp', 'timestamp', 'string', 'string', 'bool']);
    const cols = b.schema.map((_, c) => batchRows(b).map((r) => r[c]));
    expect(cols[0]).toEqual([-128n, 0n, 127n, null, 5n, -5n]);
    expect(cols[1]).toEqual([0n, 1n, 4294967295n, 7n, null, 3n]);
    expect(cols[2]).toEqual([0n, 2n ** 63n - 1n, null, 9n, 10n, 11n]);
    expect(cols[3]).toEqual([0.5, -1.25, null, 3, 1e10, -0]);
    expect(cols[4]).toEqual([-1n, 0n, 1n, 18262n, null, 36524n].map((d) => (d === null ? null : d * 86_400_000_000n)));
    expect(cols[5]).toEqual([-1n, 0n, 0n, 1n, 1_577_836_800_123_456n, -2n]); // floor to microseconds
    expect(cols[6]).toEqual([-1_000_000n, 0n, 1_000_000n, 2_000_000n, 3_000_000n, 1_000_000_000_000_000n]);
    expect(cols[7]).toEqual(['a', 'bé', 'a', null, 'c', 'bé']);
    expect(cols[8]).toEqual(['x', '', null, '日本', 'y', 'z']);
    expect(cols[9]).toEqual([true, false, null, true, true, false]);
  });

  test('uint64 beyond int64 and unsupported types are DataErrors naming the column', () => {
    const big = new arrow.Table({ u: arrow.vectorFromArray([1n, 2n ** 63n], new arrow.Uint64()) });
    expect(() => arrowTableToBatch(big)).toThrow(expect.objectContaining({ exitCode: 3, message: expect.stringContaining("'u'") }));
    const list = new arrow.Table({ l: arrow.vectorFromArray([[1, 2]], new arrow.List(new arrow.Field('item', new arrow.Int32()))) });
    expect(() => arrowSchemaToSchema(list.schema)).toThrow(expect.objectContaining({ exitCode: 3, message: expect.stringContaining("'l'") }));
  });

  test('batch -> Arrow -> batch is lossless', () => {
    const b = sampleBatch(500);
    expect(batchRows(arrowTableToBatch(batchToArrowTable(b)))).toEqual(batchRows(b));
  });
});

describe("apache-arrow's Schema.assign, looked up by name (apache-arrow.ts)", () => {
  // The library's own assign, from its ESM build: a second copy of apache-arrow, left unpatched.
  type Lib = typeof Arrow;
  const field = (lib: Lib, name: string, meta: [string, string][] = [], type: Arrow.DataType = new lib.Int64(), nullable = false) =>
    new lib.Field(name, type, nullable, new Map(meta));
  const described = (s: Arrow.Schema) => ({
    fields: s.fields.map((f) => [f.name, String(f.type), f.nullable, [...f.metadata]]),
    metadata: [...s.metadata],
    dictionaries: [...s.dictionaries.keys()],
  });
  /** The same calls against both copies. */
  const cases: [string, (lib: Lib) => Arrow.Schema][] = [
    ['the fields again, made nullable (what RecordBatch does)', (lib) => {
      const fs = ['a', 'b', 'c'].map((n) => field(lib, n));
      return new lib.Schema(fs, new Map([['k', 'v']])).assign(fs.map((f) => f.clone({ nullable: true })));
    }],
    ['duplicate names, field and schema metadata merged, new fields appended', (lib) => {
      const base = new lib.Schema([field(lib, 'a', [['x', '1'], ['q', '0']]), field(lib, 'b'), field(lib, 'a', [['y', '2']])], new Map([['s', '1']]));
      const other = new lib.Schema([field(lib, 'a', [['x', '9'], ['z', '3']], new lib.Float64()), field(lib, 'd'), field(lib, 'd', [['w', '4']]), field(lib, 'b', [], new lib.Utf8(), true)], new Map([['s', '2'], ['t', '3']]));
      return base.assign(other);
    }],
    ['fields given as an array and as arguments; a dictionary field', (lib) => {
      const dict = new lib.Dictionary(new lib.Utf8(), new lib.Int32(), 7);
      const s = new lib.Schema([field(lib, 'a')]).assign([field(lib, 'b'), field(lib, 'e', [], dict)]);
      return s.assign(field(lib, 'a', [['m', 'n']]), field(lib, 'c'));
    }],
  ];

  test.each(cases)('%s: the library\'s result', async (_, make) => {
    const esm = await import('apache-arrow');
    expect(esm.Schema.prototype.assign).not.toBe(arrow.Schema.prototype.assign);
    expect(described(make(arrow))).toEqual(described(make(esm as unknown as Lib)));
  });
});

describe('Arrow IPC files and streams', () => {
  const parts = [sampleBatch(400), sampleBatch(400, 400), sampleBatch(400, 800)];
  const expected = parts.flatMap(batchRows);

  test('our .arrow output: chunks by blocksize, values read back; DuckDB reads the same bytes via arrow-rs', async () => {
    const path = join(dir, 'out.arrow');
    const w = await openArrowBatchWriter(path, parts[0].schema);
    for (const p of parts) await w.write(p);
    await w.close();
    const small = await planArrowChunks(asGiven(path), 'file', 1);
    expect(small.chunks.map((c) => c.batchIndices)).toEqual([[0], [1], [2]]);
    expect(small.chunks.map((c) => c.rows)).toEqual([400, 400, 400]);
    const big = await planArrowChunks(asGiven(path), 'file', 1 << 30);
    expect(big.chunks.map((c) => c.batchIndices)).toEqual([[0, 1, 2]]);
    // A blocksize of 1/n of the file gives n chunks (a chunk holds the batches that start in its
    // share), not n and a remainder: 8 equal batches at a third of the file, three chunks.
    const eight = join(dir, 'eight.arrow'), floats = [{ name: 'v', type: 'float64' as const }];
    const w8 = await openArrowBatchWriter(eight, floats);
    for (let i = 0; i < 8; i++) await w8.write({ schema: floats, length: 1000, columns: [{ type: 'float64', values: new Float64Array(1000).fill(i), valid: null }] });
    await w8.close();
    const thirds = await planArrowChunks(asGiven(eight), 'file', Math.ceil(statSync(eight).size / 3));
    expect(thirds.chunks.map((c) => c.batchIndices)).toEqual([[0, 1, 2], [3, 4, 5], [6, 7]]);
    const names = small.schema.map((f) => f.name);
    const back = concatBatches(parts[0].schema, (await Promise.all(small.chunks.map((c) => readArrowChunk(c, names)))).flat());
    expect(batchRows(back)).toEqual(expected);
    // A chunk of several record batches: a batch for each, not joined (joining copies every value).
    const whole = await readArrowChunk(big.chunks[0], names);
    expect(whole.map((b) => b.length)).toEqual([400, 400, 400]);
    expect(batchRows(concatBatches(parts[0].schema, whole))).toEqual(expected);
    // Independent reader: the file's messages (between the magic and the footer) form an IPC
    // stream; arrow-rs (in parquet-wasm) decodes them and DuckDB reads the re-encoded Parquet.
    // apache-arrow's file writer keeps the schema only in the footer, so prepend a schema message.
    const bytes = readFileSync(path);
    const footerLen = bytes.readInt32LE(bytes.length - 10);
    const fb = arrow.Message.encode(arrow.Message.from(arrow.tableFromIPC(bytes).schema));
    const schemaMsg = Buffer.alloc((fb.length + 8 + 7) & ~7);
    schemaMsg.writeInt32LE(-1, 0);
    schemaMsg.writeInt32LE(schemaMsg.length - 8, 4);
    schemaMsg.set(fb, 8);
    const eos = Buffer.from([255, 255, 255, 255, 0, 0, 0, 0]);
    const stream = Buffer.concat([schemaMsg, bytes.subarray(8, bytes.length - 10 - footerLen), eos]);
    const viaRust = join(dir, 'via-rust.parquet');
    writeFileSync(viaRust, pw.writeParquet(pw.Table.fromIPCStream(stream)));
    expect(await duckRowsLike(parts[0], `read_parquet('${viaRust}')`)).toEqual(expected);
  });

  test('a file with dictionary columns is read batch by batch: the same values', async () => {
    const path = join(dir, 'dict.arrow');
    const words = ['a', 'b', null, 'b', 'c', 'a'];
    const table = new arrow.Table({
      k: arrow.vectorFromArray(words, new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
      v: arrow.vectorFromArray([0, 1, 2, 10, 11, 20], new arrow.Float64()),
    });
    // Three record batches sharing the one dictionary.
    const batches = [[0, 3], [3, 5], [5, 6]].map(([a, b]) => table.slice(a, b).batches[0]);
    writeFileSync(path, arrow.tableToIPC(new arrow.Table(batches), 'file'));
    const { chunks } = await planArrowChunks(asGiven(path), 'file', 1 << 30);
    const got = concatBatches([{ name: 'k', type: 'string' }, { name: 'v', type: 'float64' }], await readArrowChunk(chunks[0], ['k', 'v']));
    expect(batchRows(got)).toEqual([['a', 0], ['b', 1], [null, 2], ['b', 10], ['c', 11], ['a', 20]]);
  });

  test('.arrows streams: chunks and selected columns', async () => {
    const path = join(dir, 'in.arrows');
    writeFileSync(path, arrow.tableToIPC(new arrow.Table(parts.map((p) => batchToArrowTable(p).batches[0])), 'stream'));
    const { chunks } = await planArrowChunks(asGiven(path), 'stream', 1);
    expect(chunks.map((c) => c.batchIndices)).toEqual([[0], [1], [2]]);
    const read = await readArrowChunk(chunks[1], ['ts', 'id']);
    expect(read.length).toBe(1); // a batch per record batch
    const b = read[0];
    expect(b.schema.map((f) => f.name)).toEqual(['ts', 'id']);
    expect(batchRows(b)).toEqual(batchRows(parts[1]).map((r) => [r[5], r[0]]));
  });

  test('corrupt, truncated and mislabelled inputs are DataErrors naming the file', async () => {
    const good = arrow.tableToIPC(batchToArrowTable(sampleBatch(100)), 'file');
    const truncated = join(dir, 'truncated.arrow');
    writeFileSync(truncated, good.subarray(0, good.length - 40));
    // Named as the user wrote them (displayName), not by the path the reader opened.
    await expect(planArrowChunks(asGiven(truncated, 'in/truncated.arrow'), 'file', 1)).rejects.toMatchObject({ exitCode: 3, message: expect.stringMatching(/^in\/truncated\.arrow: /) });
    const garbage = join(dir, 'garbage.arrow');
    writeFileSync(garbage, 'definitely,not\narrow,data\n');
    await expect(planArrowChunks(asGiven(garbage, 'in/garbage.arrow'), 'file', 1)).rejects.toMatchObject({ exitCode: 3, message: expect.stringMatching(/^in\/garbage\.arrow: /) });
    const streamAsFile = join(dir, 'stream.arrow');
    writeFileSync(streamAsFile, arrow.tableToIPC(batchToArrowTable(sampleBatch(10)), 'stream'));
    await expect(planArrowChunks(asGiven(streamAsFile, 'in/stream.arrow'), 'file', 1)).rejects.toMatchObject({ exitCode: 3, message: expect.stringMatching(/^in\/stream\.arrow: .*\.arrows/) });
    await expect(planArrowChunks(asGiven(join(dir, 'missing.arrow'), 'in/missing.arrow'), 'file', 1)).rejects.toMatchObject({ exitCode: 2, message: 'input file not found: in/missing.arrow' });
  });
});

describe('float64 columns read where they lie in an Arrow IPC file', () => {
  /** Three record batches: float64 columns among strings, ints and bools; `holes` has a null in its second batch. */
  async function mixedFile(path: string): Promise<{ a: number[]; c: number[] }> {
    const a: number[] = [], c: number[] = [];
    const w = await openArrowBatchWriter(path, [
      { name: 's', type: 'string' }, { name: 'a', type: 'float64' }, { name: 'i', type: 'int64' },
      { name: 'b', type: 'bool' }, { name: 'c', type: 'float64' }, { name: 'holes', type: 'float64' },
    ]);
    for (const [start, n] of [[0, 5], [5, 300], [305, 1]]) {
      const idx = Array.from({ length: n }, (_, k) => start + k);
      a.push(...idx.map((r) => Math.sin(r) * 1e3));
      c.push(...idx.map((r) => (r % 7 === 0 ? -0 : r / 3)));
      await w.write({
        schema: [{ name: 's', type: 'string' }, { name: 'a', type: 'float64' }, { name: 'i', type: 'int64' }, { name: 'b', type: 'bool' }, { name: 'c', type: 'float64' }, { name: 'holes', type: 'float64' }],
        length: n,
        columns: [
          columnFromValues('string', idx.map((r) => (r % 4 === 0 ? null : `row ${r}`))),
          columnFromValues('float64', idx.map((r) => Math.sin(r) * 1e3)),
          columnFromValues('int64', idx.map((r) => BigInt(r))),
          columnFromValues('bool', idx.map((r) => r % 2 === 0)),
          columnFromValues('float64', idx.map((r) => (r % 7 === 0 ? -0 : r / 3))),
          columnFromValues('float64', idx.map((r) => (start === 5 && r === 9 ? null : r))),
        ],
      });
    }
    await w.close();
    return { a, c };
  }

  test('extents of float64 columns: pieces, whole columns and single rows read from them are the values written', async () => {
    const path = join(dir, 'mixed.arrow');
    const { a, c } = await mixedFile(path);
    const plan = await planArrowChunks(asGiven(path), 'file', 1 << 30);
    const extents = await float64Extents(plan.chunks[0], ['c', 'a']);
    expect(extents).not.toBeNull();
    expect(extents!.batchRows).toEqual([5, 300, 1]);
    const file = new ArrowFileColumns(plan.chunks[0], extents!);
    expect(file.rows).toBe(306);
    expect(Array.from(file.column(0))).toEqual(c);
    expect(Array.from(file.column(1))).toEqual(a);
    for (const r of [0, 4, 5, 6, 304, 305]) expect(Array.from(file.row(r, 2)), `row ${r}`).toEqual([c[r], a[r]]);
    // Pieces, copied from inside: bytes 12 … 12 + 2400 of column 'a' (they cross the first batch's end).
    const handle = await open(path, 'r');
    try {
      const pieces = file.pieces(handle, 1);
      expect(pieces.map((p) => p.byteLength)).toEqual([40, 2400, 8]);
      const got = new Float64Array(303);
      await pieces[0].copyTo(new Uint8Array(got.buffer, 0, 40), 0);
      await pieces[1].copyTo(new Uint8Array(got.buffer, 40, 2376), 0);
      await pieces[2].copyTo(new Uint8Array(got.buffer, 2416, 8), 0);
      expect(Array.from(got.subarray(0, 5))).toEqual(a.slice(0, 5));
      expect(Array.from(got.subarray(5, 302))).toEqual(a.slice(5, 302));
      const tail = new Float64Array(2);
      await pieces[1].copyTo(new Uint8Array(tail.buffer), 2384);
      expect(Array.from(tail)).toEqual(a.slice(303, 305));
    } finally {
      await handle.close();
    }
  });

  test('a file that changes after its extents were read: reads from it fail with a message naming it', async () => {
    const path = join(dir, 'changing.arrow');
    await mixedFile(path);
    const chunk = (await planArrowChunks(asGiven(path, 'in/changing.arrow'), 'file', 1 << 30)).chunks[0];
    const file = new ArrowFileColumns(chunk, (await float64Extents(chunk, ['a']))!);
    expect(file.column(0).length).toBe(306);
    utimesSync(path, new Date(), new Date(Date.now() + 5000));
    expect(() => file.row(3, 1)).toThrow(/^in\/changing\.arrow: the file changed during the run/);
    await expect(file.open()).rejects.toThrow(/changed during the run/);
  });

  test('no extents when a column has a null, is not float64, or the data is an IPC stream', async () => {
    const path = join(dir, 'mixed2.arrow');
    await mixedFile(path);
    const chunk = (await planArrowChunks(asGiven(path), 'file', 1 << 30)).chunks[0];
    expect(await float64Extents(chunk, ['a', 'holes'])).toBeNull();
    expect(await float64Extents(chunk, ['a', 'i'])).toBeNull();
    expect(await float64Extents(chunk, ['missing'])).toBeNull();
    // Batches without the null: extents again.
    expect(await float64Extents({ ...chunk, batchIndices: [0, 2] }, ['holes'])).not.toBeNull();
    expect(await float64Extents({ ...chunk, kind: 'stream' }, ['a'])).toBeNull();
  });
});

describe('field names: an empty one is column<i> (as in CSV headers), one given twice is refused', () => {
  // Two empty names of different types, and a name the generated one would take: apache-arrow
  // decodes the empty names as null, and its RecordBatch would merge the two fields (first takes
  // the last's type); the reader names and types them from the schema it decoded.
  const columns = EMPTY_NAMED_FIELDS;
  const names = EMPTY_NAMED_FIELD_NAMES;
  const rows = emptyNamedRows;

  test.each(['file', 'stream'] as const)('IPC %s: generated names, the types and values of each field, chunk by chunk', async (kind) => {
    const path = join(dir, `empty-names.${kind === 'file' ? 'arrow' : 'arrows'}`);
    writeFileSync(path, arrow.tableToIPC(fieldsTable(columns, 2), kind));
    const plan = await planArrowChunks(asGiven(path), kind, 1);
    expect(plan.schema).toEqual(names.map((name, i) => ({ name, type: ['int64', 'string', 'string', 'int64', 'float64'][i] })));
    expect(plan.chunks.map((c) => c.batchIndices)).toEqual([[0], [1], [2]]);
    const read = async (wanted: string[]) => (await Promise.all(plan.chunks.map((c) => readArrowChunk(c, wanted)))).flat().flatMap(batchRows);
    expect(await read(names)).toEqual(rows([0, 1, 2, 3, 4]));
    expect(await read(['column2', 'column0_1', 'column4'])).toEqual(rows([2, 0, 4]));
    await expect(read([''])).rejects.toMatchObject({ exitCode: 2, message: expect.stringContaining('column0_1, k, column2, column0, column4') });
    if (kind === 'file') {
      // float64 columns read where they lie find a generated name too.
      const extents = await float64Extents(plan.chunks[1], ['column4']);
      expect(extents).not.toBeNull();
      expect(Array.from(new ArrowFileColumns(plan.chunks[1], extents!).column(0))).toEqual([2.5, 3.5]);
    }
  });

  test('a table made in memory: the same names', () => {
    expect(arrowTableToBatch(fieldsTable(columns)).schema.map((f) => f.name)).toEqual(names);
  });

  test.each(['file', 'stream'] as const)('IPC %s: a name given twice is a DataError naming the file and both positions', async (kind) => {
    const path = join(dir, `twice.${kind === 'file' ? 'arrow' : 'arrows'}`);
    // Of different types: apache-arrow's RecordBatch would give the first the second's type.
    writeFileSync(path, arrow.tableToIPC(fieldsTable([
      { name: 'k', type: 'string', values: ['a', 'b'] }, { name: 'v', type: 'int64', values: [1n, 2n] }, { name: 'v', type: 'string', values: ['x', 'y'] },
    ]), kind));
    const message = "in/twice.arrow: duplicate column name 'v' at columns 2 and 3";
    await expect(planArrowChunks(asGiven(path, 'in/twice.arrow'), kind, 1)).rejects.toMatchObject({ exitCode: 3, message });
    const chunk = { path, displayName: 'in/twice.arrow', kind, batchIndices: [0], rows: 2 };
    await expect(readArrowChunk(chunk, ['k'])).rejects.toMatchObject({ exitCode: 3, message });
  });
});
