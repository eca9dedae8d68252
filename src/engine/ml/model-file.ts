// Model files: JSON with a stable key order and numbers as shortest round-trip text; a forest's
// node arrays are packed as { type, base64 } (little-endian int32 or float64). Classes are a JSON
// list, except an int64 target's classes beyond what a double holds exactly: { type: 'int64',
// decimal: [text, ...] } (a JSON number would be read rounded). Reading treats the
// file as untrusted: unknown kinds or versions, prototype keys, absurd sizes,
// inconsistent lengths and non-finite numbers are DataErrors naming the file and the field.

import { isAscii } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { copyFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DTYPES, type DType } from '../batch.js';
import { DataError } from '../errors.js';
import { MODEL_FORMAT_VERSION, READABLE_FORMAT_VERSIONS, type ClassLabel, type FlatTrees, type Model, type ModelHeader, type ParamValue } from './model.js';

/** Upper bounds that no real model reaches; beyond them the file is rejected before allocating. */
const MAX_NODES = 100_000_000;
const MAX_FEATURES = 1_000_000;
const MAX_CLUSTERS = 10_000_000;

/** A piece of a model file's text; `ascii` pieces (packed arrays) can be written without re-encoding. */
export interface ModelFilePart { text: string; ascii: boolean }

export function serializeModel(model: Model): string {
  return modelFileParts(model).map((p) => p.text).join('');
}

/**
 * The model file's text in pieces: the JSON, with each packed forest array cut out as its own
 * pure-ASCII piece, so a forest of millions of nodes is neither scanned by JSON.stringify nor
 * re-encoded when written (writeModelFile).
 */
export function modelFileParts(model: Model): ModelFilePart[] {
  const arrays: (Int32Array | Float64Array)[] = [];
  const nonce = randomUUID();
  /** Stands in for a packed array in the JSON; replaced by the array's own pieces below. */
  const packed = (a: Int32Array | Float64Array): string => `${nonce}#${arrays.push(a) - 1}`;
  const common = {
    kind: model.kind,
    formatVersion: model.formatVersion,
    featureNames: model.featureNames,
    featureTypes: model.featureTypes,
    target: model.target,
    classes: classesField(model.classes),
    params: sortedKeys(model.params),
    metrics: sortedKeys(model.metrics),
  };
  let body: Record<string, unknown>;
  switch (model.kind) {
    case 'kmeans': body = { k: model.k, centroids: numbers(model.centroids, 'centroids') }; break;
    case 'linreg': body = { coefficients: numbers(model.coefficients, 'coefficients'), intercept: finite(model.intercept, 'intercept') }; break;
    case 'random-forest': {
      const t = model.trees;
      body = {
        task: model.task,
        trees: {
          valueWidth: t.valueWidth, treeOffsets: numbers(t.treeOffsets, 'trees.treeOffsets'),
          feature: packed(Int32Array.from(t.feature)), threshold: packed(finiteArray(t.threshold, 'trees.threshold')),
          left: packed(Int32Array.from(t.left)), right: packed(Int32Array.from(t.right)), value: packed(finiteArray(t.value, 'trees.value')),
        },
      };
      break;
    }
  }
  const pieces = (JSON.stringify({ ...common, ...body }) + '\n').split(new RegExp(`"${nonce}#(\\d+)"`));
  return pieces.flatMap((piece, i): ModelFilePart[] => {
    if (i % 2 === 0) return [{ text: piece, ascii: false }];
    const a = arrays[Number(piece)];
    const type = a instanceof Int32Array ? 'int32' : 'float64';
    // Little-endian bytes: every platform Node runs on is little-endian.
    return [{ text: `{"type":"${type}","base64":"`, ascii: false }, { text: Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64'), ascii: true }, { text: '"}', ascii: false }];
  });
}

/**
 * The classes as written: a JSON list (numbers, strings or booleans), or, when they are bigints
 * (int64 classes not all exact as doubles: int64Classes), their decimal text under a type tag.
 * The tag keeps files whose classes are all numbers (the usual 0, 1, ...) byte for byte as they
 * were, and a reader that knows only lists refuses the field rather than reading strings.
 */
function classesField(classes: readonly ClassLabel[]): readonly ClassLabel[] | { type: 'int64'; decimal: string[] } {
  if (!classes.some((c) => typeof c === 'bigint')) return classes;
  return {
    type: 'int64',
    decimal: classes.map((c) => {
      if (typeof c !== 'bigint' && !Number.isInteger(c)) throw new Error(`model field 'classes' mixes int64 classes with ${JSON.stringify(c)}`);
      return String(c);
    }),
  };
}

function sortedKeys<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
}

function finite(v: number, field: string): number {
  if (!Number.isFinite(v)) throw new Error(`model field '${field}' holds a non-finite number`);
  return v;
}

function numbers(a: ArrayLike<number>, field: string): number[] {
  return Array.from(a, (v) => finite(v, field));
}

function finiteArray(a: Float64Array, field: string): Float64Array {
  for (let i = 0; i < a.length; i++) finite(a[i], field);
  return a;
}

/**
 * A model file's text. Model files are nearly all base64, so the common ASCII file is read as
 * Latin-1, which is the same text without UTF-8 decoding (2.4x faster for a 148 MB forest here).
 */
export function readModelText(path: string): string {
  const bytes = readFileSync(path);
  return isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
}

/**
 * Which file (absolute: a plan's later stage may run in another directory), its size and
 * modification time: whether it still holds what was read from it.
 */
export interface FileStamp { path: string; size: number; mtimeMs: number }

export function fileStamp(path: string): FileStamp | null {
  try {
    const s = statSync(path);
    return { path: resolve(path), size: s.size, mtimeMs: s.mtimeMs };
  } catch {
    return null;
  }
}

/** A model file's text, with the file's stamp taken before reading it. */
export function readModelFile(path: string): { text: string; stamp: FileStamp | null } {
  const stamp = fileStamp(path);
  return { text: readModelText(path), stamp };
}

/**
 * Puts a model's text at `to`: a copy of the file it came from (the stamp's path) when that file
 * still has the stamp it had when read (a kernel-side copy: 110 ms against 300 ms to write a
 * 148 MB forest's text here), else the text written out.
 */
export function saveModelText(to: string, text: string, read: FileStamp | null | undefined): void {
  if (read) {
    const unchanged = () => { const now = fileStamp(read.path); return now !== null && now.size === read.size && now.mtimeMs === read.mtimeMs; };
    if (unchanged()) {
      copyFileSync(read.path, to);
      if (unchanged() && fileStamp(to)?.size === read.size) return;
    }
  }
  writeFileSync(to, text);
}

export function parseModel(text: string, fileName: string): Model {
  const fail = failureFor(fileName);
  const r = new Reader(parsePackedJson(text, fileName, fail), fail);
  const { kind, task, ...common } = readHeader(r, fail);
  const d = common.featureNames.length;
  switch (kind) {
    case 'kmeans': {
      const k = r.int('k', 1, MAX_CLUSTERS);
      const centroids = r.numbers('centroids', MAX_NODES);
      if (centroids.length !== k * d) fail('centroids', `has ${centroids.length} numbers, expected k × features = ${k * d}`);
      return { kind, ...common, k, centroids };
    }
    case 'linreg': {
      const coefficients = r.numbers('coefficients', MAX_FEATURES);
      if (coefficients.length !== d) fail('coefficients', `has ${coefficients.length} numbers for ${d} features`);
      const intercept = r.get('intercept');
      if (typeof intercept !== 'number' || !Number.isFinite(intercept)) fail('intercept', 'must be a finite number');
      return { kind, ...common, coefficients, intercept: intercept as number };
    }
    case 'random-forest': {
      const trees = readTrees(new Reader(r.get('trees'), (f, w) => fail(`trees.${f}`, w)), d, fail);
      const width = task === 'classification' ? common.classes.length : 1;
      if (trees.valueWidth !== width) fail('trees.valueWidth', `is ${trees.valueWidth}, expected ${width} for a ${task} forest`);
      return { kind, ...common, task: task!, trees };
    }
  }
}

/**
 * A model file's header (everything but the parameters), for planning: a forest written by this
 * gpuframe ends with its "trees" object, nearly all of its text, so the JSON before it is parsed
 * alone (a 280 MB forest: milliseconds instead of ~1.2 s); any other layout is parsed whole. The
 * parameters are checked where they are read (parseModel in each worker), with the same errors.
 */
export function parseModelHeader(text: string, fileName: string): ModelHeader {
  const fail = failureFor(fileName);
  // Inside a JSON string every quote is escaped, so this key text can only be a key.
  const cut = text.indexOf(',"trees":{');
  if (cut > 0) {
    // Fields after "trees" (another key order) or a bad header: the whole file, with its errors.
    try { return headerOf(new Reader(parseJson(`${text.slice(0, cut)}}`, fileName, fail), fail), fail); } catch { /* below */ }
  }
  return headerOf(new Reader(parseJson(text, fileName, fail), fail), fail);
}

function headerOf(r: Reader, fail: (field: string, what: string) => never): ModelHeader {
  const { kind, task, ...common } = readHeader(r, fail);
  return kind === 'random-forest' ? { kind, ...common, task: task! } : { kind, ...common };
}

function failureFor(fileName: string): (field: string, what: string) => never {
  return (field, what) => { throw new DataError(`invalid model file: field '${field}' ${what}`, { file: fileName }); };
}

/** Where a packed array's base64 text starts; inside a JSON string these quotes would be escaped. */
const PACKED_TEXT = '"base64":"';

/**
 * A model file's JSON with each packed array's base64 text (nearly all of a forest's file) cut out
 * before JSON.parse and put back as a slice of `text`: JSON.parse copied every one of them (a
 * 280 MB forest: ~0.3 s of each worker's ~1.3 s load). A base64 text holding an escape is not one
 * this gpuframe wrote: such a file is parsed whole.
 */
function parsePackedJson(text: string, fileName: string, fail: (field: string, what: string) => never): unknown {
  const skeleton: string[] = [], packed: string[] = [];
  let from = 0;
  for (let at = text.indexOf(PACKED_TEXT); at >= 0; at = text.indexOf(PACKED_TEXT, from)) {
    const start = at + PACKED_TEXT.length, end = text.indexOf('"', start);
    if (end < 0) break;
    const base64 = text.slice(start, end);
    if (base64.includes('\\')) return parseJson(text, fileName, fail);
    skeleton.push(text.slice(from, start), `#${packed.length}`); // '#' is not base64: no real text reads so
    packed.push(base64);
    from = end;
  }
  if (packed.length === 0) return parseJson(text, fileName, fail);
  skeleton.push(text.slice(from));
  return parseJson(skeleton.join(''), fileName, fail, (key, value) => (key === 'base64' && typeof value === 'string' && /^#\d+$/.test(value) ? packed[Number(value.slice(1))] : value));
}

function parseJson(text: string, fileName: string, fail: (field: string, what: string) => never, restore?: (key: string, value: unknown) => unknown): unknown {
  try {
    return JSON.parse(text, (key, value) => {
      if (key === '__proto__' || key === 'constructor' || key === 'prototype') fail(key, 'is not allowed');
      return restore ? restore(key, value) : value;
    });
  } catch (e) {
    if (e instanceof DataError) throw e;
    throw new DataError(`model file is not valid JSON (${(e as Error).message})`, { file: fileName });
  }
}

/** The fields every model has, its kind, and a forest's task. */
function readHeader(r: Reader, fail: (field: string, what: string) => never) {
  const kind = r.oneOf('kind', ['kmeans', 'linreg', 'random-forest'] as const);
  const version = r.get('formatVersion');
  if (!READABLE_FORMAT_VERSIONS.includes(version as number)) fail('formatVersion', `must be one of ${READABLE_FORMAT_VERSIONS.join(', ')} (the versions this gpuframe reads), got ${JSON.stringify(version)}`);
  const featureNames = r.strings('featureNames', MAX_FEATURES);
  const d = featureNames.length;
  const featureTypes = r.strings('featureTypes', MAX_FEATURES) as DType[];
  if (featureTypes.length !== d) fail('featureTypes', `has ${featureTypes.length} entries for ${d} features`);
  featureTypes.forEach((t) => { if (!DTYPES.includes(t)) fail('featureTypes', `holds unknown type '${t}'`); });
  const target = r.get('target');
  if (target !== null && typeof target !== 'string') fail('target', 'must be a string or null');
  return {
    kind, formatVersion: MODEL_FORMAT_VERSION as typeof MODEL_FORMAT_VERSION, featureNames, featureTypes, target: target as string | null,
    classes: r.classLabels('classes', MAX_NODES), params: r.params('params'), metrics: r.metricValues('metrics'),
    task: kind === 'random-forest' ? r.oneOf('task', ['classification', 'regression'] as const) : undefined,
  };
}

function readTrees(r: Reader, d: number, fail: (field: string, what: string) => never): FlatTrees {
  const valueWidth = r.int('valueWidth', 1, 65536);
  const treeOffsets = Int32Array.from(r.numbers('treeOffsets', MAX_NODES));
  const feature = r.nodeArray('feature', MAX_NODES, 'int32');
  const n = feature.length;
  const threshold = r.nodeArray('threshold', MAX_NODES, 'float64');
  const left = r.nodeArray('left', MAX_NODES, 'int32');
  const right = r.nodeArray('right', MAX_NODES, 'int32');
  const value = r.nodeArray('value', MAX_NODES * 16, 'float64');
  if (threshold.length !== n || left.length !== n || right.length !== n) fail('trees', 'node arrays have different lengths');
  if (value.length !== n * valueWidth) fail('trees.value', `has ${value.length} numbers, expected nodes × valueWidth = ${n * valueWidth}`);
  if (treeOffsets.length < 2 || treeOffsets[0] !== 0 || treeOffsets[treeOffsets.length - 1] !== n) fail('trees.treeOffsets', 'must start at 0 and end at the node count');
  for (let t = 0; t + 1 < treeOffsets.length; t++) {
    const start = treeOffsets[t], size = treeOffsets[t + 1] - start;
    if (size < 1) fail('trees.treeOffsets', `gives tree ${t} no nodes`);
    for (let i = start; i < start + size; i++) {
      const f = feature[i];
      if (f === -1) continue;
      if (!(f >= 0 && f < d)) fail('trees.feature', `node ${i} names feature ${f} of ${d}`);
      // Children must come after their parent inside the same tree, so prediction always terminates.
      const local = i - start;
      if (!(left[i] > local && left[i] < size && right[i] > local && right[i] < size)) fail('trees.left/right', `node ${i} has children outside its tree`);
    }
  }
  return { treeOffsets, feature, threshold, left, right, value, valueWidth };
}

/** An integer's decimal text as written (String of a bigint): no sign but '-', no leading zeros. */
const INT64_TEXT = /^(0|-?[1-9][0-9]{0,18})$/;

/** Typed access to fields of an untrusted object, failing with the field's name. */
class Reader {
  private readonly o: Record<string, unknown>;
  constructor(raw: unknown, private readonly fail: (field: string, what: string) => never) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail('(top level)', 'must be a JSON object');
    this.o = raw as Record<string, unknown>;
  }
  get(field: string): unknown {
    if (!Object.prototype.hasOwnProperty.call(this.o, field)) this.fail(field, 'is missing');
    return this.o[field];
  }
  oneOf<T extends string>(field: string, allowed: readonly T[]): T {
    const v = this.get(field);
    if (!allowed.includes(v as T)) this.fail(field, `must be one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`);
    return v as T;
  }
  int(field: string, min: number, max: number): number {
    const v = this.get(field);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) this.fail(field, `must be an integer in [${min}, ${max}]`);
    return v as number;
  }
  private array(field: string, maxLength: number): unknown[] {
    const v = this.get(field);
    if (!Array.isArray(v)) this.fail(field, 'must be an array');
    if ((v as unknown[]).length > maxLength) this.fail(field, `is too long (${(v as unknown[]).length} > ${maxLength})`);
    return v as unknown[];
  }
  numbers(field: string, maxLength: number): Float64Array {
    const a = this.array(field, maxLength);
    const out = new Float64Array(a.length);
    a.forEach((v, i) => {
      if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(field, `entry ${i} is not a finite number`);
      out[i] = v as number;
    });
    return out;
  }
  /** Class labels: all finite numbers, all strings or all booleans, each once; or int64 classes as { type: 'int64', decimal } (bigints). */
  classLabels(field: string, maxLength: number): ClassLabel[] {
    const v = this.get(field);
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return this.int64Labels(field, maxLength);
    const a = this.array(field, maxLength);
    const kind = typeof a[0];
    a.forEach((v, i) => {
      if (typeof v !== kind || !(kind === 'string' || kind === 'boolean' || (kind === 'number' && Number.isFinite(v)))) {
        this.fail(field, `entry ${i} is not a ${kind === 'string' || kind === 'boolean' ? kind : 'finite number'} like the first`);
      }
      if (a.indexOf(v) !== i) this.fail(field, `entry ${i} repeats entry ${a.indexOf(v)}`);
    });
    return a as ClassLabel[];
  }
  private int64Labels(field: string, maxLength: number): bigint[] {
    const o = new Reader(this.get(field), (f, w) => this.fail(`${field}.${f}`, w));
    if (o.get('type') !== 'int64') this.fail(`${field}.type`, "must be 'int64'");
    const seen = new Set<bigint>();
    return o.strings('decimal', maxLength).map((text, i) => {
      const value = INT64_TEXT.test(text) ? BigInt(text) : null;
      if (value === null || value !== BigInt.asIntN(64, value)) this.fail(`${field}.decimal`, `entry ${i} is not an int64 in decimal`);
      if (seen.has(value!)) this.fail(`${field}.decimal`, `entry ${i} repeats an earlier entry`);
      seen.add(value!);
      return value!;
    });
  }
  /** A forest node array: packed { type, base64 } (version 2) or a JSON number list (version 1). */
  nodeArray(field: string, maxLength: number, type: 'int32'): Int32Array;
  nodeArray(field: string, maxLength: number, type: 'float64'): Float64Array;
  nodeArray(field: string, maxLength: number, type: 'int32' | 'float64'): Int32Array | Float64Array {
    const v = this.get(field);
    if (Array.isArray(v)) {
      const a = this.numbers(field, maxLength);
      if (type === 'float64') return a;
      if (!a.every(Number.isInteger)) this.fail(field, 'must hold integers');
      return Int32Array.from(a);
    }
    const o = new Reader(v, (f, w) => this.fail(`${field}.${f}`, w));
    if (o.get('type') !== type) this.fail(`${field}.type`, `must be '${type}'`);
    const text = o.get('base64');
    if (typeof text !== 'string') this.fail(`${field}.base64`, 'must be a base64 string');
    const bytes = Buffer.from(text as string, 'base64');
    // Node skips characters that are not base64: then fewer bytes come out than the text encodes.
    const padding = (text as string).endsWith('==') ? 2 : (text as string).endsWith('=') ? 1 : 0;
    if ((text as string).length % 4 !== 0 || bytes.length !== ((text as string).length / 4) * 3 - padding) this.fail(`${field}.base64`, 'must be a base64 string');
    const size = type === 'int32' ? 4 : 8;
    if (bytes.length % size !== 0) this.fail(`${field}.base64`, `holds ${bytes.length} bytes, not whole ${type} values`);
    if (bytes.length / size > maxLength) this.fail(field, `is too long (${bytes.length / size} > ${maxLength})`);
    // Copied into a fresh (aligned) buffer.
    const a = type === 'int32' ? new Int32Array(bytes.length / 4) : new Float64Array(bytes.length / 8);
    new Uint8Array(a.buffer).set(bytes);
    if (a instanceof Float64Array) for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i])) this.fail(field, `entry ${i} is not a finite number`);
    return a;
  }

  strings(field: string, maxLength: number): string[] {
    const a = this.array(field, maxLength);
    a.forEach((v, i) => { if (typeof v !== 'string') this.fail(field, `entry ${i} is not a string`); });
    return a as string[];
  }
  params(field: string): Record<string, ParamValue> {
    const o = new Reader(this.get(field), (f, w) => this.fail(`${field}.${f}`, w)).o;
    for (const [k, v] of Object.entries(o)) {
      if (!(v === null || ['string', 'number', 'boolean'].includes(typeof v))) this.fail(`${field}.${k}`, 'must be a string, number, boolean or null');
    }
    return { ...o } as Record<string, ParamValue>;
  }
  metricValues(field: string): Record<string, number> {
    const o = new Reader(this.get(field), (f, w) => this.fail(`${field}.${f}`, w)).o;
    for (const [k, v] of Object.entries(o)) if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(`${field}.${k}`, 'must be a finite number');
    return { ...o } as Record<string, number>;
  }
}
