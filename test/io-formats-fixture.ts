// Shared by the io-arrow, io-parquet and io-output tests: a batch exercising every DType with
// nulls, int64 past 2^53, unicode and CSV-hostile strings, and timestamps before 1970 and with
// microseconds; and DuckDB as the independent reader to compare against.

import { DuckDBInstance } from '@duckdb/node-api';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as Arrow from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { type Batch, type Column, type DType, type Schema, columnFromValues, valueAt } from '../src/engine/batch.js';
import { arrowWriter } from '../src/engine/io/output/arrow-writer.js';
import { AtomicFileSink } from '../src/engine/io/output/byte-sink.js';
// The same copy of apache-arrow as the code under test (its CommonJS build; see apache-arrow.ts).
import { arrow } from '../src/engine/io/apache-arrow.js';

const STRINGS = ['héllo', '日本語', 'emoji 🚀', 'a,b', 'say "hi"', 'two\nlines', ' lead', 'trail ', '', 'plain'];

export function sampleBatch(n: number, offset = 0): Batch {
  const idx = Array.from({ length: n }, (_, k) => k + offset);
  const spec: [string, DType, (i: number) => unknown][] = [
    ['id', 'int64', (i) => BigInt(i)],
    ['big', 'int64', (i) => (i % 5 === 3 ? null : (i % 2 ? -1n : 1n) * (2n ** 53n + BigInt(i) * 1_000_003n) * (i % 7 === 0 ? 1000n : 1n))],
    ['x', 'float64', (i) => (i % 6 === 1 ? null : (i - 3) / 7 * 10 ** ((i % 9) - 4))],
    ['s', 'string', (i) => (i % 11 === 10 ? null : STRINGS[i % STRINGS.length] + (i % 3 === 0 ? '' : String(i)))],
    ['b', 'bool', (i) => (i % 4 === 2 ? null : i % 3 === 0)],
    ['ts', 'timestamp', (i) => (i % 8 === 5 ? null : (BigInt(i) - 20n) * 86_400_000_123n * 13n + BigInt(i % 3) * 500_000n)],
  ];
  const columns: Column[] = spec.map(([, type, f]) => columnFromValues(type, idx.map(f)));
  return { schema: spec.map(([name, type]) => ({ name, type })), length: n, columns };
}

/** A file as the readers take it: the path they open and the name their messages use (the user's spelling). */
export function asGiven(path: string, displayName = path): { path: string; displayName: string } {
  return { path, displayName };
}

/** Rows of a batch as JS values (bigint, number, string, boolean, null), for comparisons. */
export function batchRows(batch: Batch): unknown[][] {
  return Array.from({ length: batch.length }, (_, r) => batch.columns.map((c) => valueAt(c, r)));
}

const DUCK_CAST: Record<DType, (c: string) => string> = {
  int64: (c) => `${c}::BIGINT`,
  float64: (c) => `${c}::DOUBLE`,
  string: (c) => `${c}::VARCHAR`,
  bool: (c) => `${c}::BOOLEAN`,
  timestamp: (c) => `epoch_us(${c}::TIMESTAMP)`,
};

let duck: Promise<import('@duckdb/node-api').DuckDBConnection> | null = null;
export function duckdb() {
  duck ??= DuckDBInstance.create(':memory:').then((db) => db.connect());
  return duck;
}

/** Rows of `relation` (a DuckDB table expression) read the way `batch` types its columns. */
export async function duckRowsLike(batch: Batch, relation: string): Promise<unknown[][]> {
  const cols = batch.schema.map((f) => DUCK_CAST[f.type](`"${f.name}"`)).join(', ');
  const reader = await (await duckdb()).runAndReadAll(`SELECT ${cols} FROM ${relation}`);
  return reader.getRows() as unknown[][];
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `gpuframe-${prefix}-`));
}

/** A column of `fieldsTable`: its name as the file gives it ('' and repeated names allowed), and its values. */
export interface NamedColumn { name: string; type: 'int64' | 'float64' | 'string'; values: (bigint | number | string | null)[] }

/**
 * An Arrow table holding the columns under exactly the names given, split into record batches of
 * `batchRows` rows. apache-arrow's RecordBatch constructor merges fields of one name in its schema
 * (Schema.assign: the first takes the type of the last), so each batch's schema is set back to the
 * one given, and its writers write the fields as given (its data keeps each column's own type).
 * apache-arrow writes an empty name by leaving the name out, as other Arrow writers may.
 */
/**
 * Fields with empty names for the Arrow and Parquet readers' naming rule: two empty names of
 * different types, and a name ('column0') the first generated one would take. `names` are the
 * columns the readers give them; `rows(picked)` the values of the picked columns, row by row.
 */
export const EMPTY_NAMED_FIELDS: NamedColumn[] = [
  { name: '', type: 'int64', values: [1n, 2n, null, 4n, 5n] },
  { name: 'k', type: 'string', values: ['a', 'b', 'a', null, 'c'] },
  { name: '', type: 'string', values: ['x', null, 'y', 'z', 'w'] },
  { name: 'column0', type: 'int64', values: [10n, 20n, 30n, 40n, 50n] },
  { name: '', type: 'float64', values: [0.5, 1.5, 2.5, 3.5, 4.5] },
];
export const EMPTY_NAMED_FIELD_NAMES = ['column0_1', 'k', 'column2', 'column0', 'column4'];
export const emptyNamedRows = (picked: number[]) => EMPTY_NAMED_FIELDS[0].values.map((_, r) => picked.map((c) => EMPTY_NAMED_FIELDS[c].values[r]));

export function fieldsTable(columns: NamedColumn[], batchRows = Infinity): Arrow.Table {
  const typeOf = (c: NamedColumn): Arrow.DataType => (c.type === 'int64' ? new arrow.Int64() : c.type === 'float64' ? new arrow.Float64() : new arrow.Utf8());
  const fields = columns.map((c) => new arrow.Field(c.name, typeOf(c), true));
  const schema = new arrow.Schema(fields);
  const rows = columns[0].values.length;
  const batches: Arrow.RecordBatch[] = [];
  for (let start = 0; start < rows; start += Math.min(batchRows, rows)) {
    const end = Math.min(rows, start + batchRows);
    const children = columns.map((c) => arrow.vectorFromArray(c.values.slice(start, end), typeOf(c)).data[0]);
    const rb = new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(fields), length: end - start, nullCount: 0, children }));
    (rb as { schema: Arrow.Schema }).schema = schema;
    batches.push(rb);
  }
  return new arrow.Table(batches);
}

/** `table` as Parquet written by arrow-rs (parquet-wasm) from apache-arrow's IPC stream, one row group per `rowGroupRows` rows. */
export function parquetOf(table: Arrow.Table, rowGroupRows?: number): Uint8Array {
  const props = rowGroupRows === undefined ? undefined : new pw.WriterPropertiesBuilder().setMaxRowGroupSize(rowGroupRows).build();
  return pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(table, 'stream')), props);
}

/**
 * An .arrow file writer that writes one record batch per batch given: openFileWriter cuts its own
 * (of 2^18 rows), and tests of the Arrow readers need several small, uneven ones.
 */
export async function openArrowBatchWriter(path: string, schema: Schema) {
  return arrowWriter(await AtomicFileSink.open(path), schema, 'file');
}
