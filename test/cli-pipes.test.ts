// The lazy plan over shell pipes: earlier stages emit a one-line plan and read no data; the last
// stage runs the whole DAG once. Plus output format selection and determinism of output bytes.

import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { BIN, gpuframe, shell } from './helpers/cli.js';
import { factCsv, tempDir } from './helpers/data.js';
import { query } from './helpers/duckdb.js';

const dir = tempDir('pipes');
const facts = join(dir, 'facts.csv');
const dims = join(dir, 'dims.csv');
const poisoned = join(dir, 'poisoned.csv');

beforeAll(() => {
  factCsv(facts, { rows: 30_000, groups: 200, seed: 5 });
  const d = ['ki,label'];
  for (let g = -100; g < 100; g += 2) d.push(`${g},label ${g}`);
  writeFileSync(dims, d.join('\n') + '\n');
  // Valid for the first 150,000 rows (far past any inference sample), then one bad integer.
  const lines = ['k,v'];
  for (let i = 0; i < 150_000; i++) lines.push(`k${i % 10},${i}`);
  lines.push('k1,not-a-number');
  writeFileSync(poisoned, lines.join('\n') + '\n');
});

describe('plans over pipes', () => {
  it('a stage whose stdout is a pipe writes one line of versioned JSON with a hint', async () => {
    const res = await gpuframe(['read-csv', facts]); // stdout is a pipe here
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const plan = JSON.parse(lines[0]);
    expect(plan.version).toBe(1);
    expect(plan.hint).toMatch(/--format csv/);
    expect(plan.plan.kind).toBe('scan');
  });

  it('a merge\'s suffixed columns and predict\'s plan reach the next stage of a pipe', async () => {
    const both = join(dir, 'both.csv');
    writeFileSync(both, 'x,y\n1,a\n2,b\n2,c\n');
    // Only y_x is asked for; the right side's y must still be read, or y would lose its suffix.
    const piped = await shell(`gpuframe merge '${both}' '${both}' --on x | gpuframe groupby --by x --agg 'nunique(y_x)' --format csv`);
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toBe('x,nunique_y_x\n1,1\n2,2\n');
    const data = join(dir, 'lin.csv'), model = join(dir, 'lin.json');
    writeFileSync(data, 'a,b\n1,2\n2,4\n3,6\n');
    expect((await gpuframe(['linreg', data, '--features', 'a', '--target', 'b', '--model-out', model, '-q'])).code).toBe(0);
    const scored = await shell(`gpuframe predict '${data}' --model '${model}' | gpuframe groupby --by a --agg 'count(),sum(prediction)' --format csv`);
    expect(scored.code, scored.stderr).toBe(0);
    expect(scored.stdout.split('\n')[0]).toBe('a,count,sum_prediction');
  });

  it('stdin of fewer than 4 bytes is read as CSV; -o onto a FIFO writes into it and leaves it a FIFO', async () => {
    const tiny = await shell(`printf 'a\\n' | gpuframe read-csv --format csv`);
    expect(tiny.code, tiny.stderr).toBe(0);
    expect(tiny.stdout).toBe('a\n');
    const fifo = join(dir, 'out.fifo'), got = join(dir, 'from-fifo.csv');
    const res = await shell(`rm -f '${fifo}' && mkfifo '${fifo}' && { cat '${fifo}' > '${got}' & reader=$!; } && gpuframe read-csv '${dims}' -o '${fifo}' --format csv -q && wait $reader && test -p '${fifo}'`);
    expect(res.code, res.stderr).toBe(0);
    expect(readFileSync(got, 'utf8')).toBe(readFileSync(dims, 'utf8'));
  });

  it('a stage that fails after spooling stdin leaves no copy of it behind, alone or after a stage that handed it on', async () => {
    const spool = join(dir, 'spool-tmp');
    mkdirSync(spool, { recursive: true });
    const env = { TMPDIR: spool };
    for (const script of [`cat '${dims}' | gpuframe groupby --by nope --agg 'count()' --format csv`, `cat '${dims}' | gpuframe read-csv | gpuframe groupby --by nope --agg 'count()' --format csv`]) {
      const res = await shell(script, { env });
      expect(res.code).toBe(2);
      expect(readdirSync(spool)).toEqual([]);
    }
    const ok = await shell(`cat '${dims}' | gpuframe read-csv | gpuframe groupby --by ki --agg 'count()' --format csv`, { env });
    expect(ok.code, ok.stderr).toBe(0);
    expect(readdirSync(spool)).toEqual([]);
  });

  it('a spool handed to a stage that failed before reading its plan is removed by a later run, once its owner is gone', async () => {
    const spool = join(dir, 'spool-orphan');
    mkdirSync(spool, { recursive: true });
    const res = await shell(`cat '${dims}' | gpuframe read-csv | gpuframe groupby --no-such-flag`, { env: { TMPDIR: spool } });
    expect(res.code).toBe(2);
    const left = readdirSync(spool);
    expect(left).toEqual([expect.stringMatching(/^gpuframe-stdin-\d+-[0-9a-f]+\.csv$/)]);
    // Younger than the grace period (a plan on its way to the next stage): kept.
    expect((await gpuframe(['read-csv', dims, '-q', '--format', 'csv'], { env: { TMPDIR: spool } })).code).toBe(0);
    expect(readdirSync(spool)).toEqual(left);
    const later = await gpuframe(['read-csv', dims, '-q', '--format', 'csv'], { env: { TMPDIR: spool, GPUFRAME_SPOOL_ORPHAN_MS: '0' } });
    expect(later.code, later.stderr).toBe(0);
    expect(readdirSync(spool)).toEqual([]);
  });

  it('CSV flags given to a stage that reads a plan are refused (they would be ignored), but not by merge with a CSV file on its other side', async () => {
    const res = await shell(`gpuframe read-csv '${dims}' | gpuframe groupby --by ki --agg 'count()' --delimiter ';' --dtypes ki=string --format csv`);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/--delimiter, --dtypes: stdin holds the plan of an earlier stage/);
    const merged = await shell(`gpuframe read-csv '${dims}' | gpuframe merge - '${dims}' --on ki --dtypes ki=int64 --format csv`);
    expect(merged.code, merged.stderr).toBe(0);
    const plain = await shell(`gpuframe read-csv '${dims}' | gpuframe groupby --by ki --agg 'count()' --format csv`);
    expect(plain.code, plain.stderr).toBe(0);
  });

  it('SIGINT while stdin is being spooled removes the copy', async () => {
    const spool = join(dir, 'spool-int');
    mkdirSync(spool, { recursive: true });
    const child = spawn(process.execPath, [BIN, 'read-csv', '-o', join(spool, 'never.csv')], { env: { ...process.env, TMPDIR: spool }, stdio: ['pipe', 'ignore', 'pipe'] });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    child.stdin.write('a,b\n1,2\n'); // and the pipe stays open: still spooling
    for (let waited = 0; waited < 20_000 && !readdirSync(spool).some((n) => n.startsWith('gpuframe-stdin-')); waited += 20) await new Promise((r) => setTimeout(r, 20));
    expect(readdirSync(spool).some((n) => n.startsWith('gpuframe-stdin-'))).toBe(true);
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(readdirSync(spool)).toEqual([]);
  });

  it('a malformed plan on stdin is a usage error naming where, not an internal error', async () => {
    const real = JSON.parse((await gpuframe(['read-csv', facts])).stdout);
    const broken = { ...real, plan: { kind: 'project', columns: ['b'], input: { ...real.plan, files: undefined } } };
    const res = await gpuframe(['groupby', '--by', 'b', '--agg', 'count()', '--format', 'csv'], { stdin: JSON.stringify(broken) + '\n' });
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^gpuframe: the plan on stdin is malformed at plan\.input: the scan node's 'files' is missing/);
    const intact = await gpuframe(['groupby', '--by', 'b', '--agg', 'count()', '--format', 'csv'], { stdin: JSON.stringify(real) + '\n' });
    expect(intact.code, intact.stderr).toBe(0);
  });

  it('three stages run once, in the last process; earlier stages read no data', async () => {
    // If stage 1 or 2 parsed the file they would fail on the poisoned last row; they must not.
    const first = await shell(`gpuframe read-csv '${poisoned}' | gpuframe groupby --by k --agg 'sum(v)' | cat`);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout).plan.kind).toBe('aggregate');
    const out = join(dir, 'never.csv');
    const last = await shell(`gpuframe read-csv '${poisoned}' | gpuframe groupby --by k --agg 'sum(v)' | gpuframe read-csv -o '${out}'`);
    expect(last.code).toBe(3);
    expect(last.stderr).toMatch(/poisoned\.csv:150002/);
    expect(existsSync(out)).toBe(false);
  });

  it('read-csv | merge - dims | groupby -o runs the joined aggregate correctly', async () => {
    const out = join(dir, 'pipeline.csv');
    const trace = join(dir, 'trace.json');
    const res = await shell(`gpuframe read-csv '${facts}' | gpuframe merge - '${dims}' --on ki | gpuframe groupby --by label --agg 'count(),sum(i)' -o '${out}' --trace '${trace}'`);
    expect(res.code, res.stderr).toBe(0);
    const ref = await query(`select label, count(*)::VARCHAR, sum(i)::VARCHAR from read_csv('${facts}', types={'i':'BIGINT','ki':'BIGINT'}) f
      join read_csv('${dims}') d on f.ki = d.ki group by label order by label`);
    const ours = readFileSync(out, 'utf8').trim().split('\n').slice(1).map((l) => l.split(','));
    expect(ours).toEqual(ref.map((r) => r.map(String)));
    const events = JSON.parse(readFileSync(trace, 'utf8')).traceEvents.filter((e: { ph: string }) => e.ph === 'X');
    expect(events.length).toBeGreaterThan(0);
  });

  it('explain prints the optimised plan with projection pushed into the scan', async () => {
    const res = await shell(`gpuframe read-csv '${facts}' | gpuframe groupby --by ks --agg 'sum(i)' | gpuframe explain`);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/FinalAggregate/);
    expect(res.stdout).toMatch(/PartialAggregate/);
    expect(res.stdout).toMatch(/columns \[ks, i\] of 6/);
    const dot = await gpuframe(['groupby', facts, '--by', 'ks', '--agg', 'count()', '--explain', '--dot']);
    expect(dot.stdout).toMatch(/^digraph plan \{/);
  });

  it('--format picks the stdout format; a regular-file stdout gets CSV', async () => {
    const jsonl = await gpuframe(['groupby', facts, '--by', 'b', '--agg', 'count()', '--format', 'jsonl']);
    expect(jsonl.code, jsonl.stderr).toBe(0);
    const rows = jsonl.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(rows.map((r) => r.b)).toEqual([false, true, null]);
    const file = join(dir, 'redirected.csv');
    const res = await shell(`gpuframe groupby '${facts}' --by b --agg 'count()' > '${file}'`);
    expect(res.code, res.stderr).toBe(0);
    expect(readFileSync(file, 'utf8').split('\n')[0]).toBe('b,count');
  });

  it('with -o, --format names the file\'s format whatever its extension; a stdout-only format is refused', async () => {
    const dat = join(dir, 'counts.dat'), named = join(dir, 'counts-jsonl.csv');
    expect((await gpuframe(['groupby', facts, '--by', 'b', '--agg', 'count()', '-o', dat, '--format', 'csv'])).code).toBe(0);
    expect(readFileSync(dat, 'utf8').split('\n')[0]).toBe('b,count');
    expect((await gpuframe(['groupby', facts, '--by', 'b', '--agg', 'count()', '-o', named, '--format', 'jsonl'])).code).toBe(0);
    expect(JSON.parse(readFileSync(named, 'utf8').split('\n')[0])).toHaveProperty('count');
    const table = await gpuframe(['groupby', facts, '--by', 'b', '--agg', 'count()', '-o', join(dir, 'counts-table.csv'), '--format', 'table']);
    expect(table.code).toBe(2);
    expect(table.stderr).toMatch(/--format table.*stdout/);
    expect(existsSync(join(dir, 'counts-table.csv'))).toBe(false);
  });
});

describe('stages in other directories; messages name files as the user wrote them', () => {
  // Inputs named relative to `here`; later stages run in `elsewhere`, which holds none of them.
  const here = tempDir('pipes-here');
  const elsewhere = tempDir('pipes-elsewhere');
  const escaped = (name: string) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

  beforeAll(async () => {
    writeFileSync(join(here, 'rel.csv'), 'k,x\na,1\nb,2\na,3\n');
    for (const name of ['rel.parquet', 'rel.arrow']) {
      expect((await gpuframe(['read-csv', 'rel.csv', '-o', name, '-q'], { cwd: here })).code).toBe(0);
    }
  });

  it('a later stage may run in another directory: CSV, Parquet and Arrow inputs, output relative to that stage', async () => {
    for (const name of ['rel.csv', 'rel.parquet', 'rel.arrow']) {
      const res = await shell(`gpuframe read-csv ${name} | (cd '${elsewhere}' && gpuframe groupby --by k --agg 'sum(x)' -o sums-${name}.csv -q)`, { cwd: here });
      expect(res.code, `${name}: ${res.stderr}`).toBe(0);
      expect(readFileSync(join(elsewhere, `sums-${name}.csv`), 'utf8')).toBe('k,sum_x\na,4\nb,2\n');
    }
  });

  it('explain and --dot in another directory show the relative spelling, not the absolute path the plan opens', async () => {
    const text = await shell(`gpuframe read-csv rel.csv | gpuframe groupby --by k --agg 'sum(x)' | (cd '${elsewhere}' && gpuframe explain)`, { cwd: here });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/Scan csv rel\.csv \(/);
    const dot = await shell(`gpuframe read-csv rel.parquet | (cd '${elsewhere}' && gpuframe groupby --by k --agg 'count()' --explain --dot)`, { cwd: here });
    expect(dot.code, dot.stderr).toBe(0);
    expect(dot.stdout).toMatch(/Scan parquet rel\.parquet/);
    for (const out of [text.stdout, dot.stdout]) expect(out).not.toContain(here);
  });

  it('a Parquet or Arrow file that turned bad between the stages is named by its relative spelling', async () => {
    for (const name of ['later.parquet', 'later.arrow']) {
      expect((await gpuframe(['read-csv', 'rel.csv', '-o', name, '-q'], { cwd: here })).code).toBe(0);
      const plan = (await gpuframe(['read-csv', name], { cwd: here })).stdout;
      writeFileSync(join(here, name), 'no longer what it was when the plan was made');
      const res = await gpuframe(['groupby', '--by', 'k', '--agg', 'count()', '--format', 'csv'], { stdin: plan, cwd: elsewhere });
      expect(res.code, res.stderr).toBe(3);
      expect(res.stderr).toMatch(new RegExp(`^gpuframe: ${escaped(name)}: not a readable (Parquet|Arrow IPC) file`));
    }
  });

  it('machine-learning data errors name the input as written, also when it is gzipped (not its decompressed copy)', async () => {
    writeFileSync(join(here, 'holes.csv'), 'a,b\n1,2\n,3\n4,5\n');
    writeFileSync(join(here, 'holes.csv.gz'), gzipSync('a,b\n1,2\n,3\n4,5\n'));
    for (const name of ['holes.csv', 'holes.csv.gz']) {
      const res = await shell(`gpuframe read-csv ${name} | (cd '${elsewhere}' && gpuframe kmeans --features a,b --k 2 --model-out m.json)`, { cwd: here });
      expect(res.code, res.stderr).toBe(3);
      expect(res.stderr).toMatch(new RegExp(`^gpuframe: ${escaped(name)} \\(column 'a'\\): null in column 'a'`));
    }
  });

  it('predict --model: a stage in another directory scores with the model file the first stage read, not a same-named one there', async () => {
    writeFileSync(join(here, 'lin.csv'), 'a,b\n1,2\n2,4\n3,6\n');
    expect((await gpuframe(['linreg', 'lin.csv', '--features', 'a', '--target', 'b', '--model-out', 'model.json', '-q'], { cwd: here })).code).toBe(0);
    // A decoy of the same name, size and modification time: a stamp without the directory would take it for the model.
    const model = join(here, 'model.json'), decoy = join(elsewhere, 'model.json');
    writeFileSync(decoy, 'x'.repeat(statSync(model).size));
    for (const f of [model, decoy]) utimesSync(f, 1_700_000_000, 1_700_000_000);
    const direct = await gpuframe(['predict', 'lin.csv', '--model', 'model.json', '--format', 'csv'], { cwd: here });
    expect(direct.code, direct.stderr).toBe(0);
    const piped = await shell(`gpuframe predict lin.csv --model model.json | (cd '${elsewhere}' && gpuframe read-csv --format csv)`, { cwd: here });
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toBe(direct.stdout);
  });

  it('errors about gzip or Arrow data on stdin name -, not the spooled copy', async () => {
    // Large enough that the schema sample (8 MB decompressed) ends before the damage: the run finds it.
    const lines = ['k,v'];
    for (let i = 0; i < 700_000; i++) lines.push(`key${i % 100},${i}`);
    const big = gzipSync(lines.join('\n') + '\n');
    const inputs: [string, Buffer, RegExp][] = [
      ['damaged gzip', gzipSync('k,v\n1,2\n').subarray(0, 15), /not a valid gzip file/],
      ['gzip cut short past the sample', big.subarray(0, big.length - 50), /cannot decompress gzip input/],
      ['Arrow file garbage', Buffer.from('ARROW1 and then nothing an Arrow reader could use'), /not a readable Arrow IPC file/],
      ['Arrow stream garbage', Buffer.concat([Buffer.from([0xff, 0xff, 0xff, 0xff]), Buffer.from('not a message at all, just bytes')]), /not a readable Arrow IPC file/],
    ];
    for (const [what, stdin, message] of inputs) {
      const res = await gpuframe(['groupby', '--by', 'k', '--agg', 'count()', '--format', 'csv'], { stdin });
      expect(res.code, `${what}: ${res.stderr}`).toBe(3);
      expect(res.stderr, what).toMatch(new RegExp(`^gpuframe: -: ${message.source}`));
      expect(res.stderr, what).not.toMatch(/gpuframe-stdin/);
    }
  });
});

describe('a reader that stops early', () => {
  it('`gpuframe … | head -1` ends quietly with 141 (SIGPIPE\'s status), not an internal error', async () => {
    const res = await shell(`gpuframe read-csv '${facts}' --device cpu --format csv | head -1; echo "status \${PIPESTATUS[0]}" >&2`);
    expect(res.stdout.split('\n')[0]).toBe(readFileSync(facts, 'utf8').split('\n')[0]);
    expect(res.stderr.trim()).toBe('status 141');
  });

  it('so does -o onto a FIFO whose reader stops early', async () => {
    const fifo = join(dir, 'early.fifo');
    const res = await shell(`rm -f '${fifo}' && mkfifo '${fifo}' && { head -c 10 '${fifo}' > /dev/null & } && gpuframe read-csv '${facts}' --device cpu -o '${fifo}' --format csv; echo "status $?" >&2`);
    expect(res.stderr.trim()).toBe('status 141');
  });
});

describe('determinism', () => {
  it('the same bytes for --workers 1, 2 and several block sizes', async () => {
    const variants = [['--workers', '1', '--blocksize', '64MB'], ['--workers', '2', '--blocksize', '100KB'], ['--workers', '2', '--blocksize', '17KB'], ['--workers', '0', '--blocksize', '1MB']];
    const outputs: Buffer[] = [];
    for (const [i, v] of variants.entries()) {
      const out = join(dir, `det-${i}.csv`);
      const res = await gpuframe(['groupby', facts, '--by', 'ks,b', '--agg', 'count(),sum(f),mean(f),var(f),std(i),sum(i),nunique(ki)', '-o', out, ...v]);
      expect(res.code, res.stderr).toBe(0);
      outputs.push(readFileSync(out));
    }
    for (const o of outputs.slice(1)) expect(o.equals(outputs[0])).toBe(true);
  });

  it('Arrow and Parquet files too: their record batches, pages and row groups follow the rows, not the partitions', async () => {
    // 300k rows: more than one Arrow record batch (2^18 rows) and four Parquet batches (2^16), cut at other places by every partitioning.
    const file = join(dir, 'det-rows.csv');
    const lines = ['id,s,x,b'];
    for (let i = 0; i < 300_000; i++) lines.push(`${i},name_${(i * 31) % 977},${(i % 1013) / 8},${i % 3 === 0}`);
    writeFileSync(file, lines.join('\n') + '\n');
    const variants = [['--workers', '1', '--blocksize', '64MB'], ['--workers', '2', '--blocksize', '700KB'], ['--workers', '2', '--blocksize', '177KB']];
    for (const ext of ['arrow', 'parquet']) {
      const outputs: Buffer[] = [];
      for (const [i, v] of variants.entries()) {
        const out = join(dir, `det-rows-${i}.${ext}`);
        const res = await gpuframe(['read-csv', file, '-o', out, ...v]);
        expect(res.code, res.stderr).toBe(0);
        outputs.push(readFileSync(out));
      }
      for (const o of outputs.slice(1)) expect(o.equals(outputs[0]), ext).toBe(true);
    }
  });
});

describe('memory limit', () => {
  it('a groupby whose groups exceed --memory-limit spills by key range and gives the same bytes', async () => {
    const file = join(dir, 'many-groups.csv');
    const lines = ['k,s,v'];
    // Each key three times in a row: partials hold a third of their rows as groups (with a group per
    // row the rows would be exchanged by key range instead: row-exchange.ts).
    for (let i = 0; i < 200_000; i++) lines.push(`${(Math.floor(i / 3) * 7919) % 100_003},name_${Math.floor(i / 3) % 1009},${(i % 997) * 0.37 - 100}`);
    writeFileSync(file, lines.join('\n') + '\n');
    const args = ['groupby', file, '--by', 'k,s', '--agg', 'count(),sum(v),var(v),nunique(s)', '--blocksize', '256KB', '--workers', '2'];
    const free = join(dir, 'groups-free.csv');
    const tight = join(dir, 'groups-tight.csv');
    const trace = join(dir, 'groups-tight.json');
    expect((await gpuframe([...args, '-o', free])).code).toBe(0);
    const res = await gpuframe([...args, '-o', tight, '--memory-limit', '8MB', '--trace', trace]);
    expect(res.code, res.stderr).toBe(0);
    expect(readFileSync(tight).equals(readFileSync(free))).toBe(true);
    // The spilled result comes back as several key-range fragments, merged by the workers, instead of one batch.
    const spilled = JSON.parse(readFileSync(trace, 'utf8')).traceEvents.filter((e: { name?: string }) => e.name?.includes('(aggregate-range)'));
    expect(spilled.length).toBeGreaterThan(1);
  });
});
