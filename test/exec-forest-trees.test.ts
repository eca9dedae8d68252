// How a forest's trees are shared out as tasks: one task per GPU worker when the device grows
// them (each grows two batches at a time itself), else one per task the workers run at once;
// every tree comes back in order whatever the grouping.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { workerTreeGrower, writeGrownTrees } from '../src/engine/exec/forest-trees.js';
import type { RunContext } from '../src/engine/exec/context.js';
import type { FragmentResult, Task } from '../src/engine/exec/fragment.js';
import type { TaskRunner } from '../src/engine/exec/pool.js';
import { silentProgress } from '../src/engine/exec/progress.js';
import type { BinnedData, GrownTree, TreeSpec } from '../src/engine/ml/forest-tree.js';

const spec: TreeSpec = { task: 'classification', criterion: 'gini', maxDepth: 4, minSamplesLeaf: 1, maxFeatures: 1, bootstrap: true, seed: 1 };
const data: BinnedData = { rows: 4, cols: 1, bins: new Uint8Array(4), binsPerFeature: Int32Array.from([2]), target: Int32Array.from([0, 1, 0, 1]), nClasses: 2 };

/** A runner that grows nothing: each tree comes back (through a file, as from a worker) as a one-node stand-in whose feature is its index; tasks are recorded. */
function recordingRunner(shape: { size: number; concurrency: number; gpuWorkers: number }): TaskRunner & { tasks: { trees: number[]; gpu: boolean }[] } {
  const tasks: { trees: number[]; gpu: boolean }[] = [];
  return {
    ...shape,
    tasks,
    broadcast() {},
    async run(task: Task): Promise<FragmentResult> {
      if (task.terminal.kind !== 'grow-trees') throw new Error('unexpected task');
      tasks.push({ trees: task.terminal.trees, gpu: task.terminal.gpu });
      const standIns: GrownTree[] = task.terminal.trees.map((t) => ({ feature: Int32Array.of(t), bin: Int32Array.of(0), left: Int32Array.of(-1), right: Int32Array.of(-1), value: Float64Array.of(0.5, 0.5) }));
      return { grownFile: writeGrownTrees(task.terminal.file, standIns), rows: 0, warnings: [] };
    },
    runOnEach: async () => [],
    close: async () => {},
  };
}

function contextOf(runner: TaskRunner): RunContext {
  return { runner, blocksize: 1 << 20, memoryLimit: 1 << 30, tmpDir: mkdtempSync(join(tmpdir(), 'forest-trees-')), progress: silentProgress, warn: () => {} };
}

describe('workerTreeGrower', () => {
  const trees = Array.from({ length: 10 }, (_, i) => i);

  it('gives each GPU worker one task when the device grows the trees', async () => {
    const runner = recordingRunner({ size: 34, concurrency: 36, gpuWorkers: 2 });
    const grown = await workerTreeGrower(contextOf(runner)).grow(data, spec, trees);
    expect(runner.tasks).toEqual([{ trees: [0, 2, 4, 6, 8], gpu: true }, { trees: [1, 3, 5, 7, 9], gpu: true }]);
    expect(grown.map((g) => g.feature[0])).toEqual(trees);
  });

  it('without GPU workers, as many tasks as the workers run at once', async () => {
    const runner = recordingRunner({ size: 3, concurrency: 3, gpuWorkers: 0 });
    const grown = await workerTreeGrower(contextOf(runner)).grow(data, spec, trees);
    expect(runner.tasks.map((t) => t.trees.length)).toEqual([4, 3, 3]);
    expect(runner.tasks.every((t) => !t.gpu)).toBe(true);
    expect(grown.map((g) => g.feature[0])).toEqual(trees);
  });
});
