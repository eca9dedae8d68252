// The CPU CSV path's stages on one 64 MB chunk of a flights CSV (bench/generate.mjs), each repeated
// and the best time kept: tokenize (with the reused field table), build the 7 columns, encode CSV.
//   npm run build && node bench/csv-stages.mjs flights.csv   (REPS=5)
import { readFileSync } from 'node:fs';
const D = new URL('../dist/engine/', import.meta.url).href;
const { tokenize } = await import(D + 'io/csv/tokenizer.js');
const { buildColumn } = await import(D + 'io/csv/columns.js');
const { dialectOf, DEFAULT_CSV_OPTIONS } = await import(D + 'io/csv/options.js');
const { encodeCsvRows } = await import(D + 'io/output/csv-encode.js');

const all = readFileSync(process.argv[2]);
const headerEnd = all.indexOf(10) + 1;
const buf = all.subarray(headerEnd, all.indexOf(10, headerEnd + (64 << 20)) + 1);
const d = dialectOf(DEFAULT_CSV_OPTIONS);
const types = ['int64', 'string', 'string', 'string', 'int64', 'int64', 'float64'];
const problems = { fail(m) { throw new Error(m); }, ragged() { throw new Error('ragged record'); } };
const reps = Number(process.env.REPS ?? 5);
const times = { tokenize: [], build: [], encode: [] };
for (let k = 0; k < reps; k++) {
  let t0 = performance.now();
  const table = tokenize(buf, 0, buf.length, d, { fieldsPerRecord: types.length, maxRecords: Infinity, toIsRecordEnd: true, skipBlankLines: true, scratchTable: true }, problems);
  times.tokenize.push(performance.now() - t0);
  t0 = performance.now();
  const columns = types.map((type, c) => buildColumn(buf, table, c, type, d, (r) => { throw new Error(`bad value in record ${r}`); }));
  times.build.push(performance.now() - t0);
  t0 = performance.now();
  encodeCsvRows({ schema: types.map((type, i) => ({ name: `c${i}`, type })), length: table.records, columns });
  times.encode.push(performance.now() - t0);
}
for (const [stage, t] of Object.entries(times)) {
  const best = Math.min(...t);
  console.log(`${stage.padEnd(9)} ${best.toFixed(0)} ms  ${(buf.length / 1e3 / best).toFixed(0)} MB/s`);
}
