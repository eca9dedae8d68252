// A growable byte buffer that the CSV and JSONL encoders write into directly, so no cell or row
// becomes a JS string on the hot path. Writers that take a length reserve room themselves; the
// string encoders reserve once per cell and then write through local copies of `bytes`/`length`.

/** 10^k for k = 0..16: digit counts and fixed-point fractions of numbers below 2^53. */
export const POW10 = Array.from({ length: 17 }, (_, k) => 10 ** k);

const DIGIT_0 = 0x30;
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
    let capacity = this.bytes.length * 2;
    while (capacity < this.length + n) capacity *= 2;
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
    let n = 1;
    while (n < 16 && v >= POW10[n]) n++;
    this.fixedDigits(v, n);
  }

  /** Exactly `width` digits of a non-negative integer below 10^16, zero-padded on the left. */
  fixedDigits(v: number, width: number): void {
    this.reserve(width);
    const bytes = this.bytes;
    const start = this.length;
    let p = start + width;
    this.length = p;
    // Int32 arithmetic while it fits, doubles (exact for integers below 2^53) beyond.
    while (v > 0x7fffffff) {
      const q = Math.floor(v / 10);
      bytes[--p] = DIGIT_0 + (v - q * 10);
      v = q;
    }
    while (p > start) {
      const q = (v / 10) | 0;
      bytes[--p] = DIGIT_0 + (v - q * 10);
      v = q;
    }
  }

  /** A tight copy of what was written (a view would post the whole backing buffer to the parent). */
  toBytes(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }
}
