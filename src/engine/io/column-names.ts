// The names gpuframe gives an input's columns, from the names the input itself gives them: a CSV
// header (every name empty without one), or the fields of an Arrow IPC or Parquet schema. One rule
// for every format, so that no input gives a column an empty name.

import { DataError } from '../errors.js';

/**
 * The input's names, with a name for each empty one: `column<i>`, i counted from 0 as --no-header
 * names them (DuckDB's names too; pandas says `Unnamed: <i>`), or `column<i>_<n>` with the smallest
 * n >= 1 when the input already gives that name, so a generated name never takes one the file
 * gives (pandas' `to_csv` writes an empty name for its index: `,a,b`). A non-empty name given twice
 * is a DataError naming both positions (1-based): gpuframe could not know which column a flag means.
 * `line` is the CSV header's line; Arrow and Parquet schemas have none.
 */
export function columnNames(given: readonly string[], file?: string, line?: number): string[] {
  const taken = new Set(given);
  const names = given.map((text, c) => {
    if (text !== '') return text;
    let name = `column${c}`;
    for (let n = 1; taken.has(name); n++) name = `column${c}_${n}`;
    taken.add(name);
    return name;
  });
  const seen = new Map<string, number>();
  names.forEach((name, c) => {
    const earlier = seen.get(name);
    if (earlier !== undefined) {
      throw new DataError(`duplicate column name '${name}' at columns ${earlier + 1} and ${c + 1}`,
        line === undefined ? { file } : { file, line, column: c + 1 });
    }
    seen.set(name, c);
  });
  return names;
}
