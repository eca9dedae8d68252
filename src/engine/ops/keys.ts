// Key machinery shared by groupby and merge: vectorised hashing of key columns and a hash table
// that maps key tuples to dense ids with full equality checks (a hash collision never merges keys).
//
// Numbers hash by their float64 value (int64 converted with one rounding, -0 as 0, one NaN), so an
// int64 key and a float64 key that are equal as numbers hash alike: merge compares mixed int64/float64
// keys as float64, and both sides of a partitioned join must land in the same bucket.
import { int64Words, type Column, type DType, type Int64Column, type StringColumn, type TimestampColumn } from '../batch.js';

const NULL_HASH = 0x9e3779b9 | 0;
const SEED = 0x3c6ef372 | 0;

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

/** One murmur3 mixing round: folds 32-bit word k into hash h. */
function mixWord(h: number, k: number): number {
  k = Math.imul(k, 0xcc9e2d51);
  k = rotl(k, 15);
  k = Math.imul(k, 0x1b873593);
  h ^= k;
  h = rotl(h, 13);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** murmur3's finaliser: spreads every input bit over the whole word. */
function finalMix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Canonical float64 key value: -0 becomes 0 and every NaN the same NaN. */
export function canonicalFloat(x: number): number {
  return x === 0 ? 0 : x !== x ? NaN : x;
}

/** The numeric key values of a non-string column as float64 (for hashing only). */
function numericAsFloat(col: Exclude<Column, StringColumn>, length: number): Float64Array {
  const out = new Float64Array(length);
  if (col.type === 'int64' || col.type === 'timestamp') {
    const w = int64Words(col);
    for (let i = 0; i < length; i++) out[i] = w[2 * i + 1] * 4294967296 + (w[2 * i] >>> 0);
  } else if (col.type === 'float64') {
    const v = col.values;
    for (let i = 0; i < length; i++) out[i] = canonicalFloat(v[i]);
  } else {
    out.set(col.values.subarray(0, length));
  }
  return out;
}

/** h mixed with the UTF-8 bytes of row i of a string column (its length too, so that 'a' + '' and '' + 'a' differ). */
function mixString(h: number, offsets: Int32Array, data: Uint8Array, i: number): number {
  let x = h | 0;
  const end = offsets[i + 1];
  let p = offsets[i];
  for (; p + 4 <= end; p += 4) x = mixWord(x, data[p] | (data[p + 1] << 8) | (data[p + 2] << 16) | (data[p + 3] << 24));
  let tail = 0;
  for (let s = 0; p < end; p++, s += 8) tail |= data[p] << s;
  return mixWord(mixWord(x, tail), end - offsets[i]);
}

function mixColumn(h: Uint32Array, col: Column, length: number): void {
  const valid = col.valid;
  if (col.type === 'string') {
    const { offsets, data } = col;
    for (let i = 0; i < length; i++) h[i] = valid !== null && valid[i] === 0 ? mixWord(h[i], NULL_HASH) : mixString(h[i], offsets, data, i);
    return;
  }
  const f = numericAsFloat(col, length);
  const words = new Int32Array(f.buffer);
  if (valid === null) {
    for (let i = 0; i < length; i++) h[i] = mixWord(mixWord(h[i], words[2 * i]), words[2 * i + 1]);
    return;
  }
  for (let i = 0; i < length; i++) {
    if (valid[i] === 0) h[i] = mixWord(h[i], NULL_HASH);
    else h[i] = mixWord(mixWord(h[i], words[2 * i]), words[2 * i + 1]);
  }
}

/** Hash of each row's key tuple (rows 0..length of the given key columns). */
export function hashKeys(cols: readonly Column[], length: number): Uint32Array {
  if (cols.length === 1 && cols[0].type === 'string') return hashStrings(cols[0], length);
  const h = new Uint32Array(length).fill(SEED);
  for (const c of cols) mixColumn(h, c, length);
  for (let i = 0; i < length; i++) h[i] = finalMix(h[i]);
  return h;
}

/** hashKeys of one string column in one pass (the same hashes; a group-by's most common key). */
function hashStrings(col: StringColumn, length: number): Uint32Array {
  const h = new Uint32Array(length);
  const { offsets, data, valid } = col;
  for (let i = 0; i < length; i++) h[i] = finalMix(valid !== null && valid[i] === 0 ? mixWord(SEED, NULL_HASH) : mixString(SEED, offsets, data, i));
  return h;
}

/** Bucket in [0, parts) of a key hash; uses the high bits (hash tables use the low bits). */
export function bucketOf(hash: number, parts: number): number {
  return Math.floor((hash / 4294967296) * parts);
}

/** Rows where any key column is null (such keys never match in a join; groupby may drop them). */
export function nullKeyMask(cols: readonly Column[], length: number): Uint8Array | null {
  let mask: Uint8Array | null = null;
  for (const c of cols) {
    if (c.valid === null) continue;
    mask ??= new Uint8Array(length);
    for (let i = 0; i < length; i++) if (c.valid[i] === 0) mask[i] = 1;
  }
  return mask;
}

// ---- Key stores: one growable column of distinct key values per key column ----

interface KeyStore {
  /** Sets the column that the next push/equals calls read rows from (once per batch, not per row). */
  bind(col: Column): void;
  /** Appends row `row` of the bound column as the value of the next id. */
  push(row: number): void;
  /** Whether row `row` of the bound column equals stored id `id` (null equals null). */
  equals(row: number, id: number): boolean;
  /** The stored values as a column of `length` rows. */
  toColumn(length: number): Column;
}

function grow<T extends Uint8Array | Int32Array | Uint32Array | Float64Array>(a: T, need: number): T {
  if (need <= a.length) return a;
  const b = new (a.constructor as { new (n: number): T })(Math.max(need, a.length * 2));
  b.set(a);
  return b;
}

class ValidityStore {
  valid = new Uint8Array(16);
  hasNull = false;
  size = 0;
  probe: Uint8Array | null = null;
  /** Records presence of row `row` of the bound column; returns whether it is present. */
  push(row: number): boolean {
    const ok = this.probe === null || this.probe[row] === 1;
    this.valid = grow(this.valid, this.size + 1);
    this.valid[this.size++] = ok ? 1 : 0;
    if (!ok) this.hasNull = true;
    return ok;
  }
  /** Both null: 1, exactly one null: 0, both present: -1 (compare values). */
  nullMatch(row: number, id: number): number {
    const a = this.probe === null || this.probe[row] === 1;
    const b = this.valid[id] === 1;
    return a && b ? -1 : a === b ? 1 : 0;
  }
  toValidity(length: number): Uint8Array | null {
    return this.hasNull ? this.valid.slice(0, length) : null;
  }
}

function int64AsFloats(col: Int64Column): Float64Array {
  const w = int64Words(col);
  const out = new Float64Array(col.values.length);
  for (let i = 0; i < out.length; i++) out[i] = w[2 * i + 1] * 4294967296 + (w[2 * i] >>> 0);
  return out;
}

class Int64Store implements KeyStore {
  words = new Int32Array(32);
  readonly v = new ValidityStore();
  probeWords: Int32Array = new Int32Array(0);
  private probeFloats: Float64Array | null = null; // a float64 probe column (mixed-type join keys)
  constructor(private readonly type: 'int64' | 'timestamp') {}
  bind(col: Column): void {
    this.v.probe = col.valid;
    this.probeFloats = col.type === 'float64' ? col.values : null;
    if (col.type !== 'float64') this.probeWords = int64Words(col as Int64Column | TimestampColumn);
  }
  push(row: number): void {
    const i = this.v.size;
    this.words = grow(this.words, 2 * i + 2);
    if (this.v.push(row)) {
      this.words[2 * i] = this.probeWords[2 * row];
      this.words[2 * i + 1] = this.probeWords[2 * row + 1];
    }
  }
  equals(row: number, id: number): boolean {
    const m = this.v.nullMatch(row, id);
    if (m >= 0) return m === 1;
    if (this.probeFloats !== null) return this.probeFloats[row] === this.words[2 * id + 1] * 4294967296 + (this.words[2 * id] >>> 0);
    const w = this.probeWords;
    return w[2 * row] === this.words[2 * id] && w[2 * row + 1] === this.words[2 * id + 1];
  }
  toColumn(length: number): Column {
    const values = new BigInt64Array(this.words.buffer.slice(0, length * 8));
    return { type: this.type, values, valid: this.v.toValidity(length) };
  }
}

class FloatStore implements KeyStore {
  private values = new Float64Array(16);
  private v = new ValidityStore();
  private probe: Float64Array = new Float64Array(0);
  bind(col: Column): void {
    this.v.probe = col.valid;
    // An int64 probe column (mixed-type join keys) compares as float64.
    this.probe = col.type === 'float64' ? col.values : int64AsFloats(col as Int64Column);
  }
  push(row: number): void {
    const i = this.v.size;
    this.values = grow(this.values, i + 1);
    if (this.v.push(row)) this.values[i] = canonicalFloat(this.probe[row]);
  }
  equals(row: number, id: number): boolean {
    const m = this.v.nullMatch(row, id);
    if (m >= 0) return m === 1;
    const a = this.probe[row];
    const b = this.values[id];
    return a === b || (a !== a && b !== b);
  }
  toColumn(length: number): Column {
    return { type: 'float64', values: this.values.slice(0, length), valid: this.v.toValidity(length) };
  }
}

class BoolStore implements KeyStore {
  private values = new Uint8Array(16);
  private v = new ValidityStore();
  private probe: Uint8Array = new Uint8Array(0);
  bind(col: Column): void {
    this.v.probe = col.valid;
    this.probe = (col as { values: Uint8Array }).values;
  }
  push(row: number): void {
    const i = this.v.size;
    this.values = grow(this.values, i + 1);
    if (this.v.push(row)) this.values[i] = this.probe[row];
  }
  equals(row: number, id: number): boolean {
    const m = this.v.nullMatch(row, id);
    if (m >= 0) return m === 1;
    return this.probe[row] === this.values[id];
  }
  toColumn(length: number): Column {
    return { type: 'bool', values: this.values.slice(0, length), valid: this.v.toValidity(length) };
  }
}

class StringStore implements KeyStore {
  offsets = new Int32Array(17);
  data = new Uint8Array(256);
  readonly v = new ValidityStore();
  probe: StringColumn = { type: 'string', offsets: new Int32Array(1), data: new Uint8Array(0), valid: null };
  bind(col: Column): void {
    this.v.probe = col.valid;
    this.probe = col as StringColumn;
  }
  push(row: number): void {
    const i = this.v.size;
    const s = this.probe;
    this.offsets = grow(this.offsets, i + 2);
    const start = this.offsets[i];
    if (this.v.push(row)) {
      const from = s.offsets[row], len = s.offsets[row + 1] - from;
      const data = (this.data = grow(this.data, start + len)), src = s.data;
      // Short keys byte by byte: a subarray per new key was 7% of a group-by with 940k groups.
      if (len <= 64) for (let k = 0; k < len; k++) data[start + k] = src[from + k];
      else data.set(src.subarray(from, from + len), start);
      this.offsets[i + 1] = start + len;
    } else {
      this.offsets[i + 1] = start;
    }
  }
  equals(row: number, id: number): boolean {
    const m = this.v.nullMatch(row, id);
    if (m >= 0) return m === 1;
    const s = this.probe;
    const a = s.offsets[row], len = s.offsets[row + 1] - a;
    const b = this.offsets[id];
    if (this.offsets[id + 1] - b !== len) return false;
    for (let k = 0; k < len; k++) if (s.data[a + k] !== this.data[b + k]) return false;
    return true;
  }
  toColumn(length: number): Column {
    const offsets = this.offsets.slice(0, length + 1);
    return { type: 'string', offsets, data: this.data.slice(0, offsets[length]), valid: this.v.toValidity(length) };
  }
}

function storeFor(type: DType): KeyStore {
  switch (type) {
    case 'int64':
    case 'timestamp': return new Int64Store(type);
    case 'float64': return new FloatStore();
    case 'bool': return new BoolStore();
    case 'string': return new StringStore();
  }
}

/**
 * Open-addressing hash table from key tuples to dense ids 0, 1, 2, ... in first-seen order.
 * Stores a copy of each distinct key, so it holds no reference to the batches it saw.
 * Probe columns may be int64 where the stored key is float64 or the other way round: they compare as float64.
 */
export class KeyTable {
  size = 0;
  private readonly stores: KeyStore[];
  /** Slot s holds [id, hash] at 2s, 2s+1 (id -1 = empty): the hash check costs no extra cache miss. */
  private slots = new Int32Array(2048).fill(-1);
  private mask = 1023;
  private idHashes = new Uint32Array(256);

  constructor(readonly types: readonly DType[]) {
    this.stores = types.map(storeFor);
  }

  /**
   * Makes room for `keys` keys in all without rehashing on the way (a merge knows how many keys
   * can come: a table grown by doubling rehashed every key about twice).
   */
  reserve(keys: number): void {
    if (keys * 2 > this.mask + 1) this.rehash(keys);
  }

  /** Id of each row's key (rows 0..length), inserting keys not seen before. Rows with skip[i] = 1 get -1. */
  insert(cols: readonly Column[], hashes: Uint32Array, length: number, skip: Uint8Array | null = null): Int32Array {
    return this.probe(cols, hashes, length, skip, true);
  }

  /** Id of each row's key, or -1 where absent. Rows with skip[i] = 1 get -1 without probing. */
  lookup(cols: readonly Column[], hashes: Uint32Array, length: number, skip: Uint8Array | null = null): Int32Array {
    return this.probe(cols, hashes, length, skip, false);
  }

  /** The hash of every id's key. */
  hashes(): Uint32Array {
    return this.idHashes.slice(0, this.size);
  }

  /** The distinct keys as columns, row i holding id i. */
  keyColumns(): Column[] {
    return this.stores.map((s) => s.toColumn(this.size));
  }

  private probe(cols: readonly Column[], hashes: Uint32Array, length: number, skip: Uint8Array | null, insert: boolean): Int32Array {
    for (let c = 0; c < this.stores.length; c++) this.stores[c].bind(cols[c]);
    const out = new Int32Array(length);
    const only = this.stores.length === 1 ? this.stores[0] : null;
    if (only instanceof Int64Store && cols[0].valid === null && cols[0].type !== 'float64') {
      this.probeInt64(only, hashes, length, skip, out, insert);
      return out;
    }
    if (only instanceof StringStore) {
      this.probeString(only, hashes, length, skip, out, insert);
      return out;
    }
    for (let i = 0; i < length; i++) out[i] = skip !== null && skip[i] === 1 ? -1 : this.findOrInsert(i, hashes[i], insert);
    return out;
  }

  /** findOrInsert for the common single non-null int64 key, with the comparison inlined. */
  private probeInt64(store: Int64Store, hashes: Uint32Array, length: number, skip: Uint8Array | null, out: Int32Array, insert: boolean): void {
    const pw = store.probeWords;
    for (let i = 0; i < length; i++) {
      if (skip !== null && skip[i] === 1) { out[i] = -1; continue; }
      const hash = hashes[i], lo = pw[2 * i], hi = pw[2 * i + 1];
      const slots = this.slots, mask = this.mask, words = store.words, valid = store.v.valid, hasNull = store.v.hasNull;
      const hash32 = hash | 0;
      let slot = hash & mask;
      let found = -1;
      for (;;) {
        const id = slots[2 * slot];
        if (id < 0) break;
        if (slots[2 * slot + 1] === hash32 && words[2 * id] === lo && words[2 * id + 1] === hi && (!hasNull || valid[id] === 1)) { found = id; break; }
        slot = (slot + 1) & mask;
      }
      out[i] = found >= 0 || !insert ? found : this.insertAt(slot, i, hash);
    }
  }

  /**
   * findOrInsert for a single string key, with the comparison inlined: through the generic path,
   * which calls a store of any kind, a 3-byte key cost ~35 ns a row in a worker, ~15 here.
   */
  private probeString(store: StringStore, hashes: Uint32Array, length: number, skip: Uint8Array | null, out: Int32Array, insert: boolean): void {
    const { offsets: po, data: pd, valid: pv } = store.probe;
    for (let i = 0; i < length; i++) {
      if (skip !== null && skip[i] === 1) { out[i] = -1; continue; }
      const hash = hashes[i], hash32 = hash | 0;
      const isNull = pv !== null && pv[i] === 0;
      const a = po[i], len = po[i + 1] - a;
      const slots = this.slots, mask = this.mask, so = store.offsets, sd = store.data, sv = store.v.valid, hasNull = store.v.hasNull;
      let slot = hash & mask;
      let found = -1;
      for (;;) {
        const id = slots[2 * slot];
        if (id < 0) break;
        if (slots[2 * slot + 1] === hash32) {
          const storedNull = hasNull && sv[id] === 0;
          if (isNull || storedNull) {
            if (isNull && storedNull) { found = id; break; }
          } else {
            const b = so[id];
            if (so[id + 1] - b === len) {
              let k = 0;
              while (k < len && pd[a + k] === sd[b + k]) k++;
              if (k === len) { found = id; break; }
            }
          }
        }
        slot = (slot + 1) & mask;
      }
      out[i] = found >= 0 || !insert ? found : this.insertAt(slot, i, hash);
    }
  }

  private findOrInsert(row: number, hash: number, insert: boolean): number {
    const stores = this.stores;
    const hash32 = hash | 0;
    let slot = hash & this.mask;
    for (;;) {
      const id = this.slots[2 * slot];
      if (id < 0) break;
      if (this.slots[2 * slot + 1] === hash32) {
        let same = true;
        for (let c = 0; c < stores.length && same; c++) same = stores[c].equals(row, id);
        if (same) return id;
      }
      slot = (slot + 1) & this.mask;
    }
    return insert ? this.insertAt(slot, row, hash) : -1;
  }

  /** Gives row `row`'s key (hash `hash`) the next id, in empty slot `slot` (where its probe ended). */
  private insertAt(slot: number, row: number, hash: number): number {
    const stores = this.stores;
    const hash32 = hash | 0;
    const id = this.size++;
    for (let c = 0; c < stores.length; c++) stores[c].push(row);
    if (id >= this.idHashes.length) this.idHashes = grow(this.idHashes, id + 1);
    this.idHashes[id] = hash;
    this.slots[2 * slot] = id;
    this.slots[2 * slot + 1] = hash32;
    if (this.size * 2 > this.mask + 1) this.rehash();
    return id;
  }

  /** Rebuilds the slots for at least `keys` keys at most half full (default: twice the slots). */
  private rehash(keys = this.mask + 1): void {
    let mask = this.mask * 2 + 1;
    while ((mask + 1) < keys * 2) mask = mask * 2 + 1;
    const slots = new Int32Array(2 * (mask + 1)).fill(-1);
    for (let id = 0; id < this.size; id++) {
      const hash = this.idHashes[id];
      let s = hash & mask;
      while (slots[2 * s] >= 0) s = (s + 1) & mask;
      slots[2 * s] = id;
      slots[2 * s + 1] = hash | 0;
    }
    this.slots = slots;
    this.mask = mask;
  }
}
