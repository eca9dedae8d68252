// Thrift's compact protocol, read into a tree and written back unchanged except where edited:
// enough to rewrite a Parquet footer (FileMetaData) without a schema of every field, so fields
// this code does not know (newer writers' statistics, indexes) pass through as they were.
// Spec: https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md

/** Compact protocol type ids. Booleans as struct fields carry their value in the type (TRUE/FALSE). */
export const enum CType { TRUE = 1, FALSE = 2, BYTE = 3, I16 = 4, I32 = 5, I64 = 6, DOUBLE = 7, BINARY = 8, LIST = 9, SET = 10, MAP = 11, STRUCT = 12 }

export type ThriftValue = boolean | number | bigint | Uint8Array | ThriftStruct | ThriftList | ThriftMap;
export interface ThriftField { id: number; type: CType; value: ThriftValue }
export interface ThriftStruct { fields: ThriftField[] }
export interface ThriftList { elementType: CType; items: ThriftValue[] }
export interface ThriftMap { keyType: CType; valueType: CType; entries: [ThriftValue, ThriftValue][] }

class Reader {
  at = 0;
  constructor(private readonly bytes: Uint8Array) {}

  private byte(): number {
    if (this.at >= this.bytes.length) throw new Error('thrift: data ends inside a value');
    return this.bytes[this.at++];
  }
  varint(): bigint {
    let v = 0n, shift = 0n;
    for (;;) {
      const b = this.byte();
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
      shift += 7n;
    }
  }
  zigzag(): bigint {
    const v = this.varint();
    return (v >> 1n) ^ -(v & 1n);
  }

  value(type: CType): ThriftValue {
    switch (type) {
      case CType.TRUE: return this.byte() === 1; // inside a list: one byte, 1 true (2 or 0 false)
      case CType.FALSE: return this.byte() === 1;
      case CType.BYTE: return (this.byte() << 24) >> 24;
      case CType.I16: case CType.I32: return Number(this.zigzag());
      case CType.I64: return this.zigzag();
      case CType.DOUBLE: {
        const v = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.at, 8).getFloat64(0, true);
        this.at += 8;
        return v;
      }
      case CType.BINARY: {
        const n = Number(this.varint());
        if (this.at + n > this.bytes.length) throw new Error('thrift: data ends inside a binary');
        const v = this.bytes.slice(this.at, this.at + n);
        this.at += n;
        return v;
      }
      case CType.LIST: case CType.SET: {
        const head = this.byte();
        const size = head >> 4 === 15 ? Number(this.varint()) : head >> 4;
        if (size > this.bytes.length - this.at) throw new Error('thrift: a list longer than the data');
        const elementType = (head & 15) as CType;
        return { elementType, items: Array.from({ length: size }, () => this.value(elementType)) };
      }
      case CType.MAP: {
        const size = Number(this.varint());
        if (size === 0) return { keyType: CType.BYTE, valueType: CType.BYTE, entries: [] };
        if (size > this.bytes.length - this.at) throw new Error('thrift: a map longer than the data');
        const kinds = this.byte();
        const keyType = (kinds >> 4) as CType, valueType = (kinds & 15) as CType;
        return { keyType, valueType, entries: Array.from({ length: size }, () => [this.value(keyType), this.value(valueType)] as [ThriftValue, ThriftValue]) };
      }
      case CType.STRUCT: return this.struct();
      default: throw new Error(`thrift: unknown type ${type}`);
    }
  }

  struct(): ThriftStruct {
    const fields: ThriftField[] = [];
    let last = 0;
    for (;;) {
      const head = this.byte();
      if (head === 0) return { fields };
      const type = (head & 15) as CType;
      const id = head >> 4 === 0 ? Number(this.zigzag()) : last + (head >> 4);
      last = id;
      const value = type === CType.TRUE || type === CType.FALSE ? type === CType.TRUE : this.value(type);
      fields.push({ id, type, value });
    }
  }
}

class Writer {
  private out: number[] = [];

  bytes(): Uint8Array { return Uint8Array.from(this.out); }
  varint(v: bigint): void {
    let x = BigInt.asUintN(64, v);
    while (x >= 0x80n) { this.out.push(Number(x & 0x7fn) | 0x80); x >>= 7n; }
    this.out.push(Number(x));
  }
  zigzag(v: bigint): void { this.varint((v << 1n) ^ (v >> 63n)); }

  value(type: CType, v: ThriftValue): void {
    switch (type) {
      case CType.TRUE: case CType.FALSE: this.out.push(v ? 1 : 2); return;
      case CType.BYTE: this.out.push((v as number) & 0xff); return;
      case CType.I16: case CType.I32: this.zigzag(BigInt(v as number)); return;
      case CType.I64: this.zigzag(v as bigint); return;
      case CType.DOUBLE: {
        const b = new Uint8Array(8);
        new DataView(b.buffer).setFloat64(0, v as number, true);
        this.out.push(...b);
        return;
      }
      case CType.BINARY: {
        const b = v as Uint8Array;
        this.varint(BigInt(b.length));
        for (const x of b) this.out.push(x);
        return;
      }
      case CType.LIST: case CType.SET: {
        const l = v as ThriftList;
        if (l.items.length < 15) this.out.push((l.items.length << 4) | l.elementType);
        else { this.out.push(0xf0 | l.elementType); this.varint(BigInt(l.items.length)); }
        for (const item of l.items) this.value(l.elementType, item);
        return;
      }
      case CType.MAP: {
        const m = v as ThriftMap;
        this.varint(BigInt(m.entries.length));
        if (m.entries.length === 0) return;
        this.out.push((m.keyType << 4) | m.valueType);
        for (const [k, x] of m.entries) { this.value(m.keyType, k); this.value(m.valueType, x); }
        return;
      }
      case CType.STRUCT: this.struct(v as ThriftStruct); return;
    }
  }

  struct(s: ThriftStruct): void {
    let last = 0;
    for (const f of s.fields) {
      const type = f.type === CType.TRUE || f.type === CType.FALSE ? (f.value ? CType.TRUE : CType.FALSE) : f.type;
      const delta = f.id - last;
      if (delta > 0 && delta <= 15) this.out.push((delta << 4) | type);
      else { this.out.push(type); this.zigzag(BigInt(f.id)); }
      last = f.id;
      if (type !== CType.TRUE && type !== CType.FALSE) this.value(type, f.value);
    }
    this.out.push(0);
  }
}

/** The struct encoded in `bytes` (all of them). */
export function readStruct(bytes: Uint8Array): ThriftStruct {
  const r = new Reader(bytes);
  const s = r.struct();
  if (r.at !== bytes.length) throw new Error(`thrift: ${bytes.length - r.at} bytes after the struct`);
  return s;
}

export function writeStruct(s: ThriftStruct): Uint8Array {
  const w = new Writer();
  w.struct(s);
  return w.bytes();
}

/** Field `id` of struct `s`, or undefined. */
export function field(s: ThriftStruct, id: number): ThriftField | undefined {
  return s.fields.find((f) => f.id === id);
}
