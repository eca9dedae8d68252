// Parquet files encoded apart (one row group each, by the workers) joined into one file.
//
// Why: parquet-wasm encodes on one thread, and the parent encoding every row group took 17 s per
// GB of CSV on the H200 machine while 16 workers waited. A part is a whole Parquet file; joining
// copies each part's row group after the previous one, then every part's page indexes together
// (a reader fetches them as one range: interleaved with the row groups, that range was the whole
// file) and one footer listing every row group. Absolute offsets (of pages, column chunks and
// indexes, in the footer and in each offset index) move to where their bytes land; everything
// else is kept as the encoder wrote it, whatever worker made it.
//
// Footer structs and their field ids (parquet.thrift): FileMetaData 3 num_rows, 4 row_groups;
// RowGroup 1 columns, 5 file_offset, 7 ordinal; ColumnChunk 2 file_offset, 3 meta_data,
// 4/5 offset_index_offset/length, 6/7 column_index_offset/length; ColumnMetaData 9
// data_page_offset, 10 index_page_offset, 11 dictionary_page_offset, 14 bloom_filter_offset (none);
// OffsetIndex 1 page_locations; PageLocation 1 offset.

import { CType, field, readStruct, writeStruct, type ThriftList, type ThriftStruct } from './thrift-compact.js';

const MAGIC = Uint8Array.from([0x50, 0x41, 0x52, 0x31]); // PAR1

function isMagic(bytes: Uint8Array, at: number): boolean {
  return MAGIC.every((b, i) => bytes[at + i] === b);
}

function structs(v: ThriftList | undefined): ThriftStruct[] {
  return (v?.items ?? []) as ThriftStruct[];
}

/** Adds delta to the i64 field `id` of `s`, where present. */
function shift(s: ThriftStruct | undefined, id: number, delta: bigint): void {
  const f = s && field(s, id);
  if (f && typeof f.value === 'bigint') f.value += delta;
}

function setInt(s: ThriftStruct, id: number, type: CType.I32 | CType.I64, value: number): void {
  const f = field(s, id);
  const v = type === CType.I64 ? BigInt(value) : value;
  if (f) { f.type = type; f.value = v; return; }
  s.fields.push({ id, type, value: v });
  s.fields.sort((a, b) => a.id - b.id);
}

/** Joins whole Parquet files of the same schema into one: add each in order, then the footer. */
export class ParquetJoiner {
  /** Bytes written so far (the leading magic comes with the first part). */
  private position = 0;
  private rows = 0n;
  private readonly rowGroups: ThriftStruct[] = [];
  private first: ThriftStruct | null = null;
  /** Each column chunk's page indexes, written together before the footer (as one encoder would: a reader fetches them in one range). */
  private readonly indexes: { chunk: ThriftStruct; columns: Uint8Array | null; offsets: Uint8Array | null }[] = [];

  /** The bytes that carry `file`'s row groups into the joined file, to write next. */
  add(file: Uint8Array): Uint8Array[] {
    const n = file.length;
    if (n < 12 || !isMagic(file, 0) || !isMagic(file, n - 4)) throw new Error('a Parquet part has no PAR1 magic');
    const footerLength = new DataView(file.buffer, file.byteOffset + n - 8, 4).getUint32(0, true);
    const footerStart = n - 8 - footerLength;
    const meta = readStruct(file.subarray(footerStart, n - 8));
    this.first ??= meta;
    const pieces: Uint8Array[] = [];
    if (this.position === 0) { pieces.push(MAGIC); this.position = 4; }
    const groups = structs(field(meta, 4)?.value as ThriftList | undefined);
    const chunks = groups.flatMap((g) => structs(field(g, 1)?.value as ThriftList | undefined));
    // The pages end where the first page index starts (the encoder writes the indexes after every row group).
    const indexAt = (c: ThriftStruct, id: number) => { const f = field(c, id); return f ? Number(f.value) : footerStart; };
    const pagesEnd = Math.min(footerStart, ...chunks.flatMap((c) => [indexAt(c, 4), indexAt(c, 6)]));
    const delta = BigInt(this.position - 4);
    pieces.push(file.subarray(4, pagesEnd));
    for (const c of chunks) {
      shift(c, 2, delta);
      const m = field(c, 3)?.value as ThriftStruct | undefined;
      // Bloom filters would lie between the pages and the indexes, which this does not copy (the writer enables none).
      if (m && field(m, 14)) throw new Error('a Parquet part has a bloom filter, which joining does not carry');
      for (const id of [9, 10, 11]) shift(m, id, delta);
      const columnIndex = field(c, 6), columnIndexLength = field(c, 7);
      const offsetIndex = field(c, 4), offsetIndexLength = field(c, 5);
      let offsets: Uint8Array | null = null;
      if (offsetIndex && offsetIndexLength) {
        const from = Number(offsetIndex.value);
        const index = readStruct(file.subarray(from, from + Number(offsetIndexLength.value)));
        for (const page of structs(field(index, 1)?.value as ThriftList | undefined)) shift(page, 1, delta);
        offsets = writeStruct(index);
      }
      const columns = columnIndex && columnIndexLength ? file.slice(Number(columnIndex.value), Number(columnIndex.value) + Number(columnIndexLength.value)) : null;
      this.indexes.push({ chunk: c, columns, offsets });
    }
    for (const g of groups) {
      shift(g, 5, delta);
      const ordinal = field(g, 7);
      if (ordinal) ordinal.value = this.rowGroups.length < 0x8000 ? this.rowGroups.length : ordinal.value;
      this.rowGroups.push(g);
    }
    this.rows += (field(meta, 3)?.value as bigint | undefined) ?? 0n;
    this.position += pagesEnd - 4;
    return pieces;
  }

  /** Whether a part was added (the joined file has a footer to write). */
  get started(): boolean {
    return this.first !== null;
  }

  /**
   * The end of the file: every column chunk's page indexes (column indexes, then offset indexes),
   * then the first part's metadata with every part's rows and row groups, its length and the magic.
   */
  footer(): Uint8Array {
    if (this.first === null) throw new Error('no Parquet part to join');
    const tail: Uint8Array[] = [];
    let at = this.position;
    for (const { chunk, columns } of this.indexes) {
      if (columns === null) continue;
      setInt(chunk, 6, CType.I64, at);
      tail.push(columns);
      at += columns.length;
    }
    for (const { chunk, offsets } of this.indexes) {
      if (offsets === null) continue;
      setInt(chunk, 4, CType.I64, at);
      setInt(chunk, 5, CType.I32, offsets.length);
      tail.push(offsets);
      at += offsets.length;
    }
    const meta: ThriftStruct = { fields: this.first.fields.map((f) => ({ ...f })) };
    setInt(meta, 3, CType.I64, Number(this.rows));
    const groups = field(meta, 4);
    const list: ThriftList = { elementType: CType.STRUCT, items: this.rowGroups };
    if (groups) groups.value = list;
    else { meta.fields.push({ id: 4, type: CType.LIST, value: list }); meta.fields.sort((a, b) => a.id - b.id); }
    const bytes = writeStruct(meta);
    const indexBytes = at - this.position;
    const out = new Uint8Array(indexBytes + bytes.length + 8);
    let o = 0;
    for (const t of tail) { out.set(t, o); o += t.length; }
    out.set(bytes, o);
    new DataView(out.buffer).setUint32(o + bytes.length, bytes.length, true);
    out.set(MAGIC, o + bytes.length + 4);
    return out;
  }
}
