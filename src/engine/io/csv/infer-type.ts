// Type inference over a sample: the narrowest of bool < int64 < float64 < timestamp < string that
// parses every non-null value. A column with no non-null value in the sample is a string.
import type { DType } from '../../batch.js';
import type { CsvDialect } from './options.js';
import type { FieldTable } from './tokenizer.js';
import { isNanText, isNullField, parseBool, parseFloat64, parseInt64Into } from './field-values.js';
import { parseTimestampInto } from './timestamp.js';

const CANDIDATES: readonly DType[] = ['bool', 'int64', 'float64', 'timestamp'];

/** Does buf[s, e) parse as `type`? Scratch outputs receive the parsed value. */
const scratch = new BigInt64Array(1);
const scratchWords = new Int32Array(scratch.buffer);
function parses(type: DType, buf: Buffer, s: number, e: number): boolean {
  switch (type) {
    case 'bool': return parseBool(buf, s, e) >= 0;
    case 'int64': return parseInt64Into(buf, s, e, scratch, scratchWords, 0);
    case 'float64': { const x = parseFloat64(buf, s, e); return x === x || isNanText(buf, s, e); }
    case 'timestamp': return parseTimestampInto(buf, s, e, scratch, scratchWords, 0);
    case 'string': return true;
  }
}

export function inferColumnType(buf: Buffer, t: FieldTable, column: number, d: CsvDialect): DType {
  let possible = CANDIDATES.slice();
  let sawValue = false;
  for (let r = 0, i = t.index(column, 0); r < t.records && possible.length > 0; r++, i++) {
    const s = t.starts[i], e = t.ends[i];
    if (isNullField(buf, s, e, d)) continue;
    sawValue = true;
    if (s < 0) return 'string'; // doubled quotes inside: text
    possible = possible.filter((type) => parses(type, buf, s, e));
  }
  return sawValue && possible.length > 0 ? possible[0] : 'string';
}
