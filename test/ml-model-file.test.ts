import { mkdtempSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeModel } from '../src/cli/train.js';
import { AtomicFileSink } from '../src/engine/io/output/byte-sink.js';
import { DataError } from '../src/engine/errors.js';
import { fitKMeans } from '../src/engine/ml/kmeans.js';
import { fitLinReg } from '../src/engine/ml/linreg.js';
import { parseModel, parseModelHeader, readModelFile, saveModelText, serializeModel } from '../src/engine/ml/model-file.js';
import { predictBatch } from '../src/engine/ml/predict.js';
import { Rng } from '../src/engine/ml/random.js';
import { partitioned } from './ml-helpers.js';

const rng = new Rng(1, 'model-file-test');
const x = Float64Array.from({ length: 300 }, () => rng.normal());
const y = Float64Array.from({ length: 100 }, (_, r) => x[3 * r] - 2 * x[3 * r + 1] + 0.1 * rng.normal());
const data = { names: ['a', 'b', 'c'], cols: 3, x, y };

function rejects(text: string, field: string): void {
  let err: unknown;
  try { parseModel(text, 'm.json'); } catch (e) { err = e; }
  expect(err).toBeInstanceOf(DataError);
  expect((err as DataError).exitCode).toBe(3);
  expect((err as Error).message).toContain('m.json');
  expect((err as Error).message).toContain(field);
}

/** A version-1 forest file of one stump on feature a (classes 0 and 1): node arrays as number lists. */
const STUMP_V1 = {
  kind: 'random-forest', formatVersion: 1, featureNames: ['a'], featureTypes: ['float64'], target: 'y', classes: [0, 1],
  params: {}, metrics: {}, task: 'classification',
  trees: { valueWidth: 2, treeOffsets: [0, 3], feature: [0, -1, -1], threshold: [0.5, 0, 0], left: [1, -1, -1], right: [2, -1, -1], value: [0.5, 0.5, 1, 0, 0, 1] },
};

describe('model files', () => {
  it('round-trip k-means and linreg models with identical predictions and bytes', async () => {
    for (const model of [await fitKMeans(partitioned(data, 40), { k: 3, seed: 2 }), await fitLinReg(partitioned(data, 40))]) {
      const text = serializeModel(model);
      const back = parseModel(text, 'm.json');
      expect(serializeModel(back)).toBe(text);
      expect(predictBatch(back, x, 100).prediction).toEqual(predictBatch(model, x, 100).prediction);
    }
  });

  it('writes numbers as shortest round-trip text in a stable key order', async () => {
    const text = serializeModel(await fitLinReg(partitioned(data, 100)));
    const obj = JSON.parse(text);
    expect(Object.keys(obj).slice(0, 8)).toEqual(['kind', 'formatVersion', 'featureNames', 'featureTypes', 'target', 'classes', 'params', 'metrics']);
    expect(text).toContain(`"intercept":${String(obj.intercept)}`);
  });

  it('rejects untrusted content with a DataError naming the file and field', async () => {
    const good = JSON.parse(serializeModel(await fitLinReg(partitioned(data, 100))));
    const edit = (f: (o: any) => void): string => { const o = structuredClone(good); f(o); return JSON.stringify(o); };
    rejects('{not json', 'JSON');
    rejects(edit((o) => { o.kind = 'svm'; }), 'kind');
    rejects(edit((o) => { o.formatVersion = 3; }), 'formatVersion');
    rejects(edit((o) => { o.coefficients.push(1); }), 'coefficients');
    rejects(edit((o) => { o.featureTypes = ['float64']; }), 'featureTypes');
    // Classes are all numbers, all strings or all booleans (as the target was).
    rejects(edit((o) => { o.classes = [0, 'one']; }), 'classes');
    rejects(edit((o) => { o.classes = ['a', null]; }), 'classes');
    rejects(edit((o) => { o.classes = [true, 1]; }), 'classes');
    rejects(edit((o) => { o.classes = ['a', 'a']; }), 'classes');
    rejects(JSON.stringify(good).replace('"params":{', '"params":{"__proto__":{"x":1},'), '__proto__');
    rejects(JSON.stringify(good).replace('"metrics":{', '"metrics":{"constructor":1,'), 'constructor');
    rejects(JSON.stringify(good).replace(/"intercept":[^,}]+/, '"intercept":"1e999"'), 'intercept');
    rejects(JSON.stringify(good).replace(/"coefficients":\[[^\]]*\]/, '"coefficients":[1,null,3]'), 'coefficients');
  });

  it('reads version-1 forests (node arrays as number lists) and rejects cyclic or out-of-range nodes and absurd sizes', () => {
    const forest = structuredClone(STUMP_V1);
    const ok = parseModel(JSON.stringify(forest), 'f.json');
    expect(Array.from(predictBatch(ok, new Float64Array([0, 1]), 2).prediction)).toEqual([0, 1]);
    const bad = (f: (o: any) => void): string => { const o = structuredClone(forest); f(o); return JSON.stringify(o); };
    rejects(bad((o) => { o.trees.left[0] = 0; }), 'left/right');
    rejects(bad((o) => { o.trees.feature[0] = 4; }), 'trees.feature');
    rejects(bad((o) => { o.trees.value.pop(); }), 'trees.value');
    rejects(bad((o) => { o.trees.treeOffsets = [0, 2]; }), 'treeOffsets');
    rejects(bad((o) => { o.trees.valueWidth = 3; }), 'valueWidth');
    rejects(bad((o) => { o.k = 1; o.kind = 'kmeans'; o.centroids = []; o.featureNames = ['a']; o.k = 1e12; }), 'k');
  });

  it('packs forest node arrays (version 2): round-trips bytes and predictions; rejects bad packing', () => {
    const v1 = {
      kind: 'random-forest', formatVersion: 1, featureNames: ['a', 'b'], featureTypes: ['float64', 'float64'], target: 'y', classes: [0, 1],
      params: {}, metrics: {}, task: 'classification',
      trees: { valueWidth: 2, treeOffsets: [0, 3, 4], feature: [1, -1, -1, -1], threshold: [0.25, 0, 0, 0], left: [1, -1, -1, -1], right: [2, -1, -1, -1], value: [0.5, 0.5, 0.9, 0.1, 0.2, 0.8, 0.3, 0.7] },
    };
    const model = parseModel(JSON.stringify(v1), 'f.json');
    const text = serializeModel(model);
    const obj = JSON.parse(text);
    expect(obj.formatVersion).toBe(2);
    expect(obj.trees.feature.type).toBe('int32');
    expect(obj.trees.threshold.type).toBe('float64');
    const back = parseModel(text, 'f.json');
    expect(serializeModel(back)).toBe(text);
    const rows = new Float64Array([0, 0.1, 0, 0.3]);
    expect(Array.from(predictBatch(back, rows, 2, true).proba!)).toEqual(Array.from(predictBatch(model, rows, 2, true).proba!));
    expect(Array.from(predictBatch(back, rows, 2, true).proba!)).toEqual([(0.9 + 0.3) / 2, (0.1 + 0.7) / 2, (0.2 + 0.3) / 2, (0.8 + 0.7) / 2]);
    // A base64 text written with a JSON escape (not by this gpuframe) reads the same.
    const escaped = text.replace(/"base64":"([A-Za-z0-9+/])/, (_m, c: string) => `"base64":"\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    expect(escaped).not.toBe(text);
    expect(serializeModel(parseModel(escaped, 'f.json'))).toBe(text);
    const bad = (f: (o: any) => void): string => { const o = structuredClone(obj); f(o); return JSON.stringify(o); };
    rejects(bad((o) => { o.trees.left.type = 'float64'; }), 'trees.left.type');
    rejects(bad((o) => { o.trees.threshold.base64 = o.trees.threshold.base64.slice(4); }), 'trees.threshold');
    rejects(bad((o) => { o.trees.feature.base64 = '!!!'; }), 'trees.feature.base64');
    rejects(bad((o) => { o.trees.value.base64 = Buffer.from(new Float64Array([NaN, 1, 1, 1, 1, 1, 1, 1]).buffer).toString('base64'); }), 'trees.value');
    rejects(bad((o) => { o.trees.right.base64 = Buffer.from(new Int32Array([2, -1, -1, 0]).buffer).toString('base64'); o.trees.left.base64 = Buffer.from(new Int32Array([0, -1, -1, -1]).buffer).toString('base64'); }), 'left/right');
  });

  it('int64 classes beyond 2^53 are written exactly as decimal text under a type tag; JSON number lists still read', () => {
    const v1 = structuredClone(STUMP_V1);
    const small = parseModel(JSON.stringify(v1), 'f.json');
    // The usual labels stay a JSON number list (files as they were).
    expect(serializeModel(small)).toContain('"classes":[0,1],');
    const labels = [-(2n ** 63n), 2n ** 53n + 1n]; // 2^53 + 1 reads as 2^53 from a JSON number
    const big = { ...small, classes: labels };
    const text = serializeModel(big);
    expect(text).toContain('"classes":{"type":"int64","decimal":["-9223372036854775808","9007199254740993"]},');
    const back = parseModel(text, 'f.json');
    expect(back.classes).toEqual(labels);
    expect(serializeModel(back)).toBe(text);
    expect(parseModelHeader(text, 'f.json').classes).toEqual(labels);
    expect(Array.from(predictBatch(back, new Float64Array([0, 1]), 2).prediction)).toEqual([0, 1]);
    const obj = JSON.parse(text);
    const bad = (f: (o: any) => void): string => { const o = structuredClone(obj); f(o); return JSON.stringify(o); };
    rejects(bad((o) => { o.classes.type = 'int32'; }), 'classes.type');
    rejects(bad((o) => { delete o.classes.decimal; }), 'classes.decimal');
    rejects(bad((o) => { o.classes.decimal = ['1', 2]; }), 'classes.decimal');
    for (const text of ['1.5', '01', '-0', '+1', ' 1', '9223372036854775808', '-9223372036854775809', '1e3', '']) {
      rejects(bad((o) => { o.classes.decimal = ['0', text]; }), 'classes.decimal');
    }
    rejects(bad((o) => { o.classes.decimal = ['7', '7']; }), 'classes.decimal');
    rejects(bad((o) => { o.classes.decimal = ['1', '2', '3']; }), 'trees.valueWidth');
    expect(parseModel(bad((o) => { o.classes.decimal = ['9223372036854775807', '-1']; }), 'f.json').classes).toEqual([2n ** 63n - 1n, -1n]);
  });

  it('parseModelHeader gives the header parseModel gives, from the text before a forest\'s trees or from any key order', async () => {
    const forest = {
      kind: 'random-forest', formatVersion: 2, featureNames: ['a', 'x,"trees":{'], featureTypes: ['float64', 'float64'], target: 'y', classes: [0, 1],
      params: { nEstimators: 1 }, metrics: {}, task: 'classification',
      trees: { valueWidth: 2, treeOffsets: [0, 3], feature: [1, -1, -1], threshold: [0.25, 0, 0], left: [1, -1, -1], right: [2, -1, -1], value: [0.5, 0.5, 0.9, 0.1, 0.2, 0.8] },
    };
    const header = (m: Record<string, unknown>) => { const { trees: _t, k: _k, centroids: _c, coefficients: _co, intercept: _i, ...rest } = m; return rest; };
    const texts = [
      serializeModel(parseModel(JSON.stringify(forest), 'f.json')),
      JSON.stringify({ trees: forest.trees, ...header(forest) }), // trees first: parsed whole
      JSON.stringify({ kind: forest.kind, trees: forest.trees, ...header(forest) }), // header fields after the trees: parsed whole
      serializeModel(await fitKMeans(partitioned(data, 40), { k: 3, seed: 2 })),
      serializeModel(await fitLinReg(partitioned(data, 40))),
    ];
    for (const text of texts) expect(parseModelHeader(text, 'f.json')).toEqual(header(parseModel(text, 'f.json') as unknown as Record<string, unknown>));
    // The header is checked as parseModel checks it; the trees are left to parseModel.
    let err: unknown;
    try { parseModelHeader(texts[0].replace('"classification"', '"ranking"'), 'f.json'); } catch (e) { err = e; }
    expect((err as Error).message).toMatch(/f\.json.*task/);
    const badTrees = texts[0].replace(/"left":\{"type":"int32"/, '"left":{"type":"float64"');
    expect(parseModelHeader(badTrees, 'f.json')).toEqual(header(forest));
    rejects(badTrees.replace('f.json', 'm.json'), 'trees.left.type');
  });

  it('writeModel writes exactly serializeModel\'s text (UTF-8 names, packed arrays written as ASCII)', async () => {
    const v1 = {
      kind: 'random-forest', formatVersion: 1, featureNames: ['größe', '重さ'], featureTypes: ['float64', 'float64'], target: 'y', classes: [0, 1],
      params: { note: 'é' }, metrics: {}, task: 'classification',
      trees: { valueWidth: 2, treeOffsets: [0, 3], feature: [1, -1, -1], threshold: [0.25, 0, 0], left: [1, -1, -1], right: [2, -1, -1], value: [0.5, 0.5, 0.9, 0.1, 0.2, 0.8] },
    };
    const model = parseModel(JSON.stringify(v1), 'f.json');
    const file = join(mkdtempSync(join(tmpdir(), 'gpuframe-model-')), 'rf.json');
    await writeModel(await AtomicFileSink.open(file), model);
    expect(readFileSync(file, 'utf8')).toBe(serializeModel(model));
    expect(parseModel(readFileSync(file, 'utf8'), file).featureNames).toEqual(['größe', '重さ']);
  });

  it("a run's copy of the model is the text that was read, whether copied from the file or written out", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuframe-model-copy-'));
    const model = await fitLinReg(partitioned(data, 40));
    const source = join(dir, 'lr.json'), copied = join(dir, 'copied.json'), rewritten = join(dir, 'rewritten.json');
    await writeModel(await AtomicFileSink.open(source), model);
    const read = readModelFile(source);
    expect(read.text).toBe(serializeModel(model));
    saveModelText(copied, read.text, read.stamp);
    expect(readFileSync(copied, 'utf8')).toBe(read.text);
    // The file changes after it was read (same size, later time): the text read is what the run uses.
    writeFileSync(source, read.text.replace('"kind"', '"kinD"'));
    utimesSync(source, new Date(), new Date(Date.now() + 5000));
    saveModelText(rewritten, read.text, read.stamp);
    expect(readFileSync(rewritten, 'utf8')).toBe(read.text);
    // Plans without a stamp (a model made in the same run) are written out.
    saveModelText(rewritten, 'x', null);
    expect(readFileSync(rewritten, 'utf8')).toBe('x');
  });
});
