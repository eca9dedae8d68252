// Bad input: each case gets the contract's exit code, a message naming what and where, no stack
// trace, and no output file.

import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gpuframe } from './helpers/cli.js';
import { tempDir } from './helpers/data.js';

const dir = tempDir('errors');
const file = (name: string, text: string) => { const p = join(dir, name); writeFileSync(p, text); return p; };
const good = file('good.csv', 'k,v\na,1\nb,2\n');

interface Case { name: string; args: string[]; code: number; message: RegExp }

const cases: Case[] = [
  { name: 'unterminated quote', args: ['read-csv', file('unterminated.csv', 'k,v\na,1\n"b,2\nc,3\n')], code: 3, message: /unterminated\.csv:3.*quote/i },
  { name: 'ragged row', args: ['read-csv', file('ragged.csv', 'k,v\na,1\nb,2,3\n')], code: 3, message: /ragged\.csv:3.*(2|expected).*3/i },
  { name: 'unparsable value for a --dtypes type', args: ['read-csv', file('badint.csv', 'k,v\na,1\nb,x7\n'), '--dtypes', 'v=int64'], code: 3, message: /badint\.csv:3:2.*x7.*'v'/ },
  { name: 'unknown --by column names the closest', args: ['groupby', good, '--by', 'kk', '--agg', 'count()'], code: 2, message: /unknown.*'kk'.*did you mean 'k'/ },
  { name: 'unknown aggregate column', args: ['groupby', good, '--by', 'k', '--agg', 'sum(vv)'], code: 2, message: /'vv'.*did you mean 'v'/ },
  { name: 'a key given twice', args: ['groupby', good, '--by', 'k,k', '--agg', 'count()'], code: 2, message: /key column 'k' is given twice in --by/ },
  { name: 'bad aggregate expression', args: ['groupby', good, '--by', 'k', '--agg', 'median(v)'], code: 2, message: /median/ },
  { name: 'missing file', args: ['read-csv', join(dir, 'nope.csv')], code: 3, message: /nope\.csv.*no such file/i },
  { name: 'empty file', args: ['read-csv', file('empty.csv', '')], code: 3, message: /empty\.csv.*empty/i },
  { name: 'unknown flag', args: ['read-csv', good, '--frobnicate'], code: 2, message: /frobnicate/ },
  { name: 'bad --blocksize', args: ['read-csv', good, '--blocksize', 'lots'], code: 2, message: /--blocksize/ },
  { name: '--blocksize past 32-bit chunk positions', args: ['read-csv', good, '--blocksize', '3GB'], code: 2, message: /--blocksize must be at most 1GB/ },
  { name: 'merge key missing on the right', args: ['merge', good, file('r.csv', 'x,y\n1,2\n'), '--on', 'k'], code: 2, message: /'k'/ },
  { name: '-o equal to an input', args: ['read-csv', good, '-o', good], code: 2, message: /also an input/ },
  // Number flags: text or values out of scikit-learn's range are usage errors, not NaN output.
  { name: 'text for --cluster-std', args: ['make-blobs', '--n-samples', '5', '--cluster-std', 'abc'], code: 2, message: /^gpuframe: --cluster-std expects a number ≥ 0, got 'abc'\n$/ },
  { name: 'negative --cluster-std in a list', args: ['make-blobs', '--n-samples', '5', '--cluster-std', '1,-2,3'], code: 2, message: /--cluster-std expects a number ≥ 0, got '-2'/ },
  { name: '--cluster-std list of the wrong length', args: ['make-blobs', '--n-samples', '5', '--cluster-std', '1,2'], code: 2, message: /--cluster-std has 2 values for 3 centres/ },
  { name: 'text for --class-sep', args: ['make-classification', '--n-samples', '5', '--class-sep', 'abc'], code: 2, message: /^gpuframe: --class-sep expects a number, got 'abc'\n$/ },
  { name: '--flip-y above 1', args: ['make-classification', '--n-samples', '5', '--flip-y', '2'], code: 2, message: /--flip-y expects a number ≥ 0 and ≤ 1, got '2'/ },
  { name: 'centres of different lengths', args: ['make-blobs', '--n-samples', '5', '--centers', '0,0;1,1,1'], code: 2, message: /--centers: every centre needs the same number of coordinates/ },
  { name: '--weights of the wrong length', args: ['make-classification', '--n-samples', '5', '--weights', '0.2,0.3,0.5'], code: 2, message: /--weights has 3 values for 2 classes/ },
  { name: '--weights summing past 1 with the last left out', args: ['make-classification', '--n-samples', '5', '--n-classes', '3', '--n-informative', '3', '--weights', '0.7,0.6'], code: 2, message: /--weights must be shares ≥ 0 summing to at most 1/ },
  { name: 'a hex number for --noise', args: ['make-regression', '--n-samples', '5', '--noise', '0x1'], code: 2, message: /--noise expects a number ≥ 0, got '0x1'/ },
  { name: 'text for --bias', args: ['make-regression', '--n-samples', '5', '--bias', 'x'], code: 2, message: /--bias expects a number, got 'x'/ },
  { name: 'negative --noise', args: ['make-regression', '--n-samples', '5', '--noise', '-1'], code: 2, message: /--noise expects a number ≥ 0, got '-1'/ },
  { name: 'text for --tol', args: ['kmeans', good, '--features', 'v', '--k', '1', '--tol', 'abc', '--model-out', join(dir, 'km-tol.json')], code: 2, message: /--tol expects a number ≥ 0, got 'abc'/ },
  { name: 'text for --alpha', args: ['linreg', good, '--features', 'v', '--target', 'v', '--alpha', 'abc', '--model-out', join(dir, 'lr-alpha.json')], code: 2, message: /--alpha expects a number ≥ 0, got 'abc'/ },
];

describe('bad input', () => {
  for (const c of cases) {
    it(`${c.name}: exit ${c.code}`, async () => {
      const out = join(dir, `out-${c.name.replace(/\W+/g, '-')}.csv`);
      const args = c.args.includes('-o') ? c.args : [...c.args, '-o', out];
      const res = await gpuframe(args);
      expect(res.stderr).toMatch(c.message);
      expect(res.code).toBe(c.code);
      expect(res.stderr).not.toMatch(/\n\s+at /); // no stack trace
      if (!c.args.includes('-o')) expect(existsSync(out)).toBe(false);
    });
  }

  it('predictions whose column the input already has: exit 2, nothing written', async () => {
    const input = file('scored.csv', 'a,b,prediction\n1,2,0\n3,5,1\n5,8,0\n');
    const model = join(dir, 'scored-lr.json');
    expect((await gpuframe(['linreg', input, '--features', 'a', '--target', 'b', '--model-out', model, '-q'])).code).toBe(0);
    const out = join(dir, 'scored-out.csv');
    const res = await gpuframe(['predict', input, '--model', model, '-o', out]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/already has a column 'prediction'.*--keep/);
    expect(existsSync(out)).toBe(false);
    expect((await gpuframe(['predict', input, '--model', model, '--keep', 'a,b', '-o', out])).code).toBe(0);
  });

  it('rf-train --max-features takes decimal text only', async () => {
    const res = await gpuframe(['rf-train', file('forest.csv', 'a,b,y\n1,2,0\n2,3,1\n'), '--target', 'y', '--max-features', '0x1', '--model-out', join(dir, 'mf.json')]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/--max-features expects sqrt, log2, all, a fraction in \(0, 1\] or a count, got '0x1'/);
  });

  it('predict --keep without the target still prints the metric, and writes only the kept columns', async () => {
    const input = file('keep.csv', 'id,a,b\n7,1,2\n8,2,4\n9,3,6\n');
    const model = join(dir, 'keep-lr.json'), out = join(dir, 'keep-out.csv');
    expect((await gpuframe(['linreg', input, '--features', 'a', '--target', 'b', '--model-out', model, '-q'])).code).toBe(0);
    const res = await gpuframe(['predict', input, '--model', model, '--keep', 'id', '-o', out]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toMatch(/R² 1 over 3 rows \(target 'b'\)/);
    expect(readFileSync(out, 'utf8').split('\n')[0]).toBe('id,prediction');
    const twice = await gpuframe(['predict', input, '--model', model, '--keep', 'id,id', '-o', join(dir, 'keep-twice.csv')]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/column 'id' is given twice in --keep/);
  });

  it('kmeans -o onto rows that have a label column is refused before training; a null string target names file and row', async () => {
    const labelled = file('labelled.csv', 'a,label\n1,2\n3,4\n'), model = join(dir, 'labelled.json');
    const res = await gpuframe(['kmeans', labelled, '--features', 'a', '--k', '1', '--model-out', model, '-o', join(dir, 'labelled-out.csv')]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/already has a column 'label'.*predict/);
    expect(existsSync(model)).toBe(false);
    const holed = file('holed.csv', 'x,y\n1,a\n2,b\n3,\n4,a\n');
    const forest = await gpuframe(['rf-train', holed, '--target', 'y', '--model-out', join(dir, 'holed.json'), '--null-values', '']);
    expect(forest.code).toBe(3);
    expect(forest.stderr).toMatch(/holed\.csv.*null in column 'y' \(row 3/);
  });

  it('predict --labels with a model other than k-means: exit 2; k-means labels may be strings', async () => {
    const input = file('clusters.csv', 'a,b,lab\n1,1,x\n1.1,1,x\n9,9,y\n9.2,9,y\n');
    const km = join(dir, 'clusters-km.json'), lr = join(dir, 'clusters-lr.json');
    expect((await gpuframe(['kmeans', input, '--features', 'a,b', '--k', '2', '--model-out', km, '-q'])).code).toBe(0);
    const scored = await gpuframe(['predict', input, '--model', km, '--labels', 'lab', '-o', join(dir, 'clusters-out.csv')]);
    expect(scored.code, scored.stderr).toBe(0);
    expect(scored.stderr).toMatch(/adjusted Rand index 1 over 4 rows/);
    expect((await gpuframe(['linreg', input, '--features', 'a', '--target', 'b', '--model-out', lr, '-q'])).code).toBe(0);
    const res = await gpuframe(['predict', input, '--model', lr, '--labels', 'lab', '-o', join(dir, 'clusters-lr-out.csv')]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/--labels is for k-means models/);
  });

  it('--json: the summary (and predict\'s metric) as JSON on stdout; without -o (the rows would share stdout) exit 2', async () => {
    const input = file('fit.csv', 'a,b\n1,2\n3,5\n5,8\n');
    const model = join(dir, 'fit-lr.json'), out = join(dir, 'fit-out.csv');
    expect((await gpuframe(['linreg', input, '--features', 'a', '--target', 'b', '--model-out', model, '-q'])).code).toBe(0);
    const res = await gpuframe(['predict', input, '--model', model, '-o', out, '--json', '-q']);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ rows: 3, output: out, seconds: expect.any(Number), metric: 'R²', value: 1, target: 'b' });
    expect(res.stderr).toBe('');
    // The other stages' summaries too.
    const grouped = await gpuframe(['groupby', input, '--by', 'a', '--agg', 'count()', '-o', join(dir, 'fit-groups.csv'), '--json']);
    expect(JSON.parse(grouped.stdout)).toEqual({ rows: 3, output: join(dir, 'fit-groups.csv'), seconds: expect.any(Number) });
    const bare = await gpuframe(['predict', input, '--model', model, '--json']);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/--json.*-o/);
  });

  it('unwritable output: exit 1, nothing written', async () => {
    const locked = join(dir, 'locked');
    mkdirSync(locked, { recursive: true });
    chmodSync(locked, 0o500);
    const target = process.getuid?.() === 0 ? join(dir, 'missing-dir', 'out.csv') : join(locked, 'out.csv');
    const res = await gpuframe(['read-csv', good, '-o', target]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/out\.csv/);
    expect(existsSync(target)).toBe(false);
  });

  it('a failure mid-run leaves neither the output nor a temp file behind', async () => {
    const lines = ['k,v'];
    for (let i = 0; i < 50_000; i++) lines.push(`k${i % 10},${i}`);
    lines.push('k1,oops');
    const bad = file('late-error.csv', lines.join('\n') + '\n');
    const outDir = join(dir, 'late');
    mkdirSync(outDir, { recursive: true });
    const res = await gpuframe(['read-csv', bad, '--dtypes', 'v=int64', '-o', join(outDir, 'out.csv'), '--blocksize', '64KB', '--workers', '2']);
    expect(res.code).toBe(3);
    expect(readdirSync(outDir)).toEqual([]);
  });
});
