// Compares result tables cell by cell: integers exactly, floats within a relative tolerance.

import { expect } from 'vitest';

export type Cell = string | number | bigint | boolean | null;

export function normaliseCell(v: unknown): Cell {
  if (v === null || v === undefined || v === '') return null;
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (typeof v === 'object' && v !== null && 'toString' in v) return String(v);
  return String(v);
}

export function expectCellsClose(actual: Cell, expected: Cell, where: string, rel = 1e-12): void {
  if (expected === null || actual === null) {
    expect(actual, where).toBe(expected);
    return;
  }
  if (typeof expected === 'bigint' || (typeof expected === 'string' && /^-?\d+$/.test(expected) && typeof actual === 'string' && /^-?\d+$/.test(actual))) {
    expect(String(actual), where).toBe(String(expected));
    return;
  }
  const e = Number(expected);
  const a = Number(actual);
  if (typeof expected === 'number' || (!Number.isNaN(e) && !Number.isNaN(a) && typeof expected !== 'boolean')) {
    if (Number.isNaN(e)) { expect(Number.isNaN(a), where).toBe(true); return; }
    const tol = rel * Math.max(1, Math.abs(e));
    expect(Math.abs(a - e), `${where}: ${a} vs ${e}`).toBeLessThanOrEqual(tol);
    return;
  }
  expect(String(actual), where).toBe(String(expected));
}

export function expectTablesClose(actual: Cell[][], expected: Cell[][], rel = 1e-12): void {
  expect(actual.length, 'row count').toBe(expected.length);
  for (let r = 0; r < expected.length; r++) {
    expect(actual[r].length, `row ${r} width`).toBe(expected[r].length);
    for (let c = 0; c < expected[r].length; c++) expectCellsClose(actual[r][c], expected[r][c], `row ${r} col ${c}`, rel);
  }
}
