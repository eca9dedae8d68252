// Data kept on a GPU worker's device between tasks, for plans that read the same partition more
// than once (k-means and forest iterations, a groupby after a merge over the same file). Entries
// are keyed by partition (the fragment's source and operators) and evicted least recently used
// first when a new one would pass the worker's byte budget. Entries free their own device buffers.

import type { Fragment } from './fragment.js';

export interface ResidentEntry {
  /** Device bytes the entry holds. */
  readonly bytes: number;
  /** Frees the entry's device buffers (called once, on eviction or clear). */
  release(): void;
}

export class ResidentCache<T extends ResidentEntry = ResidentEntry> {
  private readonly entries = new Map<string, T>(); // Map order = least recently used first
  private used = 0;

  constructor(readonly limitBytes: number) {}

  get bytesUsed(): number { return this.used; }

  get(key: string): T | undefined {
    const e = this.entries.get(key);
    if (e) { this.entries.delete(key); this.entries.set(key, e); }
    return e;
  }

  /** Stores `entry` under `key`, evicting older entries to make room; false (and released) when it alone exceeds the budget. */
  put(key: string, entry: T): boolean {
    this.delete(key);
    if (entry.bytes > this.limitBytes) { entry.release(); return false; }
    for (const [k, e] of this.entries) {
      if (this.used + entry.bytes <= this.limitBytes) break;
      this.entries.delete(k);
      this.used -= e.bytes;
      e.release();
    }
    this.entries.set(key, entry);
    this.used += entry.bytes;
    return true;
  }

  delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.used -= e.bytes;
    e.release();
  }

  clear(): void {
    for (const k of [...this.entries.keys()]) this.delete(k);
  }
}

/** The cache key of a fragment's rows: its file range and operators; null for rows made during the run. */
export function partitionKey(f: Fragment): string | null {
  const s = f.source;
  switch (s.kind) {
    case 'csv':
    case 'parquet':
    case 'arrow':
      return JSON.stringify([s.kind, s.chunk, s.columns, f.ops]);
    default:
      return null;
  }
}
