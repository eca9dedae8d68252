// Predictions as columns: what a predict step appends to each batch (`prediction`, and
// `proba_<class>` per class with --proba), and the types of those columns.

import { selectColumns, stringColumn, type Batch, type Column, type DType, type Field } from '../batch.js';
import { designMatrix } from './design-matrix.js';
import { parseModel, parseModelHeader, readModelText } from './model-file.js';
import type { ForestModel, Model, ModelHeader } from './model.js';
import { predictBatch, predictFromLeaves, type Prediction } from './predict.js';

/** The prediction column's type: k-means labels are int64; a classifier's are its classes' (int64 when all are integers); regression float64. */
function predictionType(model: ModelHeader): DType {
  if (model.kind === 'kmeans') return 'int64';
  if (model.kind !== 'random-forest' || model.task !== 'classification') return 'float64';
  const c = model.classes;
  if (c.every((v) => typeof v === 'string')) return 'string';
  if (c.every((v) => typeof v === 'boolean')) return 'bool';
  return c.every((v) => typeof v === 'bigint' || Number.isInteger(v)) ? 'int64' : 'float64';
}

export function predictionFields(model: ModelHeader, outputName: string, proba: boolean): Field[] {
  const fields: Field[] = [{ name: outputName, type: predictionType(model) }];
  if (proba && model.kind === 'random-forest' && model.task === 'classification') {
    for (const c of model.classes) fields.push({ name: `proba_${c}`, type: 'float64' });
  }
  return fields;
}

let parsed: { text: string; model: ModelHeader } | null = null;

/** The header of the model held in a plan node's text (parsed once per process; workers read the whole model: modelInFile). */
export function modelOf(node: { modelText: string; modelPath: string }): ModelHeader {
  if (parsed?.text !== node.modelText) parsed = { text: node.modelText, model: parseModelHeader(node.modelText, node.modelPath) };
  return parsed.model;
}

let read: { file: string; model: Model } | null = null;

/** The model a predict step's worker reads from the run's copy of it (once per process). */
export function modelInFile(op: { modelFile: string; modelPath: string }): Model {
  if (read?.file !== op.modelFile) read = { file: op.modelFile, model: parseModel(readModelText(op.modelFile), op.modelPath) };
  return read.model;
}

/**
 * Where a forest's rows find their leaves: on this CPU by default; a GPU worker installs its
 * device's traversal (exactly the same leaves, so predictions never depend on where a chunk ran).
 */
export type ForestLeafFinder = (model: ForestModel, x: Float64Array, rows: number) => Promise<Int32Array>;

let leafFinder: ForestLeafFinder | null = null;

export function useForestLeafFinder(finder: ForestLeafFinder): void {
  leafFinder = finder;
}

async function predictRows(model: Model, x: Float64Array, rows: number, proba: boolean): Promise<Prediction> {
  if (model.kind !== 'random-forest' || leafFinder === null || rows === 0) return predictBatch(model, x, rows, proba);
  return predictFromLeaves(model, await leafFinder(model, x, rows), rows, proba);
}

/** The prediction column of `type` (predictionType): a classifier's class indices become its classes. */
function predictionColumn(model: Model, type: DType, prediction: Float64Array | Int32Array): Column {
  if (model.kind !== 'random-forest' || model.task !== 'classification') {
    return type === 'int64' ? { type, values: BigInt64Array.from(prediction, (v) => BigInt(v)), valid: null } : { type: 'float64', values: Float64Array.from(prediction), valid: null };
  }
  const classes = model.classes;
  switch (type) {
    case 'int64': {
      const values = classes.map((c) => BigInt(c as number | bigint));
      return { type, values: BigInt64Array.from(prediction, (i) => values[i]), valid: null };
    }
    case 'bool': return { type, values: Uint8Array.from(prediction, (i) => (classes[i] ? 1 : 0)), valid: null };
    case 'string': return stringColumn(Array.from(prediction, (i) => classes[i] as string));
    default: return { type: 'float64', values: Float64Array.from(prediction, (i) => classes[i] as number), valid: null };
  }
}

/** `batch`'s kept columns followed by the prediction columns. */
export async function appendPredictions(model: Model, batch: Batch, keep: string[] | null, outputName: string, proba: boolean): Promise<Batch> {
  const m = designMatrix(batch, model.featureNames, null);
  const p = await predictRows(model, m.x, m.rows, proba);
  const fields = predictionFields(model, outputName, proba);
  const columns: Column[] = [predictionColumn(model, fields[0].type, p.prediction)];
  const width = fields.length - 1;
  for (let c = 0; c < width; c++) {
    const values = new Float64Array(m.rows);
    for (let r = 0; r < m.rows; r++) values[r] = p.proba![r * width + c];
    columns.push({ type: 'float64', values, valid: null });
  }
  const kept = keep === null ? batch : selectColumns(batch, keep);
  return { schema: [...kept.schema, ...fields], length: batch.length, columns: [...kept.columns, ...columns] };
}
