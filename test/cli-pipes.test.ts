// The lazy plan over shell pipes: earlier stages emit a one-line plan and read no data; the last
// stage runs the whole DAG once. Plus output format selection and determinism of output bytes.

import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { gpuframe, shell } from './helpers/cli.js';
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

describe('a reader that stops early', () => {
  it('`gpuframe … | head -1` ends quietly with 141 (SIGPIPE\'s status), not an internal error', async () => {
    const res = await shell(`gpuframe read-csv '${facts}' --device cpu --format csv | head -1; echo "status \${PIPESTATUS[0]}" >&2`);
    expect(res.stdout.split('\n')[0]).toBe(readFileSync(facts, 'utf8').split('\n')[0]);
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
});

describe('memory limit', () => {
  it('a groupby whose groups exceed --memory-limit spills by key range and gives the same bytes', async () => {
    const file = join(dir, 'many-groups.csv');
    const lines = ['k,s,v'];
    for (let i = 0; i < 200_000; i++) lines.push(`${(i * 7919) % 100_003},name_${i % 1009},${(i % 997) * 0.37 - 100}`);
    writeFileSync(file, lines.join('\n') + '\n');
    const args = ['groupby', file, '--by', 'k,s', '--agg', 'count(),sum(v),var(v),nunique(s)', '--blocksize', '256KB', '--workers', '2'];
    const free = join(dir, 'groups-free.csv');
    const tight = join(dir, 'groups-tight.csv');
    const trace = join(dir, 'groups-tight.json');
    expect((await gpuframe([...args, '-o', free])).code).toBe(0);
    const res = await gpuframe([...args, '-o', tight, '--memory-limit', '8MB', '--trace', trace]);
    expect(res.code, res.stderr).toBe(0);
    expect(readFileSync(tight).equals(readFileSync(free))).toBe(true);
    // The spilled result comes back as several key-range fragments instead of one batch.
    const spilled = JSON.parse(readFileSync(trace, 'utf8')).traceEvents.filter((e: { name?: string }) => e.name?.includes('(spilled)'));
    expect(spilled.length).toBeGreaterThan(1);
  });
});
