// count() counts rows; count(x) counts non-null x. Counts are exact in a double up to 2^53.
import type { Column } from '../../batch.js';
import { float64Column, floatValues, growFloat64, int64FromCounts, type Accumulator, type AggState } from './state.js';

export class CountAccumulator implements Accumulator {
  private n: Float64Array = new Float64Array(0);

  ensure(groups: number): void {
    this.n = growFloat64(this.n, groups);
  }

  add(col: Column | null, gids: Int32Array, length: number): void {
    const n = this.n;
    const valid = col === null ? null : col.valid;
    for (let i = 0; i < length; i++) {
      const g = gids[i];
      if (g >= 0 && (valid === null || valid[i] === 1)) n[g]++;
    }
  }

  merge(src: AggState, map: Int32Array): void {
    const s = floatValues(src.perGroup[0]);
    for (let g = 0; g < s.length; g++) this.n[map[g]] += s[g];
  }

  state(groups: number): AggState {
    return { perGroup: [float64Column(this.n.slice(0, groups))], pairs: null };
  }

  finalize(groups: number): Column {
    return int64FromCounts(this.n, groups);
  }
}
