// DuckDB as the independent reference for dataframe results.

import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';

let conn: Promise<DuckDBConnection> | null = null;

export function duckdb(): Promise<DuckDBConnection> {
  conn ??= DuckDBInstance.create(':memory:', { threads: '2' }).then((db) => db.connect());
  return conn;
}

/** Runs SQL and returns rows as arrays of JS values (BIGINT/HUGEINT as bigint). */
export async function query(sql: string): Promise<unknown[][]> {
  const c = await duckdb();
  const reader = await c.runAndReadAll(sql);
  return reader.getRows() as unknown[][];
}

export async function queryColumns(sql: string): Promise<{ names: string[]; rows: unknown[][] }> {
  const c = await duckdb();
  const reader = await c.runAndReadAll(sql);
  return { names: reader.columnNames(), rows: reader.getRows() as unknown[][] };
}
