// Memory a process reuses from one chunk to the next. A chunk's raw bytes, its field table and its
// encoded text are garbage as soon as the chunk's columns (or its encoded file) exist, and the next
// chunk needs the same sizes again. Fresh memory costs a page fault per 4 KiB on first touch: about
// 0.5 ms a MB on the H200 machine and 5 ms a MB on a 2-core VM, against ~0.15 ms a MB to fill
// memory already mapped; a CSV chunk used to take ~6× its size in fresh memory.
//
// What `reuse` returns belongs to its caller until the next call with the same name; callers use
// it within one synchronous step (read, tokenize, build columns; encode, write) and keep nothing.

const held = new Map<string, unknown>();

/** The object kept under `name` when `fits` accepts it, else a new one from `make` (then kept). */
export function reuse<T>(name: string, fits: (kept: T) => boolean, make: () => T): T {
  const kept = held.get(name) as T | undefined;
  if (kept !== undefined && fits(kept)) return kept;
  const made = make();
  held.set(name, made);
  return made;
}

/** A buffer of exactly `length` bytes (a view of the one kept under `name`; its contents are stale). */
export function reuseBytes(name: string, length: number): Buffer {
  // A quarter to spare: the next chunk is usually a few bytes longer or shorter.
  return reuse(name, (b: Buffer) => b.length >= length, () => Buffer.allocUnsafe(length + (length >> 2))).subarray(0, length);
}

/** Drops everything kept, for a worker over its share of --memory-limit. */
export function releaseScratch(): void {
  held.clear();
}
