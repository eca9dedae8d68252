// The bad-input corpus (fixtures/bad/cases.json, files made by fixtures/bad/make.mjs): every case
// exits with the contract's code and a message naming what is wrong and where (file, line and
// column, or the field or flag), prints no stack trace, and writes nothing: the output folder
// stays empty and no input file changes (including when -o names an input).

import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gpuframe, ROOT } from './helpers/cli.js';
import { tempDir } from './helpers/data.js';

interface BadCase { name: string; args: string[]; code: number; message: string }

const corpus = join(ROOT, 'fixtures/bad');
const { cases } = JSON.parse(readFileSync(join(corpus, 'cases.json'), 'utf8')) as { cases: BadCase[] };

function fingerprint(dir: string): string {
  const h = createHash('sha256');
  for (const name of readdirSync(dir).sort()) h.update(name).update(readFileSync(join(dir, name)));
  return h.digest('hex');
}

describe('bad-input corpus', () => {
  it('holds at least 40 cases with unique names', () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
    expect(new Set(cases.map((c) => c.name)).size).toBe(cases.length);
  });

  const before = fingerprint(join(corpus, 'files'));

  describe.concurrent('each case', () => {
    for (const c of cases) {
      it(`${c.name}: exit ${c.code}`, async () => {
        const out = tempDir('bad-out');
        const res = await gpuframe(c.args.map((a) => a.replaceAll('{out}', out)));
        expect(res.stderr).toMatch(new RegExp(c.message));
        expect(res.code, res.stderr).toBe(c.code);
        expect(res.stderr).toMatch(/^gpuframe: /);
        expect(res.stderr).not.toMatch(/\n\s+at |internal error/);
        // Inputs are given relative to the checkout; plans open them by absolute path, messages name them as given.
        expect(res.stderr).not.toContain(ROOT);
        expect(readdirSync(out)).toEqual([]);
      });
    }
  });

  it('left every input file as it was', () => {
    // Runs after the concurrent cases above (vitest runs a file's tests in order of declaration).
    expect(fingerprint(join(corpus, 'files'))).toBe(before);
  });
});
