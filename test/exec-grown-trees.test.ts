// Grown trees cross from a worker to the parent through a file (forest-trees.ts): every array of
// every tree comes back with the same length and bits, whatever the lengths (empty, odd, not a
// multiple of 8 bytes), and the file is gone once read.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readGrownTrees, writeGrownTrees, type BinnedFile } from '../src/engine/exec/forest-trees.js';
import type { GrownTree } from '../src/engine/ml/forest-tree.js';
import { Rng } from '../src/engine/ml/random.js';

const dir = mkdtempSync(join(tmpdir(), 'gpuframe-grown-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const binned: BinnedFile = { path: join(dir, 'forest-x.bin'), rows: 0, cols: 0, binsPerFeature: [], nClasses: 2, target: 'int32' };

function randomTree(rng: Rng, nodes: number, width: number): GrownTree {
  const ints = () => Int32Array.from({ length: nodes }, () => Math.floor((rng.nextFloat() - 0.5) * 2 ** 31));
  const value = Float64Array.from({ length: nodes * width }, () => (rng.nextFloat() - 0.5) * 10 ** Math.floor(rng.nextFloat() * 40 - 20));
  if (value.length > 2) { value[0] = -0; value[1] = Number.NaN; }
  return { feature: ints(), bin: ints(), left: ints(), right: ints(), value };
}

describe('grown trees through a file', () => {
  it('gives back every array of every tree bit for bit, and removes the file', () => {
    const rng = new Rng(1, 'grown trees');
    const trees = [randomTree(rng, 0, 2), randomTree(rng, 1, 3), randomTree(rng, 7, 2), randomTree(rng, 1001, 1), randomTree(rng, 5, 0)];
    const path = writeGrownTrees(binned, trees);
    expect(existsSync(path)).toBe(true);
    const back = readGrownTrees(path);
    expect(existsSync(path)).toBe(false);
    expect(back.length).toBe(trees.length);
    trees.forEach((tree, t) => {
      for (const name of ['feature', 'bin', 'left', 'right', 'value'] as const) {
        const want = tree[name], got = back[t][name];
        expect(got.constructor, `tree ${t} ${name}`).toBe(want.constructor);
        expect(Array.from(new Uint8Array(got.buffer, got.byteOffset, got.byteLength)), `tree ${t} ${name}`).toEqual(Array.from(new Uint8Array(want.buffer, want.byteOffset, want.byteLength)));
      }
    });
  });

  it('no trees at all', () => {
    expect(readGrownTrees(writeGrownTrees(binned, []))).toEqual([]);
  });
});
