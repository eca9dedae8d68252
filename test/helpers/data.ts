// Seeded generators of test CSV files: string and int keys (skewed, with nulls), int64 values
// whose sums pass 2^53, floats with nulls, bools and timestamps.

import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    // xorshift32: small, fast, good enough for test data
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}

export function tempDir(tag: string): string {
  return mkdtempSync(join(tmpdir(), `gpuframe-test-${tag}-`));
}

export interface FactOptions { rows: number; groups: number; seed: number; nullShare?: number; skew?: boolean }

/** Columns: ks (string key), ki (int key), i (int64, large magnitudes), f (float), b (bool), ts (timestamp). */
export function factCsv(path: string, o: FactOptions): void {
  const r = rng(o.seed);
  const nulls = o.nullShare ?? 0.05;
  const lines = ['ks,ki,i,f,b,ts'];
  for (let n = 0; n < o.rows; n++) {
    const g = o.skew ? Math.floor(o.groups * r() ** 3) : Math.floor(o.groups * r());
    const ks = r() < nulls ? '' : `key_${g}${g % 7 === 0 ? ' "q", x' : ''}`;
    const ki = r() < nulls ? '' : String(g - Math.floor(o.groups / 2));
    const big = BigInt(Math.floor((r() - 0.5) * 2 ** 44)) * 1000n + BigInt(Math.floor(r() * 1000));
    const i = r() < nulls ? '' : big.toString();
    const f = r() < nulls ? '' : ((r() - 0.3) * 10 ** Math.floor(r() * 6)).toPrecision(1 + Math.floor(r() * 15));
    const b = r() < nulls ? '' : r() < 0.5 ? 'true' : 'false';
    const t = 1_700_000_000_000 + Math.floor(r() * 1e10);
    const ts = r() < nulls ? '' : new Date(t).toISOString().replace('T', ' ').replace('Z', '');
    lines.push([quote(ks), ki, i, f, b, ts].join(','));
  }
  writeFileSync(path, lines.join('\n') + '\n');
}

function quote(s: string): string {
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
