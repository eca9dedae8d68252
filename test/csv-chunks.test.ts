// Chunk planning: for random files full of awkward cases (quoted newlines and CRLF, doubled quotes,
// empty fields, fields that are only quotes, no final newline), every blocksize must give chunks
// that start at real record starts with the right physical line, and the same rows as csv-parse.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { stringAt, type StringColumn } from '../src/engine/batch.js';
import { gpuframe } from './helpers/cli.js';
import {
  DEFAULT_CSV_OPTIONS, chunkFirstLine, inferCsvLayout, planCsvChunks, readCsvChunk, type CsvOptions,
} from '../src/engine/io/csv/index.js';

const dir = mkdtempSync(join(tmpdir(), 'csv-chunks-'));

/** A small deterministic PRNG so failures reproduce. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 4294967296; };
}

function awkwardField(rand: () => number, eol: string): string {
  switch (Math.floor(rand() * 10)) {
    case 0: return '';
    case 1: return '""';
    case 2: return '""""';                               // a field that is one quote
    case 3: return `"a,b${eol}c"`;                       // delimiter and line break inside quotes
    case 4: return `"say ""hi""${eol}${eol}"`;           // doubled quotes and blank lines inside quotes
    case 5: return '"\r\n"';                             // CRLF inside quotes
    case 6: return 'é漢字';
    case 7: return `"${eol}"`;
    default: return Math.floor(rand() * 1e6).toString(36);
  }
}

/** A random CSV text with `cols` columns and `rows` data rows, plus its header. */
export function awkwardCsv(seed: number, rows: number, cols: number): string {
  const rand = rng(seed);
  const eol = rand() < 0.5 ? '\n' : '\r\n';
  const lines = [Array.from({ length: cols }, (_, c) => `c${c}`).join(',')];
  for (let r = 0; r < rows; r++) lines.push(Array.from({ length: cols }, () => awkwardField(rand, eol)).join(','));
  let text = lines.join(eol);
  if (rand() < 0.5) text += eol;                        // final newline or not
  if (rand() < 0.3) text += eol + eol;                  // trailing blank lines
  return text;
}

/** Byte offsets where records start, by a plain character-level state machine (the reference). */
function recordStarts(bytes: Uint8Array, from: number): Set<number> {
  const starts = new Set<number>([from]);
  let quoted = false;
  for (let i = from; i < bytes.length; i++) {
    if (bytes[i] === 0x22) quoted = !quoted;
    else if (bytes[i] === 0x0a && !quoted) starts.add(i + 1);
  }
  return starts;
}

function linesBefore(bytes: Uint8Array, pos: number): number {
  let n = 1;
  for (let i = 0; i < pos; i++) if (bytes[i] === 0x0a) n++;
  return n;
}

const allText = (opts: CsvOptions, names: string[]): CsvOptions =>
  ({ ...opts, nullValues: [], dtypes: Object.fromEntries(names.map((n) => [n, 'string' as const])) });

describe('planCsvChunks', () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`random awkward file ${seed}: same rows as csv-parse for every blocksize`, async () => {
      const cols = 2 + (seed % 3);
      const path = join(dir, `awkward-${seed}.csv`);
      writeFileSync(path, awkwardCsv(seed, 300 + seed * 50, cols));
      const bytes = readFileSync(path);
      const expected = (parse(bytes, { skip_empty_lines: true, bom: true }) as string[][]).slice(1);

      const layout0 = await inferCsvLayout(path, path, DEFAULT_CSV_OPTIONS);
      const names = layout0.schema.map((f) => f.name);
      const opts = allText(DEFAULT_CSV_OPTIONS, names);
      const layout = await inferCsvLayout(path, path, opts);
      const starts = recordStarts(bytes, layout.dataStart);
      for (const blocksize of [7, 64, 1000, 1 << 20]) {
        const chunks = await planCsvChunks(layout, opts, blocksize);
        expect(chunks[0].start).toBe(layout.dataStart);
        expect(chunks.at(-1)!.end).toBe(bytes.length);
        const rows: string[][] = [];
        chunks.forEach((chunk, k) => {
          if (k > 0) expect(chunk.start).toBe(chunks[k - 1].end);
          expect(starts.has(chunk.start)).toBe(true);
          expect(chunkFirstLine(chunk)).toBe(linesBefore(bytes, chunk.start));
          const batch = readCsvChunk(chunk, layout, opts, names);
          for (let r = 0; r < batch.length; r++) {
            rows.push(batch.columns.map((col) => stringAt(col as StringColumn, r)));
          }
        });
        if (blocksize === 7) expect(chunks.length).toBeGreaterThan(100);
        expect(rows).toEqual(expected);
      }
    });
  }

  it('a file without quoting splits at every line break; a header-only file gives one empty chunk', async () => {
    const path = join(dir, 'plain.csv');
    writeFileSync(path, 'a,b\n1,"x\n2,y\n3,z\n');
    const opts: CsvOptions = { ...DEFAULT_CSV_OPTIONS, quote: '' };
    const layout = await inferCsvLayout(path, path, opts);
    const chunks = await planCsvChunks(layout, opts, 1);
    expect(chunks.map((c) => [c.start, chunkFirstLine(c)])).toEqual([[4, 2], [9, 3], [13, 4]]);

    const headerOnly = join(dir, 'header-only.csv');
    writeFileSync(headerOnly, 'a,b\n');
    const l2 = await inferCsvLayout(headerOnly, headerOnly, DEFAULT_CSV_OPTIONS);
    const c2 = await planCsvChunks(l2, DEFAULT_CSV_OPTIONS, 64);
    expect(c2).toEqual([{ path: headerOnly, displayName: headerOnly, start: 4, end: 4, firstLine: 2, lineOrigin: { offset: 4, line: 2 } }]);
    expect(readCsvChunk(c2[0], l2, DEFAULT_CSV_OPTIONS, ['a', 'b']).length).toBe(0);
  });

  // Cut k lies at the first record start at or after dataStart + k·blocksize (cut-points.ts); the
  // threaded quote-parity pass (the built module, whose worker script is compiled) gives the same.
  it('cuts sit on the fixed grid, with or without planning threads', async () => {
    const { findCuts: builtFindCuts } = await import('../dist/engine/io/csv/cut-points.js');
    for (const seed of [3, 8]) {
      const path = join(dir, `grid-${seed}.csv`);
      writeFileSync(path, awkwardCsv(seed, 400, 3));
      const layout = await inferCsvLayout(path, path, DEFAULT_CSV_OPTIONS);
      const bytes = new Uint8Array(readFileSync(path));
      const starts = [...recordStarts(bytes, layout.dataStart)].sort((a, b) => a - b);
      for (const blocksize of [1, 13, 200, 5000]) {
        const want: number[] = [];
        for (let g = layout.dataStart + blocksize; g < bytes.length; g += blocksize) {
          const at = starts.find((s) => s >= g);
          if (at !== undefined && at < bytes.length && at !== want.at(-1)) want.push(at);
        }
        const req = { path, displayName: path, quote: 0x22, fileSize: bytes.length };
        expect(await builtFindCuts(req, layout.dataStart, blocksize, 1)).toEqual(want);
        expect(await builtFindCuts(req, layout.dataStart, blocksize, 3)).toEqual(want);
      }
    }
  });

  // Large files start on guessed cuts (the next line break after each grid point) while the exact
  // pass runs; GPUFRAME_PLAN_THREADS=2 makes these small files count as large. The built modules:
  // the exact pass runs in worker threads.
  it('guessed cuts are confirmed exactly when they equal the planned ones', async () => {
    const built = await import('../dist/engine/io/csv/chunks.js');
    process.env.GPUFRAME_PLAN_THREADS = '2';
    const outcomes = new Set<string>();
    try {
      const plainQuoted = join(dir, 'quoted-no-breaks.csv');
      writeFileSync(plainQuoted, 'a,b\n' + Array.from({ length: 300 }, (_, i) => `"k ""${i}"", x",${i}`).join('\n') + '\n');
      const files = [plainQuoted, ...[1, 2, 3].map((seed) => {
        const path = join(dir, `guess-${seed}.csv`);
        writeFileSync(path, awkwardCsv(seed, 300, 3));
        return path;
      })];
      for (const path of files) {
        const layout = await inferCsvLayout(path, path, DEFAULT_CSV_OPTIONS);
        for (const blocksize of [7, 64, 1000]) {
          const exact = await built.planCsvChunks(layout, DEFAULT_CSV_OPTIONS, blocksize);
          const { chunks, confirm } = await built.guessCsvChunks(layout, DEFAULT_CSV_OPTIONS, blocksize);
          expect(confirm).not.toBeNull();
          const same = JSON.stringify(chunks) === JSON.stringify(exact);
          if (same) await expect(confirm!()).resolves.toBeUndefined();
          else await expect(confirm!()).rejects.toBeInstanceOf(built.GuessedCutsWrong);
          // Where a guess was wrong, some chunk ends inside quotes, which the reader refuses.
          const readable = chunks.every((chunk) => { try { readCsvChunk(chunk, layout, DEFAULT_CSV_OPTIONS, layout.schema.map((f) => f.name)); return true; } catch { return false; } });
          expect(readable).toBe(same);
          if (path === plainQuoted) expect(same).toBe(true);
          outcomes.add(same ? 'confirmed' : 'wrong');
        }
      }
    } finally {
      delete process.env.GPUFRAME_PLAN_THREADS;
    }
    expect([...outcomes].sort()).toEqual(['confirmed', 'wrong']);
  });

  it('a run on guessed cuts that were wrong starts again on exact ones: same bytes, to a file or streamed to stdout', async () => {
    const path = join(dir, 'guess-run.csv');
    writeFileSync(path, awkwardCsv(4, 2000, 3));
    const guessing = { GPUFRAME_PLAN_THREADS: '2' };
    const trace = join(dir, 'guess-run.json');
    const args = (out: string) => ['read-csv', path, '--blocksize', '64B', '--device', 'cpu', '--workers', '2', '-o', out];
    const exactOut = join(dir, 'guess-run-exact.csv');
    const guessedOut = join(dir, 'guess-run-guessed.csv');
    expect((await gpuframe(args(exactOut))).code).toBe(0);
    const guessed = await gpuframe([...args(guessedOut), '--trace', trace], { env: guessing });
    expect(guessed.code, guessed.stderr).toBe(0);
    expect(readFileSync(guessedOut).equals(readFileSync(exactOut))).toBe(true);
    // The first attempt planned (guessed) and confirmed chunks; the second planned exact ones.
    const names = (JSON.parse(readFileSync(trace, 'utf8')).traceEvents as { name: string }[]).map((e) => e.name);
    expect(names.filter((n) => n.startsWith('confirm chunks')).length).toBe(1);
    expect(names.filter((n) => n.startsWith('plan chunks')).length).toBe(2);
    const streamed = await gpuframe(['read-csv', path, '--blocksize', '64B', '--device', 'cpu', '--workers', '2', '--format', 'csv'], { env: guessing });
    expect(streamed.code, streamed.stderr).toBe(0);
    expect(streamed.stdoutBytes.equals(readFileSync(exactOut))).toBe(true);
    // A groupby consumes partial results as they come (no confirmation unless a task fails).
    const groupby = (out: string) => ['groupby', path, '--by', 'c0', '--agg', 'count(),max(c1)', '--blocksize', '64B', '--device', 'cpu', '--workers', '2', '-o', out];
    expect((await gpuframe(groupby(join(dir, 'guess-agg-exact.csv')))).code).toBe(0);
    const agg = await gpuframe(groupby(join(dir, 'guess-agg.csv')), { env: guessing });
    expect(agg.code, agg.stderr).toBe(0);
    expect(readFileSync(join(dir, 'guess-agg.csv')).equals(readFileSync(join(dir, 'guess-agg-exact.csv')))).toBe(true);
  }, 60_000);

  it('an error in a file planned on guessed cuts is reported as on exact ones (file, line, column)', async () => {
    const path = join(dir, 'guess-bad.csv');
    const rows = Array.from({ length: 400 }, (_, i) => `${i},"t ${i}"`);
    rows[333] = 'x333,"t 333"';
    writeFileSync(path, 'n,t\n' + rows.join('\n') + '\n');
    const args = ['groupby', path, '--by', 't', '--agg', 'sum(n)', '--dtypes', 'n=int64', '--blocksize', '100B', '--device', 'cpu', '--workers', '2', '-o', join(dir, 'guess-bad.out.csv')];
    const exact = await gpuframe(args);
    const guessed = await gpuframe(args, { env: { GPUFRAME_PLAN_THREADS: '2' } });
    expect(exact.code).toBe(3);
    expect(exact.stderr).toMatch(/guess-bad\.csv:335:1: cannot parse 'x333'/);
    expect(guessed.code).toBe(exact.code);
    expect(guessed.stderr).toBe(exact.stderr);
  }, 60_000);
});

