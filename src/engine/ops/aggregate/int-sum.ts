// Exact sum (and mean) of int64 values without per-row BigInt: each group keeps three doubles,
// lo (sum of unsigned low 32-bit words), hi (sum of signed high words) and top (carries out of hi),
// value = top * 2^64 + hi * 2^32 + lo. Carrying before a word passes 2^52 keeps every double exact.
// BigInt appears only at finalise. A sum outside int64 is a RuntimeFailure: the output type is
// int64 (DuckDB would widen to int128), and a silently rounded float would break exactness.
import { int64Words, type Column, type Int64Column } from '../../batch.js';
import { RuntimeFailure } from '../../errors.js';
import { ddDiv } from './double-double.js';
import { float64Column, floatValues, growFloat64, validityFromFlags, type Accumulator, type AggState } from './state.js';

/** An aggregate whose exact result leaves its type, in group `group` (the caller names the group by its keys). */
export class GroupOverflow extends RuntimeFailure {
  constructor(readonly detail: string, readonly group: number) { super(`${detail} in a group`); }
}

const TWO32 = 4294967296;
const CARRY_AT = 4503599627370496; // 2^52
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

export class IntSumAccumulator implements Accumulator {
  private lo: Float64Array = new Float64Array(0);
  private hi: Float64Array = new Float64Array(0);
  private top: Float64Array = new Float64Array(0);
  private n: Float64Array = new Float64Array(0);

  constructor(private readonly mode: 'sum' | 'mean', private readonly label: string) {}

  ensure(groups: number): void {
    this.lo = growFloat64(this.lo, groups);
    this.hi = growFloat64(this.hi, groups);
    this.top = growFloat64(this.top, groups);
    this.n = growFloat64(this.n, groups);
  }

  add(col: Column | null, gids: Int32Array, length: number): void {
    const w = int64Words(col as Int64Column);
    const valid = col!.valid;
    const { lo, hi, n } = this;
    for (let i = 0; i < length; i++) {
      const g = gids[i];
      if (g < 0 || (valid !== null && valid[i] === 0)) continue;
      n[g]++;
      if ((lo[g] += w[2 * i] >>> 0) >= CARRY_AT) this.carry(g);
      if (Math.abs(hi[g] += w[2 * i + 1]) >= CARRY_AT) this.carry(g);
    }
  }

  private carry(g: number): void {
    const c = Math.floor(this.lo[g] / TWO32);
    this.lo[g] -= c * TWO32;
    this.hi[g] += c;
    const t = Math.trunc(this.hi[g] / TWO32);
    this.hi[g] -= t * TWO32;
    this.top[g] += t;
  }

  merge(src: AggState, map: Int32Array): void {
    const [slo, shi, stop, sn] = src.perGroup.map(floatValues);
    for (let g = 0; g < sn.length; g++) {
      const d = map[g];
      this.lo[d] += slo[g];
      this.hi[d] += shi[g];
      this.top[d] += stop[g];
      this.n[d] += sn[g];
      if (this.lo[d] >= CARRY_AT || Math.abs(this.hi[d]) >= CARRY_AT) this.carry(d);
    }
  }

  state(groups: number): AggState {
    return { perGroup: [this.lo, this.hi, this.top, this.n].map((a) => float64Column(a.slice(0, groups))), pairs: null };
  }

  /** The exact sum of group g. */
  private exact(g: number): bigint {
    return (BigInt(this.top[g]) << 64n) + (BigInt(this.hi[g]) << 32n) + BigInt(this.lo[g]);
  }

  /** Low word of the last sum `highWord` split (in [0, 2^32)). */
  private splitLo = 0;

  /**
   * The high word h of group g's sum = h · 2^32 + splitLo, when h fits in 32 bits (so the sum fits
   * in int64 and its words are (splitLo, h)); null otherwise. Why: BigInt per group cost more than
   * the rest of finalising with millions of groups. The doubles stay exact: lo >= 0 below 2^53,
   * and h lands in 32 bits only when top · 2^32 nearly cancels hi (|hi| < 2^53).
   */
  private highWord(g: number): number | null {
    const c = Math.floor(this.lo[g] / TWO32);
    this.splitLo = this.lo[g] - c * TWO32;
    const h = this.hi[g] + c + this.top[g] * TWO32;
    return h >= -2147483648 && h < 2147483648 ? h : null;
  }

  finalize(groups: number): Column {
    const valid = validityFromFlags((g) => this.n[g] > 0, groups);
    if (this.mode === 'mean') {
      const out = new Float64Array(groups);
      for (let g = 0; g < groups; g++) {
        if (this.n[g] === 0) continue;
        const h = this.highWord(g);
        if (h !== null && Math.abs(h) < 2 ** 20) { // |sum| below 2^52: exact as a double
          out[g] = ddDiv(h * TWO32 + this.splitLo, 0, this.n[g], 0);
          continue;
        }
        const s = this.exact(g);
        const shi = Number(s);
        out[g] = ddDiv(shi, Number(s - BigInt(shi)), this.n[g], 0);
      }
      return { type: 'float64', values: out, valid };
    }
    const out = new BigInt64Array(groups);
    const outWords = new Int32Array(out.buffer);
    for (let g = 0; g < groups; g++) {
      if (this.n[g] === 0) continue;
      const h = this.highWord(g);
      if (h !== null) {
        outWords[2 * g] = this.splitLo | 0;
        outWords[2 * g + 1] = h;
        continue;
      }
      const s = this.exact(g);
      if (s < INT64_MIN || s > INT64_MAX) throw new GroupOverflow(`${this.label} overflows int64 (exact sum ${s})`, g);
      out[g] = s;
    }
    return { type: 'int64', values: out, valid };
  }
}
