// The CSV reader against DuckDB's read_csv (typed values, nulls, inference) and known answers
// (int64 past 2^53, options, every error with its file, line and column).
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { valueAt, type Batch } from '../src/engine/batch.js';
import { gpuframe } from './helpers/cli.js';
import { DataError, UsageError } from '../src/engine/errors.js';
import {
  DEFAULT_CSV_OPTIONS, inferCsvLayout, materializeCsvInput, planCsvChunks, readCsvChunk, readCsvFile, type CsvOptions,
} from '../src/engine/io/csv/index.js';

const dir = mkdtempSync(join(tmpdir(), 'csv-reader-'));
let fileNo = 0;
function csvFile(text: string | Buffer, name = `f${fileNo++}.csv`): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function rows(batch: Batch): unknown[][] {
  return Array.from({ length: batch.length }, (_, r) => batch.columns.map((c) => valueAt(c, r)));
}

async function read(text: string, opts: Partial<CsvOptions> = {}, blocksize?: number) {
  return readCsvFile(csvFile(text), opts, { blocksize });
}

/** The error thrown by `promise`, checked to be of `kind`. */
async function failure(promise: Promise<unknown>, kind: typeof DataError | typeof UsageError = DataError): Promise<string> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(kind);
  return (err as Error).message;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 4294967296; };
}

/** Random typed rows in many spellings; column types are what inference must find. */
function typedCsv(rows: number, seed: number): string {
  const rand = rng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  const digits = (n: number) => Array.from({ length: n }, () => Math.floor(rand() * 10)).join('');
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const lines = ['id,x,flag,ts,name,mixed'];
  for (let r = 0; r < rows; r++) {
    const id = pick([() => String(Math.floor(rand() * 1000) - 500), () => `-${1 + Number(digits(1))}${digits(17)}`,
      () => `9${digits(15)}`, () => '9223372036854775807', () => '-9223372036854775808', () => `+${digits(3)}`, () => ''])();
    const x = pick([() => `${digits(3)}.${digits(4)}`, () => `-0.00${digits(3)}`, () => `${digits(2)}e${pick(['', '-', '+'])}${digits(2)}`,
      () => `1.${digits(18)}e-300`, () => `.${digits(2)}1`, () => `${1 + Number(digits(1))}.`, () => pick(['inf', '-inf', 'NaN', 'Infinity']),
      () => 'NA', () => digits(17), () => `"${digits(2)}.5"`])();
    const flag = pick(['true', 'False', 'TRUE', 'false', 'null']);
    const date = `${pick(['1900', '1970', '1999', '2024', '2100', '9999', '0001'])}-${pad(1 + Math.floor(rand() * 12))}-${pad(1 + Math.floor(rand() * 28))}`;
    const time = `${pad(Math.floor(rand() * 24))}:${pad(Math.floor(rand() * 60))}:${pad(Math.floor(rand() * 60))}`;
    const ts = pick([date, `${date} ${time}`, `${date}T${time}.${digits(1 + Math.floor(rand() * 6))}`, `${date}T${time}Z`,
      `${date} ${time}+05:30`, `${date}T${time}-08:00`, 'NULL']);
    const name = pick(['plain', '"with, comma"', '"two\nlines"', '"say ""hi"""', '', 'ünïcode', '"NA"', digits(3)]);
    const mixed = pick([digits(2), `${digits(2)}.25`, '']);
    lines.push([id, x, flag, ts, name, mixed].join(','));
  }
  return lines.join('\n') + '\n';
}

async function duckRows(path: string, columns: Record<string, string>): Promise<unknown[][]> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  const cols = Object.entries(columns).map(([k, v]) => `'${k}': '${v}'`).join(', ');
  const reader = await conn.runAndReadAll(`select * from read_csv('${path}', header = true, delim = ',', quote = '"', escape = '"',
    nullstr = ['', 'NA', 'null', 'NULL'], columns = {${cols}})`);
  return reader.getRows().map((row) => row.map((v) => (v !== null && typeof v === 'object' && 'micros' in v ? v.micros : v)));
}

describe('readCsvFile against DuckDB', () => {
  it('infers int64, float64, bool, timestamp, string and reads the same values and nulls as DuckDB', async () => {
    const path = csvFile(typedCsv(3000, 7));
    const duck = await duckRows(path, { id: 'BIGINT', x: 'DOUBLE', flag: 'BOOLEAN', ts: 'TIMESTAMPTZ', name: 'VARCHAR', mixed: 'DOUBLE' });
    for (const blocksize of [7, 1000, 1 << 20]) {
      const { layout, batch } = await readCsvFile(path, {}, { blocksize });
      expect(layout.schema).toEqual([
        { name: 'id', type: 'int64' }, { name: 'x', type: 'float64' }, { name: 'flag', type: 'bool' },
        { name: 'ts', type: 'timestamp' }, { name: 'name', type: 'string' }, { name: 'mixed', type: 'float64' },
      ]);
      expect(rows(batch)).toEqual(duck);
    }
  });

  it('reads only the requested columns, in the requested order', async () => {
    const path = csvFile(typedCsv(500, 9));
    const duck = await duckRows(path, { id: 'BIGINT', x: 'DOUBLE', flag: 'BOOLEAN', ts: 'TIMESTAMPTZ', name: 'VARCHAR', mixed: 'DOUBLE' });
    const { batch } = await readCsvFile(path, {}, { columns: ['name', 'id'], blocksize: 100 });
    expect(batch.schema.map((f) => f.name)).toEqual(['name', 'id']);
    expect(rows(batch)).toEqual(duck.map((r) => [r[4], r[0]]));
  });
});

describe('values', () => {
  it('keeps int64 exact past 2^53 and overflows to float64 past int64', async () => {
    const texts = ['9007199254740993', '-9223372036854775808', '9223372036854775807', '-9007199254740993', '12', '-0', '+7',
      '999999999', '-999999999', '2147483648', '-2147483649', '4294967296', '-4294967296', '9999999999', '123456789012345'];
    const { layout, batch } = await read(`a\n${texts.join('\n')}\n`);
    expect(layout.schema[0].type).toBe('int64');
    expect(rows(batch).flat()).toEqual(texts.map((t) => BigInt(t)));
    const over = await read('a\n9223372036854775808\n1\n');
    expect(over.layout.schema[0].type).toBe('float64');
  });

  it('parses float spellings exactly like Number() and bools case-insensitively but not 0/1', async () => {
    const texts = ['0.1', '1e-5', '-2.5E+3', '.5', '5.', '123456789012345678', '2.2250738585072014e-308', '1.7976931348623157e308', '3.14159265358979323846'];
    const { batch } = await read(`x\n${texts.join('\n')}\ninf\n-INF\nnan\n`);
    expect(rows(batch).flat()).toEqual([...texts.map(Number), Infinity, -Infinity, NaN]);
    expect((await read('b\nTrue\nFALSE\n')).layout.schema[0].type).toBe('bool');
    expect((await read('b\n1\n0\n')).layout.schema[0].type).toBe('int64');
  });

  it('timestamps: dates, times, fractions, Z and offsets as UTC microseconds; bad dates are not timestamps', async () => {
    const { layout, batch } = await read('t\n1970-01-01\n1970-01-01T00:00:01.5\n2000-02-29 12:30:00Z\n2000-03-01T01:00:00+01:00\n1969-12-31 23:59:59.999999\n');
    expect(layout.schema[0].type).toBe('timestamp');
    const micros = (iso: string) => BigInt(Date.parse(iso)) * 1000n;
    expect(rows(batch).flat()).toEqual([0n, 1_500_000n, micros('2000-02-29T12:30:00Z'), micros('2000-03-01T00:00:00Z'), -1n]);
    expect((await read('t\n2001-02-29\n')).layout.schema[0].type).toBe('string');
  });

  it('null values, all-null columns, custom null texts and quoted text', async () => {
    const { layout, batch } = await read('a,b,c\n1,,x\nNA,null,"a ""q"" b"\n3,NULL,""\n');
    expect(layout.schema.map((f) => f.type)).toEqual(['int64', 'string', 'string']);
    expect(rows(batch)).toEqual([[1n, null, 'x'], [null, null, 'a "q" b'], [3n, null, null]]);
    const custom = await read('a,b\n-,\n2,NA\n', { nullValues: ['-'] });
    expect(rows(custom.batch)).toEqual([[null, ''], [2n, 'NA']]);
  });
});

describe('options', () => {
  it('no header, skipped rows, tab delimiter, BOM, CRLF and a last line without newline', async () => {
    const { layout, batch } = await read('\uFEFFjunk line\n"junk ""quoted""\nline"\n1\tx\r\n2\t"y\r\nz"\r\n3\tw', { header: false, skipRows: 2, delimiter: '\t' });
    expect(layout.schema).toEqual([{ name: 'column0', type: 'int64' }, { name: 'column1', type: 'string' }]);
    expect(layout.dataStartLine).toBe(4);
    expect(rows(batch)).toEqual([[1n, 'x'], [2n, 'y\r\nz'], [3n, 'w']]);
  });

  it("quote '' reads quote characters literally; dtypes override inference", async () => {
    const { layout, batch } = await read('h,n\n5\'11",007\n"a",8\n', { quote: '', dtypes: { n: 'string' } });
    expect(layout.schema[1].type).toBe('string');
    expect(rows(batch)).toEqual([['5\'11"', '007'], ['"a"', '8']]);
  });

  it("quote '': an empty last field at the end of the file, a lone CR inside a field, CRLF line ends", async () => {
    const { batch } = await read('a,b\r\nx\ry,1\r\n"q",', { quote: '', dtypes: { a: 'string', b: 'string' } });
    expect(rows(batch)).toEqual([['x\ry', '1'], ['"q"', null]]);
  });

  it('gzip input is recognised by its bytes and decompressed once; a damaged one is named as the user wrote it', async () => {
    const path = csvFile(gzipSync('a,b\n1,x\n2,y\n'), 'data.csv.gz');
    const plain = await materializeCsvInput(path, path, dir);
    expect(plain).not.toBe(path);
    const layout = await inferCsvLayout(plain, path, DEFAULT_CSV_OPTIONS);
    expect(layout.fileSize).toBe(statSync(plain).size);
    const [chunk] = await planCsvChunks(layout, DEFAULT_CSV_OPTIONS, 1 << 20);
    expect(rows(readCsvChunk(chunk, layout, DEFAULT_CSV_OPTIONS, ['b', 'a']))).toEqual([['x', 1n], ['y', 2n]]);
    const notGzip = csvFile('a\n1\n', 'plain.csv.gz');
    expect(await materializeCsvInput(notGzip, notGzip, dir)).toBe(notGzip);
    const damaged = csvFile(gzipSync('a,b\n1,x\n2,y\n').subarray(0, 20), 'damaged.csv.gz');
    await expect(materializeCsvInput(damaged, 'in/damaged.csv.gz', dir)).rejects.toThrow(/^in\/damaged\.csv\.gz: cannot decompress gzip input/);
  });

  it('a header-only file is an empty result of string columns', async () => {
    const { layout, batch } = await read('a,b\n');
    expect(layout.schema).toEqual([{ name: 'a', type: 'string' }, { name: 'b', type: 'string' }]);
    expect(batch.length).toBe(0);
  });

  it('ragged rows: warn and skip drop them (warn says where)', async () => {
    const warnings: string[] = [];
    const path = csvFile('a,b\n1,2\n3\n4,5,6\n7,8\n');
    const warned = await readCsvFile(path, { onBadLines: 'warn' }, { onWarning: (m) => warnings.push(m) });
    expect(rows(warned.batch)).toEqual([[1n, 2n], [7n, 8n]]);
    expect(warnings).toEqual([`${path}:3:2: expected 2 fields, got 1; row skipped`, `${path}:4:3: expected 2 fields, got 3; row skipped`]);
    expect(rows((await readCsvFile(path, { onBadLines: 'skip' })).batch)).toEqual([[1n, 2n], [7n, 8n]]);
  });
});

describe('errors name file, line and column', () => {
  it('ragged row', async () => {
    const path = csvFile('a,b\n1,2\n"x\ny",3\n4\n');
    expect(await failure(readCsvFile(path))).toBe(`${path}:5:2: expected 2 fields, got 1`);
  });

  it('unterminated quote at the end of the file, for every blocksize', async () => {
    const path = csvFile('a,b\n1,2\n3,"open\n\n4,5\n');
    for (const blocksize of [1, 7, 1 << 20]) {
      expect(await failure(readCsvFile(path, {}, { blocksize }))).toBe(`${path}:3:2: unterminated quoted field`);
    }
  });

  it('a value that does not parse as its column type, past the inference sample', async () => {
    const body = Array.from({ length: 25_000 }, (_, i) => `${i},"s\n${i}"`).join('\n');
    const path = csvFile(`n,s\n${body}\nabc,z\n`);
    const message = await failure(readCsvFile(path, {}, { blocksize: 65536 }));
    expect(message).toBe(`${path}:50002:1: cannot parse 'abc' as int64 in column 'n'; read it as text with --dtypes n=string`);
    const typed = await failure(read('a,b\n1,2\n3,x\n', { dtypes: { b: 'float64' } }));
    expect(typed).toMatch(/:3:2: cannot parse 'x' as float64 in column 'b'; read it as text with --dtypes b=string$/);
  });

  it('quote inside an unquoted field and text after a closing quote', async () => {
    expect(await failure(read('a,b\n1,2\n3,ab"c\n'))).toMatch(/:3:2: quote character inside an unquoted field/);
    expect(await failure(read('a,b\n1,"ab"c\n'))).toMatch(/:2:2: unexpected character 'c' after a closing quote$/);
  });

  it('missing file, empty file, duplicate column names', async () => {
    const missing = join(dir, 'nope.csv');
    expect(await failure(readCsvFile(missing))).toBe(`${missing}: no such file: ${missing}`);
    expect(await failure(read(''))).toMatch(/:1: empty file$/);
    expect(await failure(read('a,b,a\n1,2,3\n'))).toMatch(/:1:3: duplicate column name 'a' at columns 1 and 3$/);
  });

  it('unknown column names in dtypes and in the column list are usage errors naming the closest', async () => {
    expect(await failure(read('price,qty\n1,2\n', { dtypes: { prise: 'int64' } }), UsageError)).toMatch(/'prise'.*did you mean 'price'/);
    expect(await failure(readCsvFile(csvFile('price,qty\n1,2\n'), {}, { columns: ['qtty'] }), UsageError)).toMatch(/did you mean 'qty'/);
    expect(await failure(read('a\n1\n', { delimiter: ';;' }), UsageError)).toMatch(/--delimiter must be exactly one byte/);
  });
});

describe('header names, through the CLI on the CPU', () => {
  const cli = (...args: string[]) => gpuframe([...args, '--workers', '0', '--device', 'cpu']);
  async function ok(...args: string[]): Promise<string> {
    const res = await cli(...args);
    expect(res.code, res.stderr).toBe(0);
    return res.stdout;
  }

  it("an empty name is column<i> (i from 0, as --no-header), or column<i>_<n> when the header has that name", async () => {
    expect(await ok('read-csv', csvFile('k,,v\n1,2,3\n'), '--format', 'csv')).toBe('k,column1,v\n1,2,3\n');
    // pandas' to_csv writes its index under an empty name.
    expect(await ok('read-csv', csvFile(',a,b\n0,x,1\n1,y,2\n'), '--format', 'csv')).toBe('column0,a,b\n0,x,1\n1,y,2\n');
    expect(await ok('read-csv', csvFile(',column0\n1,2\n'), '--format', 'csv')).toBe('column0_1,column0\n1,2\n');
    expect(await ok('read-csv', csvFile('k,,column1,column1_1,""\n1,2,3,4,5\n'), '--format', 'csv'))
      .toBe('k,column1_2,column1,column1_1,column4\n1,2,3,4,5\n');
  });

  it('a generated name is a column like the others: --columns, --dtypes, --by', async () => {
    const file = csvFile('k,,v\na,1,2\nb,3,4\na,5,6\n');
    expect(await ok('read-csv', file, '--columns', 'column1,k', '--dtypes', 'column1=float64', '--format', 'csv')).toBe('column1,k\n1.0,a\n3.0,b\n5.0,a\n');
    expect(await ok('groupby', file, '--by', 'column1', '--agg', 'sum(v)', '--format', 'csv')).toBe('column1,sum_v\n1,2\n3,4\n5,6\n');
  });

  it('a name the header gives twice is still an error naming file, line and column', async () => {
    const file = csvFile('a,,a\n1,2,3\n');
    const res = await cli('read-csv', file, '--format', 'csv');
    expect(res.code).toBe(3);
    expect(res.stderr).toBe(`gpuframe: ${file}:1:3: duplicate column name 'a' at columns 1 and 3\n`);
  });
});
