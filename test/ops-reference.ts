// Test helpers for the ops tests: seeded data, loading batches into DuckDB (the reference) and
// comparing DuckDB's answers with ours.
import { DuckDBConnection } from '@duckdb/node-api';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { valueAt, type Batch, type DType } from '../src/engine/batch.js';

/** Deterministic PRNG (mulberry32) so failures reproduce. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SQL_TYPE: Record<DType, string> = { int64: 'BIGINT', float64: 'DOUBLE', string: 'VARCHAR', bool: 'BOOLEAN', timestamp: 'BIGINT' };
const dir = mkdtempSync(join(tmpdir(), 'gpuframe-ops-'));
let files = 0;

export async function duckdb(): Promise<DuckDBConnection> {
  return DuckDBConnection.create();
}

/** Creates table `name` holding the batch (through a CSV file under the temp dir). */
export async function loadTable(conn: DuckDBConnection, name: string, batch: Batch): Promise<void> {
  const lines: string[] = [batch.schema.map((f) => f.name).join(',')];
  for (let r = 0; r < batch.length; r++) {
    lines.push(batch.columns.map((c) => {
      const v = valueAt(c, r);
      if (v === null) return '\\N';
      if (typeof v === 'string') return '"' + v.replace(/"/g, '""') + '"';
      return String(v);
    }).join(','));
  }
  const path = join(dir, `t${files++}.csv`);
  writeFileSync(path, lines.join('\n') + '\n');
  const cols = batch.schema.map((f) => `'${f.name}': '${SQL_TYPE[f.type]}'`).join(', ');
  await conn.run(`CREATE OR REPLACE TABLE ${name} AS SELECT * FROM read_csv('${path}', header = true, nullstr = '\\N', quote = '"', escape = '"', columns = {${cols}})`);
}

/** Rows of a query, each a list of JS values (bigint, number, string, boolean, null). */
export async function queryRows(conn: DuckDBConnection, sql: string): Promise<unknown[][]> {
  const reader = await conn.runAndReadAll(sql);
  return reader.getRowsJS() as unknown[][];
}

export function batchRows(batch: Batch): unknown[][] {
  return Array.from({ length: batch.length }, (_, r) => batch.columns.map((c) => valueAt(c, r)));
}

/** Exact for integers, strings, booleans and nulls; floats within `rel` relative. */
export function expectRowsClose(ours: unknown[][], ref: unknown[][], rel = 1e-12): void {
  expect(ours.length).toBe(ref.length);
  for (let r = 0; r < ours.length; r++) {
    for (let c = 0; c < ours[r].length; c++) {
      const a = ours[r][c], b = ref[r][c];
      if (typeof a === 'number' && typeof b === 'number') {
        if (Number.isNaN(a) || Number.isNaN(b) || !Number.isFinite(a)) expect(a, `row ${r} col ${c}`).toBe(b);
        else if (Math.abs(a - b) > rel * Math.max(Math.abs(a), Math.abs(b)) + 1e-300) {
          expect.fail(`row ${r} col ${c}: ${a} vs reference ${b} (row ${JSON.stringify(ours[r], big)})`);
        }
      } else if (typeof a === 'bigint' && typeof b === 'number') {
        expect(a, `row ${r} col ${c}`).toBe(BigInt(b));
      } else if (a !== b) {
        expect.fail(`row ${r} col ${c}: ${String(a)} vs reference ${String(b)} (row ${JSON.stringify(ours[r], big)} vs ${JSON.stringify(ref[r], big)})`);
      }
    }
  }
}

function big(_k: string, v: unknown): unknown {
  return typeof v === 'bigint' ? v.toString() + 'n' : v;
}
