// Arrow C Data Interface structs (ArrowSchema, ArrowArray) read from a wasm32 memory: how a Parquet
// chunk decoded by parquet-wasm becomes a column batch without an IPC round trip.
//
// Why: through Arrow IPC a chunk was serialised inside wasm, parsed again by apache-arrow and then
// converted; that took longer than decoding the Parquet pages (and loading apache-arrow cost each
// worker ~0.3 s). Here each column's buffers are read where parquet-wasm left them and copied once
// into our layout (arrow-values.ts). Only plain types are taken (the ones formatType knows); a
// file with any other type goes through apache-arrow as before, which also names what it cannot read.
//
// Layout on wasm32 (https://arrow.apache.org/docs/format/CDataInterface.html): pointers are 4 bytes,
// int64 fields 8-byte aligned, little-endian.

import type { Batch, Column, DType, Schema } from '../batch.js';
import { DataError } from '../errors.js';
import {
  copyStrings, decimalValues, float64Values, int64Values, stringBytes, timestampMicros, unpackBits, type ArrowIntArray, type ArrowTimeUnit,
} from './arrow-values.js';

const SCHEMA = { format: 0, name: 4, nChildren: 24, children: 32, dictionary: 36 };
const ARRAY = { length: 0, nullCount: 8, offset: 16, nBuffers: 24, nChildren: 32, buffers: 40, children: 44 };

/** A field of a struct schema: its name ('' where absent) and format string. */
export interface FfiField { name: string; format: string; dictionary: boolean }

/** What a format string holds, as far as this reader converts it. */
type FormatKind =
  | { kind: 'int'; array: new (b: ArrayBuffer, at: number, n: number) => ArrayLike<number | bigint>; bytes: number }
  | { kind: 'float'; bytes: 4 | 8 }
  | { kind: 'decimal'; bitWidth: number; scale: number }
  | { kind: 'string'; large: boolean }
  | { kind: 'bool' }
  | { kind: 'time'; unit: ArrowTimeUnit; bytes: 4 | 8 };

const INTS: Record<string, [new (b: ArrayBuffer, at: number, n: number) => ArrayLike<number | bigint>, number]> = {
  c: [Int8Array, 1], C: [Uint8Array, 1], s: [Int16Array, 2], S: [Uint16Array, 2],
  i: [Int32Array, 4], I: [Uint32Array, 4], l: [BigInt64Array, 8], L: [BigUint64Array, 8],
};
const TIMES: Record<string, [ArrowTimeUnit, 4 | 8]> = {
  tdD: ['day', 4], tdm: ['ms', 8], tss: ['s', 8], tsm: ['ms', 8], tsu: ['us', 8], tsn: ['ns', 8],
};

/** The kind of a format string, or null for one this reader leaves to apache-arrow. */
function formatKind(format: string): FormatKind | null {
  const int = INTS[format];
  if (int) return { kind: 'int', array: int[0], bytes: int[1] };
  if (format === 'f' || format === 'g') return { kind: 'float', bytes: format === 'f' ? 4 : 8 };
  if (format === 'u' || format === 'U') return { kind: 'string', large: format === 'U' };
  if (format === 'b') return { kind: 'bool' };
  const time = TIMES[format.startsWith('ts') ? format.slice(0, 3) : format];
  if (time) return { kind: 'time', unit: time[0], bytes: time[1] };
  const decimal = /^d:(\d+),(\d+)(?:,(128|256))?$/.exec(format);
  if (decimal) return { kind: 'decimal', scale: Number(decimal[2]), bitWidth: Number(decimal[3] ?? 128) };
  return null;
}

const DTYPE_OF_KIND: Record<FormatKind['kind'], DType> = {
  int: 'int64', float: 'float64', decimal: 'float64', string: 'string', bool: 'bool', time: 'timestamp',
};

/** Our type of a field, or null when this reader does not convert it (dictionaries, half floats, nested, ...). */
export function ffiFieldType(field: FfiField): DType | null {
  const kind = field.dictionary ? null : formatKind(field.format);
  return kind === null ? null : DTYPE_OF_KIND[kind.kind];
}

/** Reads structs out of one wasm memory; take a new one after any call into wasm (the memory may grow). */
export class FfiMemory {
  private readonly view: DataView;
  private readonly bytes: Uint8Array;

  constructor(private readonly buffer: ArrayBuffer) {
    this.view = new DataView(buffer);
    this.bytes = new Uint8Array(buffer);
  }

  private ptr(at: number): number { return this.view.getUint32(at, true); }
  private int64(at: number): number { return Number(this.view.getBigInt64(at, true)); }

  private cString(at: number): string {
    if (at === 0) return '';
    let end = at;
    while (this.bytes[end] !== 0) end++;
    return Buffer.from(this.bytes.subarray(at, end)).toString('utf8');
  }

  /** The fields of a struct schema (a record batch's). */
  schemaFields(addr: number): FfiField[] {
    const n = this.int64(addr + SCHEMA.nChildren), children = this.ptr(addr + SCHEMA.children);
    return Array.from({ length: n }, (_, i) => {
      const child = this.ptr(children + 4 * i);
      return { name: this.cString(this.ptr(child + SCHEMA.name)), format: this.cString(this.ptr(child + SCHEMA.format)), dictionary: this.ptr(child + SCHEMA.dictionary) !== 0 };
    });
  }

  /**
   * Our batch of the children at positions `at` of struct arrays `arrays` (a table's record
   * batches, joined), typed and named by `schema`; `fields` are the struct's fields.
   */
  batchOf(arrays: ArrayLike<number>, fields: readonly FfiField[], at: readonly number[], schema: Schema): Batch {
    const structs = Array.from(arrays);
    const lengths = structs.map((addr) => this.int64(addr + ARRAY.length));
    const rows = lengths.reduce((a, b) => a + b, 0);
    const columns = at.map((j, i) => {
      const parts = structs.map((addr) => this.ptr(this.ptr(addr + ARRAY.children) + 4 * j));
      return this.column(parts, lengths, rows, fields[j], schema[i].name);
    });
    return { schema, length: rows, columns };
  }

  /** `count` elements of `Type` at wasm address `at`: a view, or a copy where the address is unaligned. */
  private array<T>(Type: new (b: ArrayBuffer, at: number, n: number) => T, bytes: number, at: number, count: number): T {
    if (at % bytes === 0) return new Type(this.buffer, at, count);
    return new Type(this.bytes.slice(at, at + count * bytes).buffer, 0, count);
  }

  /** A part of a column: one record batch's array (its rows `at`.. of the column). */
  private part(addr: number, at: number): { n: number; offset: number; buffer: (i: number) => number; nulls: number; at: number } {
    const buffers = this.ptr(addr + ARRAY.buffers);
    return {
      n: this.int64(addr + ARRAY.length), offset: this.int64(addr + ARRAY.offset),
      buffer: (i) => this.ptr(buffers + 4 * i), nulls: this.int64(addr + ARRAY.nullCount), at,
    };
  }

  /** One column of `rows` rows from the arrays `addrs` of its record batches (`lengths` rows each), written straight into place. */
  private column(addrs: number[], lengths: number[], rows: number, field: FfiField, name: string): Column {
    const kind = formatKind(field.format);
    if (kind === null || field.dictionary) throw new DataError(`column '${name}' has Arrow format '${field.format}', which the Parquet fast path cannot read`, { column: name });
    let start = 0;
    const parts = addrs.map((addr, b) => { const p = this.part(addr, start); start += lengths[b]; return p; });
    // A null count of -1 means not counted: the bitmap, where present, says.
    let valid: Uint8Array | null = null;
    for (const p of parts) {
      if (p.nulls === 0 || p.buffer(0) === 0) continue;
      valid ??= new Uint8Array(rows).fill(1);
      unpackBits(this.bytes.subarray(p.buffer(0)), p.offset, p.n, valid.subarray(p.at, p.at + p.n));
    }
    const validOf = (p: { at: number; n: number }) => valid?.subarray(p.at, p.at + p.n) ?? null;
    switch (kind.kind) {
      case 'int': {
        const out = new BigInt64Array(rows);
        for (const p of parts) {
          const src = this.array(kind.array, kind.bytes, p.buffer(1) + p.offset * kind.bytes, p.n) as ArrowIntArray;
          int64Values(src, p.n, validOf(p), name, out.subarray(p.at, p.at + p.n));
        }
        return { type: 'int64', values: out, valid };
      }
      case 'float': {
        const out = new Float64Array(rows);
        for (const p of parts) {
          const src = kind.bytes === 8 ? this.array(Float64Array, 8, p.buffer(1) + p.offset * 8, p.n) : this.array(Float32Array, 4, p.buffer(1) + p.offset * 4, p.n);
          float64Values(src, p.n, out.subarray(p.at, p.at + p.n));
        }
        return { type: 'float64', values: out, valid };
      }
      case 'decimal': {
        const out = new Float64Array(rows), words = kind.bitWidth / 32;
        for (const p of parts) decimalValues(this.array(Uint32Array, 4, p.buffer(1) + p.offset * 4 * words, p.n * words), p.n, kind.bitWidth, kind.scale, out.subarray(p.at, p.at + p.n));
        return { type: 'float64', values: out, valid };
      }
      case 'string': {
        const sources = parts.map((p) => (kind.large ? this.array(BigInt64Array, 8, p.buffer(1) + p.offset * 8, p.n + 1) : this.array(Int32Array, 4, p.buffer(1) + p.offset * 4, p.n + 1)));
        const offsets = new Int32Array(rows + 1);
        const data = new Uint8Array(Math.min(0x8000_0000, sources.reduce((s, src, b) => s + stringBytes(src, parts[b].n), 0)));
        parts.forEach((p, b) => copyStrings(sources[b], this.bytes.subarray(p.buffer(2)), p.n, offsets, data, p.at));
        return { type: 'string', offsets, data, valid };
      }
      case 'bool': {
        const out = new Uint8Array(rows);
        for (const p of parts) unpackBits(this.bytes.subarray(p.buffer(1)), p.offset, p.n, out.subarray(p.at, p.at + p.n));
        return { type: 'bool', values: out, valid };
      }
      case 'time': {
        const out = new BigInt64Array(rows);
        for (const p of parts) {
          const src = kind.bytes === 4 ? this.array(Int32Array, 4, p.buffer(1) + p.offset * 4, p.n) : this.array(BigInt64Array, 8, p.buffer(1) + p.offset * 8, p.n);
          timestampMicros(src, kind.unit, p.n, out.subarray(p.at, p.at + p.n));
        }
        return { type: 'timestamp', values: out, valid };
      }
    }
  }
}
