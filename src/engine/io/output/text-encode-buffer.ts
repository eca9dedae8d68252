// A growable byte buffer that the CSV and JSONL encoders write into directly, so no cell or row
// becomes a JS string on the hot path. Writers that take a length reserve room themselves; the
// string encoders reserve once per cell and then write through local copies of `bytes`/`length`.

/** 10^k for k = 0..16: digit counts of integers beyond int32 (below 10^16). */
const POW10 = Array.from({ length: 17 }, (_, k) => 10 ** k);

const DIGIT_0 = 0x30;
/** '00' '01' ... '99' as byte pairs. */
const DIGIT_PAIRS = Uint8Array.from({ length: 200 }, (_, k) => DIGIT_0 + (k & 1 ? (k >> 1) % 10 : Math.floor((k >> 1) / 10)));
const MINUS = 0x2d;

export class ByteBuffer {
  bytes: Uint8Array;
  length = 0;

  constructor(capacity: number) {
    this.bytes = new Uint8Array(Math.max(64, capacity));
  }

  /** Makes room for `n` more bytes. */
  reserve(n: number): void {
    if (this.length + n > this.bytes.length) this.grow(n);
  }

  private grow(n: number): void {
    const capacity = Math.max(this.bytes.length * 2, this.length + n);
    const next = new Uint8Array(capacity);
    next.set(this.bytes.subarray(0, this.length));
    this.bytes = next;
  }

  byte(b: number): void {
    if (this.length === this.bytes.length) this.grow(1);
    this.bytes[this.length++] = b;
  }

  /** Appends a constant byte run (separators, keys, 'true'/'false'). */
  append(run: Uint8Array): void {
    this.reserve(run.length);
    const bytes = this.bytes;
    let p = this.length;
    for (let k = 0; k < run.length; k++) bytes[p++] = run[k];
    this.length = p;
  }

  /** Appends a string known to be ASCII (number text from the formatting functions). */
  ascii(s: string): void {
    this.reserve(s.length);
    const bytes = this.bytes;
    let p = this.length;
    for (let k = 0; k < s.length; k++) bytes[p++] = s.charCodeAt(k);
    this.length = p;
  }

  /** Decimal digits of an integer with |v| < 10^16 (every int64 below 2^53 qualifies). */
  integer(v: number): void {
    this.reserve(17);
    if (v < 0) {
      this.bytes[this.length++] = MINUS;
      v = -v;
    }
    this.fixedDigits(v, v < 0x80000000 ? int32Digits(v | 0) : digits(v));
  }

  /** Exactly `width` digits of a non-negative integer below 10^16, zero-padded on the left. */
  fixedDigits(v: number, width: number): void {
    this.reserve(width);
    this.length = putDigits(this.bytes, this.length, v, width);
  }

  /** What was written, as a view: valid until the buffer is written to or cleared again. */
  view(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }

  /** Empties the buffer, keeping its memory for reuse. */
  clear(): this {
    this.length = 0;
    return this;
  }
}

/** Decimal digits of a non-negative int32 (a comparison chain: no table, no division). */
function int32Digits(w: number): number {
  if (w < 10000) return w < 10 ? 1 : w < 100 ? 2 : w < 1000 ? 3 : 4;
  if (w < 100000000) return w < 100000 ? 5 : w < 1000000 ? 6 : w < 10000000 ? 7 : 8;
  return w < 1000000000 ? 9 : 10;
}

/** Decimal digits of a non-negative integer below 10^16. */
function digits(v: number): number {
  let n = 1;
  while (n < 16 && v >= POW10[n]) n++;
  return n;
}

/** Writes exactly `width` digits of a non-negative integer v below 10^16 (zero-padded on the
 *  left) at bytes[p..p+width), which the caller has reserved; returns p + width. */
export function putDigits(bytes: Uint8Array, p: number, v: number, width: number): number {
  const start = p;
  p += width;
  const end = p;
  // Doubles (exact for integers below 2^53) while the value is beyond int32, then int32
  // arithmetic two digits at a time.
  while (v > 0x7fffffff) {
    const q = Math.floor(v / 10);
    bytes[--p] = DIGIT_0 + (v - q * 10);
    v = q;
  }
  let w = v | 0;
  while (p - start >= 2) {
    const q = (w / 100) | 0;
    const pair = (w - q * 100) << 1;
    bytes[--p] = DIGIT_PAIRS[pair + 1];
    bytes[--p] = DIGIT_PAIRS[pair];
    w = q;
  }
  if (p > start) bytes[--p] = DIGIT_0 + w;
  return end;
}
