// The spill codec of partitioned joins: every column type, nulls, empty batches and unaligned
// reads come back as they went in.
import { describe, expect, test } from 'vitest';
import { columnFromValues, type Batch, type DType } from '../src/engine/batch.js';
import { decodeBatchSpill, encodeBatchSpill } from '../src/engine/exec/batch-spill.js';
import { batchRows } from './ops-reference.js';

function batchOf(fields: [string, DType, unknown[]][]): Batch {
  return { schema: fields.map(([name, type]) => ({ name, type })), length: fields[0][2].length, columns: fields.map(([, type, v]) => columnFromValues(type, v)) };
}

const bytesOf = (parts: Uint8Array[]) => Buffer.concat(parts);

describe('batch spill codec', () => {
  const batch = batchOf([
    ['i', 'int64', [1, null, -(2 ** 62), 2 ** 53 + 1]],
    ['f', 'float64', [0.1, -0, null, Number.NaN]],
    ['s', 'string', ['', null, 'zé', 'a,"b"\n']],
    ['b', 'bool', [true, false, null, true]],
    ['t', 'timestamp', [0, 1_700_000_000_000_000, null, -1]],
  ]);
  const pos = Int32Array.from([7, 3, 9, 0]);

  test('round-trips every type with nulls, and the positions', () => {
    const back = decodeBatchSpill(bytesOf(encodeBatchSpill({ batch, pos })));
    expect(back.batch.schema).toEqual(batch.schema);
    expect(batchRows(back.batch)).toEqual(batchRows(batch));
    expect([...back.pos]).toEqual([...pos]);
    expect(Object.is((back.batch.columns[1].values as Float64Array)[1], -0)).toBe(true);
  });

  test('decodes bytes that start at an unaligned offset (a range read into a shared buffer)', () => {
    const bytes = bytesOf(encodeBatchSpill({ batch, pos }));
    const shifted = new Uint8Array(bytes.length + 3);
    shifted.set(bytes, 3);
    expect(batchRows(decodeBatchSpill(shifted.subarray(3)).batch)).toEqual(batchRows(batch));
  });

  test('an empty batch, and columns without nulls, stay so', () => {
    const empty = batchOf([['i', 'int64', []], ['s', 'string', []]]);
    const back = decodeBatchSpill(bytesOf(encodeBatchSpill({ batch: empty, pos: new Int32Array(0) })));
    expect(back.batch.length).toBe(0);
    expect(back.batch.columns.map((c) => c.valid)).toEqual([null, null]);
    const full = batchOf([['f', 'float64', [1, 2, 3]]]);
    expect(decodeBatchSpill(bytesOf(encodeBatchSpill({ batch: full, pos: Int32Array.from([0, 1, 2]) }))).batch.columns[0].valid).toBeNull();
  });
});
