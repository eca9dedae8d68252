// Compares result tables cell by cell: integers exactly, floats within a relative tolerance.
// Cells are checked with plain code and only a mismatch goes through expect(), so tables of a
// million rows compare in well under a second.

import { expect } from 'vitest';

export type Cell = string | number | bigint | boolean | null;

export function normaliseCell(v: unknown): Cell {
  if (v === null || v === undefined || v === '') return null;
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean') return v;
  return String(v);
}

const INTEGER = /^-?\d+$/;

/** Why two cells differ, or null when they agree. */
export function cellMismatch(actual: Cell, expected: Cell, rel = 1e-12): string | null {
  if (expected === null || actual === null) return actual === expected ? null : `${actual} vs ${expected}`;
  const a = String(actual), e = String(expected);
  if (typeof expected === 'bigint' || (INTEGER.test(e) && INTEGER.test(a))) return a === e ? null : `${a} vs ${e} (integers must match exactly)`;
  const an = Number(actual), en = Number(expected);
  if (typeof expected !== 'boolean' && !Number.isNaN(an) && !Number.isNaN(en)) {
    const tol = rel * Math.max(1, Math.abs(en));
    return Math.abs(an - en) <= tol ? null : `${an} vs ${en} (tolerance ${tol})`;
  }
  if (typeof expected === 'number' && Number.isNaN(expected)) return Number.isNaN(an) ? null : `${a} vs NaN`;
  return a === e ? null : `'${a}' vs '${e}'`;
}

export function expectCellsClose(actual: Cell, expected: Cell, where: string, rel = 1e-12): void {
  const why = cellMismatch(actual, expected, rel);
  if (why !== null) expect.fail(`${where}: ${why}`);
}

export function expectTablesClose(actual: Cell[][], expected: Cell[][], rel = 1e-12): void {
  expect(actual.length, 'row count').toBe(expected.length);
  for (let r = 0; r < expected.length; r++) {
    if (actual[r].length !== expected[r].length) expect.fail(`row ${r}: ${actual[r].length} cells vs ${expected[r].length}`);
    for (let c = 0; c < expected[r].length; c++) {
      const why = cellMismatch(actual[r][c], expected[r][c], rel);
      if (why !== null) expect.fail(`row ${r} col ${c}: ${why}`);
    }
  }
}
