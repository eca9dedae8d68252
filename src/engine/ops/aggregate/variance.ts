// Sample variance / standard deviation (ddof = 1) from double-double n, S1 = Σx and S2 = Σx²
// (x² exact via TwoProduct): var = (S2 − S1²/n) / (n − 1), all in double-double, rounded once.
// int64 inputs are converted to float64 first (as DuckDB does).
import { int64Words, type Column, type Int64Column } from '../../batch.js';
import { dd, ddAdd, ddDiv, ddMul, twoProduct } from './double-double.js';
import { float64Column, floatValues, growFloat64, validityFromFlags, type Accumulator, type AggState } from './state.js';

export class VarianceAccumulator implements Accumulator {
  private n: Float64Array = new Float64Array(0);
  private s1hi: Float64Array = new Float64Array(0);
  private s1lo: Float64Array = new Float64Array(0);
  private s2hi: Float64Array = new Float64Array(0);
  private s2lo: Float64Array = new Float64Array(0);
  private special: Float64Array = new Float64Array(0); // non-finite inputs make the result NaN

  constructor(private readonly mode: 'var' | 'std') {}

  ensure(groups: number): void {
    this.n = growFloat64(this.n, groups);
    this.s1hi = growFloat64(this.s1hi, groups);
    this.s1lo = growFloat64(this.s1lo, groups);
    this.s2hi = growFloat64(this.s2hi, groups);
    this.s2lo = growFloat64(this.s2lo, groups);
    this.special = growFloat64(this.special, groups);
  }

  add(col: Column | null, gids: Int32Array, length: number): void {
    const c = col!;
    const words = c.type === 'int64' ? int64Words(c as Int64Column) : null;
    const v = c.type === 'float64' ? c.values : new Float64Array(0);
    const valid = c.valid;
    for (let i = 0; i < length; i++) {
      const g = gids[i];
      if (g < 0 || (valid !== null && valid[i] === 0)) continue;
      const x = words !== null ? words[2 * i + 1] * 4294967296 + (words[2 * i] >>> 0) : v[i];
      this.n[g]++;
      if (x - x !== 0) { this.special[g] = NaN; continue; }
      this.s1hi[g] = ddAdd(this.s1hi[g], this.s1lo[g], x, 0);
      this.s1lo[g] = dd.lo;
      const p = twoProduct(x, x);
      this.s2hi[g] = ddAdd(this.s2hi[g], this.s2lo[g], p, dd.lo);
      this.s2lo[g] = dd.lo;
    }
  }

  merge(src: AggState, map: Int32Array): void {
    const [sn, s1hi, s1lo, s2hi, s2lo, special] = src.perGroup.map(floatValues);
    for (let g = 0; g < sn.length; g++) {
      const d = map[g];
      this.n[d] += sn[g];
      this.s1hi[d] = ddAdd(this.s1hi[d], this.s1lo[d], s1hi[g], s1lo[g]);
      this.s1lo[d] = dd.lo;
      this.s2hi[d] = ddAdd(this.s2hi[d], this.s2lo[d], s2hi[g], s2lo[g]);
      this.s2lo[d] = dd.lo;
      this.special[d] += special[g];
    }
  }

  state(groups: number): AggState {
    const arrays = [this.n, this.s1hi, this.s1lo, this.s2hi, this.s2lo, this.special];
    return { perGroup: arrays.map((a) => float64Column(a.slice(0, groups))), pairs: null };
  }

  finalize(groups: number): Column {
    const out = new Float64Array(groups);
    for (let g = 0; g < groups; g++) {
      const n = this.n[g];
      if (n < 2) continue;
      if (this.special[g] !== 0) { out[g] = NaN; continue; }
      const sqHi = ddMul(this.s1hi[g], this.s1lo[g], this.s1hi[g], this.s1lo[g]);
      const meanSqHi = ddDiv(sqHi, dd.lo, n, 0);
      const devHi = ddAdd(this.s2hi[g], this.s2lo[g], -meanSqHi, -dd.lo);
      const variance = Math.max(0, ddDiv(devHi, dd.lo, n - 1, 0));
      out[g] = this.mode === 'var' ? variance : Math.sqrt(variance);
    }
    return { type: 'float64', values: out, valid: validityFromFlags((g) => this.n[g] >= 2, groups) };
  }
}
