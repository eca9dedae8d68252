// Entry point of a CPU worker process: receives broadcasts and tasks from the parent over IPC,
// runs them, and answers with results or errors. One task at a time.

import { serializeError } from '../errors.js';
import { BroadcastCache, runTask } from './run-fragment.js';
import { sliceLargePartial } from './partial-slices.js';
import { maybeInjectFault } from './fault-hook.js';
import { releaseScratch } from '../io/scratch.js';
import { parentChannel } from './messages.js';

const cache = new BroadcastCache();
let tasksRun = 0;

const parent = parentChannel({
  broadcast: (b) => cache.add(b),
  task: (id, task) => {
    tasksRun++;
    maybeInjectFault(tasksRun);
    // A failure to send the result (its message file could not be written) is the task's error too.
    runTask(task, cache).then((result) => sliceLargePartial(result, task.terminal))
      .then((result) => parent.send({ type: 'result', id, result }, collectGarbage))
      .catch((err) => parent.send({ type: 'error', id, error: serializeError(err) }));
  },
});

/** This worker's share of --memory-limit (bytes), set by the pool. */
const memoryShare = Number(process.env.GPUFRAME_WORKER_MEMORY ?? Infinity);

/** After a result is sent its partition's buffers are garbage; when over its share, the worker
 *  frees them now rather than when V8 gets round to it (a full collection costs ~10% of a task). */
function collectGarbage(): void {
  if (process.memoryUsage.rss() <= memoryShare) return;
  releaseScratch();
  (globalThis as { gc?: () => void }).gc?.();
}

// The parent going away (killed, Ctrl-C) ends the worker too.
process.on('disconnect', () => process.exit(0));
