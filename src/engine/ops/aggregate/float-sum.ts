// Sum (and mean) of float64 values in double-double per group, rounded once at finalise.
// Non-finite inputs (±Infinity, NaN) go into a separate plain sum: IEEE addition of those is
// order-independent, and they would poison the double-double error terms.
import type { Column } from '../../batch.js';
import { dd, ddAdd, ddDiv, twoSum } from './double-double.js';
import { float64Column, floatValues, growFloat64, validityFromFlags, type Accumulator, type AggState } from './state.js';

export class FloatSumAccumulator implements Accumulator {
  private hi: Float64Array = new Float64Array(0);
  private lo: Float64Array = new Float64Array(0);
  private special: Float64Array = new Float64Array(0);
  private n: Float64Array = new Float64Array(0);

  constructor(private readonly mode: 'sum' | 'mean') {}

  ensure(groups: number): void {
    this.hi = growFloat64(this.hi, groups);
    this.lo = growFloat64(this.lo, groups);
    this.special = growFloat64(this.special, groups);
    this.n = growFloat64(this.n, groups);
  }

  add(col: Column | null, gids: Int32Array, length: number): void {
    const v = floatValues(col!);
    const valid = col!.valid;
    const { hi, lo, special, n } = this;
    for (let i = 0; i < length; i++) {
      const g = gids[i];
      if (g < 0 || (valid !== null && valid[i] === 0)) continue;
      const x = v[i];
      n[g]++;
      if (x - x !== 0) { special[g] += x; continue; } // ±Infinity or NaN
      const s = twoSum(hi[g], x);
      const e = dd.lo + lo[g];
      const h = s + e;
      lo[g] = e - (h - s);
      hi[g] = h;
    }
  }

  merge(src: AggState, map: Int32Array): void {
    const [shi, slo, sspecial, sn] = src.perGroup.map(floatValues);
    for (let g = 0; g < sn.length; g++) {
      const d = map[g];
      this.hi[d] = ddAdd(this.hi[d], this.lo[d], shi[g], slo[g]);
      this.lo[d] = dd.lo;
      this.special[d] += sspecial[g];
      this.n[d] += sn[g];
    }
  }

  state(groups: number): AggState {
    return { perGroup: [this.hi, this.lo, this.special, this.n].map((a) => float64Column(a.slice(0, groups))), pairs: null };
  }

  finalize(groups: number): Column {
    const out = new Float64Array(groups);
    for (let g = 0; g < groups; g++) {
      if (this.n[g] === 0) continue;
      if (this.special[g] !== 0) out[g] = this.special[g];
      else out[g] = this.mode === 'sum' ? this.hi[g] + this.lo[g] : ddDiv(this.hi[g], this.lo[g], this.n[g], 0);
    }
    return { type: 'float64', values: out, valid: validityFromFlags((g) => this.n[g] > 0, groups) };
  }
}
