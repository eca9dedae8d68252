// Shared by the GPU CSV aggregate tests (gpu-csv-aggregate, fuzz-csv-gpu-aggregate): CSV chunk
// sources of a file, the CPU reader + PartialAggregator's partial of a chunk, the GPU path's
// outcome for it, and the comparison of two partials.

import { expect } from 'vitest';
import { valueAt, type Batch, type Schema } from '../../src/engine/batch.js';
import { DEFAULT_CSV_OPTIONS, inferCsvLayout, planCsvChunks, readCsvChunk, type CsvOptions } from '../../src/engine/io/csv/index.js';
import { finalizeAggregate, PartialAggregator, type AggregateSpec, type PartialAggregate } from '../../src/engine/ops/aggregate/index.js';
import { gpuCsvPartialAggregate, type CsvSource, type GpuCsvOptions } from '../../src/engine/exec/gpu-csv-aggregate.js';
import { testGpu } from '../../src/engine/gpu/test-gpu.js';
import { GpuframeError } from '../../src/engine/errors.js';

/** One source per chunk of the file, reading all its columns. */
export async function sourcesOf(path: string, blocksize: number, opts: Partial<CsvOptions> = {}): Promise<CsvSource[]> {
  const options = { ...DEFAULT_CSV_OPTIONS, ...opts };
  const layout = await inferCsvLayout(path, path, options);
  const columns = layout.schema.map((f) => f.name);
  return (await planCsvChunks(layout, options, blocksize)).map((chunk) => ({ kind: 'csv', chunk, layout, options, columns }));
}

/** The schema of the columns a source reads. */
export function inputSchemaOf(source: CsvSource): Schema {
  return source.columns.map((name) => source.layout.schema.find((f) => f.name === name)!);
}

/** The chunk read by the CPU reader and aggregated by the CPU PartialAggregator. */
export function cpuPartial(source: CsvSource, spec: AggregateSpec): { partial: PartialAggregate; schema: Schema; rows: number } {
  const batch = readCsvChunk(source.chunk, source.layout, source.options, source.columns);
  const agg = new PartialAggregator(batch.schema, spec);
  agg.add(batch);
  return { partial: agg.finish(), schema: batch.schema, rows: batch.length };
}

export const cells = (b: Batch) => b.columns.map((c) => Array.from({ length: b.length }, (_, r) => valueAt(c, r)));

/** The finalised table's cells, or the error finalising gives (an int64 sum that overflows). */
export function finalCells(p: PartialAggregate): unknown[][] | { error: string } {
  try {
    return cells(finalizeAggregate(p));
  } catch (err) {
    if (err instanceof GpuframeError) return { error: err.message };
    throw err;
  }
}

/**
 * Same groups in the same order with the same keys and hashes, and the same finalised table (or
 * the same error finalising it).
 * Cells compare exactly (toEqual: floats by Object.is, so -0 is not 0): integer sums are exact,
 * and float sums are the exact sum rounded to double-double on the GPU, which the CPU's
 * double-double accumulation equals whenever it is itself exact.
 */
export function expectSamePartial(got: PartialAggregate, want: PartialAggregate): void {
  expect(got.groups).toBe(want.groups);
  expect(got.schema).toEqual(want.schema);
  expect(got.aggInputTypes).toEqual(want.aggInputTypes);
  expect(got.keys.map((c) => Array.from({ length: got.groups }, (_, g) => valueAt(c, g))))
    .toEqual(want.keys.map((c) => Array.from({ length: want.groups }, (_, g) => valueAt(c, g))));
  expect(Array.from(got.hashes)).toEqual(Array.from(want.hashes));
  expect(finalCells(got)).toEqual(finalCells(want));
}

/** gpuCsvPartialAggregate over the source's chunk: a partial, or why the GPU path declined it. */
export async function gpuOutcome(source: CsvSource, spec: AggregateSpec, options?: GpuCsvOptions) {
  return gpuCsvPartialAggregate(await testGpu(), source, spec, inputSchemaOf(source), options);
}
