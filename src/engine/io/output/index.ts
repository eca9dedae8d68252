// Output writers: pick the encoder for a format and the sink for a destination.
// Files are written atomically (temp name, fsync, rename), so `-o` never leaves a partial file.
// The Arrow and Parquet encoders (with apache-arrow and parquet-wasm, up to ~100 ms to import)
// load on their writer's first use, so a worker or a CSV run never loads them.

import type { Schema } from '../../batch.js';
import { UsageError } from '../../errors.js';
import { AtomicFileSink, type ByteSink, StreamSink } from './byte-sink.js';
import { tableWriter } from './table-writer.js';
import { csvWriter, jsonlWriter } from './text-writer.js';
import type { BatchWriter, OutputFormat, PartEncoding } from './types.js';
import { ARROW_BATCH_ROWS, rebatched } from './rebatch.js';

export type { BatchWriter, OutputFormat, PartEncoding, TextFormat } from './types.js';
export { appendRows, encodeRows } from './text-writer.js';
export { ByteBuffer } from './text-encode-buffer.js';
export { cleanStaleTempFiles } from './byte-sink.js';

const FORMAT_OF_EXTENSION: [string, OutputFormat][] = [
  ['.csv', 'csv'], ['.jsonl', 'jsonl'], ['.arrow', 'arrow'], ['.feather', 'arrow'], ['.parquet', 'parquet'],
];

export function formatFromPath(path: string): OutputFormat {
  const lower = path.toLowerCase();
  const hit = FORMAT_OF_EXTENSION.find(([ext]) => lower.endsWith(ext));
  if (!hit) throw new UsageError(`cannot tell the output format of '${path}': use a .csv, .jsonl, .arrow, .feather or .parquet extension, or --format`);
  return hit[1];
}

const arrowWriterModule = () => import('./arrow-writer.js');
const parquetWriterModule = () => import('./parquet-writer.js');

/** A writer into `sink` that imports its encoder on the first write or close (an abort before
 *  then only aborts the sink). */
function importedOnFirstUse(sink: ByteSink, open: () => Promise<BatchWriter>): BatchWriter {
  let opened: Promise<BatchWriter> | null = null;
  const writer = () => (opened ??= open());
  return {
    write: async (batch) => (await writer()).write(batch),
    close: async () => (await writer()).close(),
    abort: async () => (opened === null ? sink.abort() : (await opened).abort()),
  };
}

/** Stdout gets the Arrow IPC stream format (readable as it arrives); files get the file format. */
function writerFor(sink: ByteSink, format: OutputFormat, schema: Schema, arrowIpc: 'file' | 'stream', parts?: PartEncoding): BatchWriter {
  switch (format) {
    case 'csv': return csvWriter(sink, schema);
    case 'jsonl': return jsonlWriter(sink);
    case 'arrow': return rebatched(importedOnFirstUse(sink, async () => (await arrowWriterModule()).arrowWriter(sink, schema, arrowIpc)), ARROW_BATCH_ROWS);
    // Parquet cuts its row groups and their record batches itself, by rows.
    case 'parquet': return importedOnFirstUse(sink, async () => (await parquetWriterModule()).parquetWriter(sink, schema, parts));
    case 'table': return tableWriter(sink, schema);
  }
}

/** A writer that removes its temporary file when a write or close fails, then rethrows. */
function abortingOnFailure(writer: BatchWriter): BatchWriter {
  const guard = async (step: () => Promise<void>) => {
    try {
      await step();
    } catch (err) {
      await writer.abort().catch(() => {});
      throw err;
    }
  };
  return {
    write: (batch) => guard(() => writer.write(batch)),
    writeEncoded: writer.writeEncoded && ((rows) => guard(() => writer.writeEncoded!(rows))),
    close: () => guard(() => writer.close()),
    abort: () => writer.abort(),
  };
}

/** Opens `path` for writing (atomically). Unwritable destinations fail here with a RuntimeFailure.
 *  Temp files that killed runs left beside the destination are removed first (AtomicFileSink). */
export async function openFileWriter(path: string, format: OutputFormat, schema: Schema, parts?: PartEncoding): Promise<BatchWriter> {
  return abortingOnFailure(writerFor(await AtomicFileSink.open(path), format, schema, 'file', parts));
}

/** For stdout. 'table': the first 20 rows as an aligned text table, then '<N> rows'. */
export function openStreamWriter(out: NodeJS.WritableStream, format: OutputFormat, schema: Schema, parts?: PartEncoding): BatchWriter {
  return writerFor(new StreamSink(out), format, schema, 'stream', parts);
}
