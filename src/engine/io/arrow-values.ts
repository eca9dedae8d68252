// Arrow buffers -> our column values. Shared by the two ways Arrow data arrives: apache-arrow's
// decoded Data (arrow-batch.ts) and C Data Interface structs in parquet-wasm's memory
// (arrow-ffi.ts). Loads no Arrow library. Every function writes arrays of its own, never views of
// its inputs, so the source (wasm memory that is freed next) may go away; `out`, where given, is
// where to write (a part of a larger column: record batches are joined without a second copy).

import type { StringColumn, Validity } from '../batch.js';
import { DataError } from '../errors.js';

/** One byte per row (1 = set) from an Arrow bitmap starting at bit `offset`. */
export function unpackBits(bits: Uint8Array, offset: number, length: number, out: Uint8Array = new Uint8Array(length)): Uint8Array {
  for (let i = 0; i < length; i++) {
    const b = offset + i;
    out[i] = (bits[b >> 3] >> (b & 7)) & 1;
  }
  return out;
}

export type ArrowIntArray = Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array;

/**
 * The first n values of an Arrow integer array as int64. Narrower ints are widened word by word
 * (a BigInt per value ran ~50× slower); a uint64 value past the int64 range is an error.
 */
export function int64Values(src: ArrowIntArray, n: number, valid: Validity, name: string, out: BigInt64Array = new BigInt64Array(n)): BigInt64Array {
  if (src instanceof BigInt64Array) {
    out.set(src.subarray(0, n));
    return out;
  }
  const words = new Int32Array(out.buffer, out.byteOffset, 2 * n);
  if (src instanceof BigUint64Array) {
    const from = new Int32Array(src.buffer, src.byteOffset, 2 * n);
    for (let i = 0; i < n; i++) {
      if (from[2 * i + 1] < 0 && (valid === null || valid[i] === 1)) {
        throw new DataError(`value ${src[i]} of unsigned 64-bit column '${name}' exceeds the int64 range`, { column: name });
      }
    }
    words.set(from);
    return out;
  }
  for (let i = 0; i < n; i++) {
    const v = src[i];
    words[2 * i] = v | 0;
    words[2 * i + 1] = v < 0 ? -1 : 0;
  }
  return out;
}

/** Units of Arrow dates and timestamps: date32 counts days, date64 milliseconds. */
export type ArrowTimeUnit = 'day' | 's' | 'ms' | 'us' | 'ns';

const MICROS_PER: Record<Exclude<ArrowTimeUnit, 'ns'>, bigint> = { day: 86_400_000_000n, s: 1_000_000n, ms: 1_000n, us: 1n };

/** Floor division, so instants before 1970 round towards the past like every other tool. */
function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && (a < 0n) !== (b < 0n) ? q - 1n : q;
}

/** The first n dates or timestamps of `unit` as microseconds since the epoch (UTC). */
export function timestampMicros(src: Int32Array | BigInt64Array, unit: ArrowTimeUnit, n: number, out: BigInt64Array = new BigInt64Array(n)): BigInt64Array {
  if (unit === 'us') return int64Values(src, n, null, '', out);
  if (unit === 'ns') {
    for (let i = 0; i < n; i++) out[i] = floorDiv(BigInt(src[i]), 1000n);
    return out;
  }
  const k = MICROS_PER[unit];
  for (let i = 0; i < n; i++) out[i] = BigInt(src[i]) * k;
  return out;
}

/** A 128/256-bit two's-complement decimal's unscaled value from its little-endian u32 words. */
function decimalUnscaled(words: Uint32Array, at: number, count: number): bigint {
  let v = 0n;
  for (let w = count - 1; w >= 0; w--) v = (v << 32n) | BigInt(words[at + w]);
  return BigInt.asIntN(32 * count, v);
}

/** The first n decimals (bitWidth 128 or 256, little-endian words) as float64. */
export function decimalValues(words: Uint32Array, n: number, bitWidth: number, scale: number, out: Float64Array = new Float64Array(n)): Float64Array {
  const perValue = bitWidth / 32;
  const divisor = 10 ** scale;
  for (let i = 0; i < n; i++) out[i] = Number(decimalUnscaled(words, i * perValue, perValue)) / divisor;
  return out;
}

/** The first n floats as float64: float64 copied, float32 widened. */
export function float64Values(values: Float64Array | Float32Array, n: number, out: Float64Array = new Float64Array(n)): Float64Array {
  out.set(values.subarray(0, n));
  return out;
}

/** Bytes of the n strings that Arrow offsets `src` delimit. */
export function stringBytes(src: Int32Array | BigInt64Array, n: number): number {
  return Number(src[n]) - Number(src[0]);
}

/**
 * Copies n strings (Arrow offsets `src`, 32- or 64-bit, into `data`) to rows at.. of `offsets` and
 * `into`, after the strings already there (offsets[at] must be set); returns the next free byte.
 */
export function copyStrings(src: Int32Array | BigInt64Array, data: Uint8Array, n: number, offsets: Int32Array, into: Uint8Array, at: number): number {
  const base = Number(src[0]), start = offsets[at];
  if (start + stringBytes(src, n) > 0x7fff_ffff) throw new DataError('string column holds more than 2 GiB in one batch; use a smaller --blocksize');
  if (src instanceof Int32Array) {
    for (let i = 1; i <= n; i++) offsets[at + i] = start + (src[i] - base);
  } else {
    for (let i = 1; i <= n; i++) offsets[at + i] = start + (Number(src[i]) - base);
  }
  into.set(data.subarray(base, base + stringBytes(src, n)), start);
  return offsets[at + n];
}

/** A string column of n values from Arrow offsets (32- or 64-bit) into `data`, rebased to 0. */
export function stringColumnOf(src: Int32Array | BigInt64Array, data: Uint8Array, n: number, valid: Validity): StringColumn {
  const offsets = new Int32Array(n + 1), into = new Uint8Array(stringBytes(src, n));
  copyStrings(src, data, n, offsets, into, 0);
  return { type: 'string', offsets, data: into, valid };
}
