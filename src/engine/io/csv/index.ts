// CSV reader: a columnar, byte-level parser of chunked CSV files into typed batches.
export { DEFAULT_CSV_OPTIONS, type CsvOptions } from './options.js';
export { isGzipFile, materializeCsvInput } from './gzip.js';
export { inferCsvLayout, type CsvLayout } from './layout.js';
export { chunkFirstLine, guessCsvChunks, GuessedCutsWrong, planCsvChunks, type CsvChunk } from './chunks.js';
export { readCsvChunk } from './read-chunk.js';
export { readCsvFile, type ReadCsvFileOptions } from './read-file.js';
