// min / max of any type, skipping nulls; a group with no values gives null. The order is the one
// sort.ts uses (strings by UTF-8 bytes, NaN above every number, -0 == 0). The partial state is a
// column of the current extremes with null where a group has none, so merging is just `add`.
import { int64Words, type Column, type DType, type Int64Column, type StringColumn } from '../../batch.js';
import { compareBytes } from '../sort.js';
import { validityFromFlags, type Accumulator, type AggState } from './state.js';

export class MinMaxAccumulator implements Accumulator {
  private has = new Uint8Array(0);
  private nums = new Float64Array(0); // float64 and bool values
  private words = new Int32Array(0); // int64 / timestamp values as (lo, hi)
  private strings: (Uint8Array | undefined)[] = [];

  /** sign = 1 for max, -1 for min. */
  constructor(private readonly type: DType, private readonly sign: 1 | -1) {}

  ensure(groups: number): void {
    if (groups <= this.has.length) return;
    const cap = Math.max(groups, this.has.length * 2, 16);
    const has = new Uint8Array(cap); has.set(this.has); this.has = has;
    if (this.type === 'float64' || this.type === 'bool') {
      const nums = new Float64Array(cap); nums.set(this.nums); this.nums = nums;
    } else if (this.type === 'int64' || this.type === 'timestamp') {
      const words = new Int32Array(2 * cap); words.set(this.words); this.words = words;
    }
  }

  add(col: Column | null, gids: Int32Array, length: number): void {
    const c = col!;
    const valid = c.valid;
    const { has, sign } = this;
    switch (c.type) {
      case 'float64':
      case 'bool': {
        const v = c.values, nums = this.nums;
        for (let i = 0; i < length; i++) {
          const g = gids[i];
          if (g < 0 || (valid !== null && valid[i] === 0)) continue;
          const x = v[i];
          if (has[g] === 0 || sign * numberOrder(x, nums[g]) > 0) { nums[g] = x; has[g] = 1; }
        }
        return;
      }
      case 'int64':
      case 'timestamp': {
        const w = int64Words(c as Int64Column), words = this.words;
        for (let i = 0; i < length; i++) {
          const g = gids[i];
          if (g < 0 || (valid !== null && valid[i] === 0)) continue;
          const hi = w[2 * i + 1], lo = w[2 * i] >>> 0;
          const chi = words[2 * g + 1], clo = words[2 * g] >>> 0;
          const cmp = hi !== chi ? (hi < chi ? -1 : 1) : lo < clo ? -1 : lo > clo ? 1 : 0;
          if (has[g] === 0 || sign * cmp > 0) { words[2 * g] = w[2 * i]; words[2 * g + 1] = hi; has[g] = 1; }
        }
        return;
      }
      case 'string': {
        const { offsets: o, data } = c as StringColumn;
        const strings = this.strings;
        for (let i = 0; i < length; i++) {
          const g = gids[i];
          if (g < 0 || (valid !== null && valid[i] === 0)) continue;
          const cur = strings[g];
          if (cur === undefined || sign * compareBytes(data, o[i], o[i + 1], cur, 0, cur.length) > 0) {
            strings[g] = data.slice(o[i], o[i + 1]);
          }
        }
        return;
      }
    }
  }

  merge(src: AggState, map: Int32Array): void {
    const col = src.perGroup[0];
    this.add(col, map, map.length);
  }

  state(groups: number): AggState {
    return { perGroup: [this.finalize(groups)], pairs: null };
  }

  finalize(groups: number): Column {
    if (this.type === 'string') {
      const offsets = new Int32Array(groups + 1);
      for (let g = 0; g < groups; g++) offsets[g + 1] = offsets[g] + (this.strings[g]?.length ?? 0);
      const data = new Uint8Array(offsets[groups]);
      for (let g = 0; g < groups; g++) if (this.strings[g]) data.set(this.strings[g]!, offsets[g]);
      const valid = validityFromFlags((g) => this.strings[g] !== undefined, groups);
      return { type: 'string', offsets, data, valid };
    }
    const valid = validityFromFlags((g) => this.has[g] === 1, groups);
    switch (this.type) {
      case 'float64': return { type: 'float64', values: this.nums.slice(0, groups), valid };
      case 'bool': return { type: 'bool', values: Uint8Array.from(this.nums.subarray(0, groups)), valid };
      default: return { type: this.type, values: new BigInt64Array(this.words.buffer.slice(0, groups * 8)), valid };
    }
  }
}

function numberOrder(x: number, y: number): number {
  if (x < y) return -1;
  if (x > y) return 1;
  return (x !== x ? 1 : 0) - (y !== y ? 1 : 0);
}
