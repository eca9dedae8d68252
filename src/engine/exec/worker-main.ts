// Entry point of a CPU worker process: receives broadcasts and tasks from the parent over IPC,
// runs them, and answers with results or errors. One task at a time.

import { serializeError } from '../errors.js';
import type { Broadcast, Task } from './fragment.js';
import { BroadcastCache, runTask } from './run-fragment.js';
import { sliceLargePartial } from './partial-slices.js';
import { maybeInjectFault } from './fault-hook.js';
import { releaseScratch } from '../io/scratch.js';
import { receiveMessage, sendMessage } from './messages.js';

type ParentMessage =
  | { type: 'broadcast'; broadcast: Broadcast }
  | { type: 'message-dir'; dir: string }
  | { type: 'task'; id: number; task: Task };

const cache = new BroadcastCache();
let tasksRun = 0;
/** Where this worker writes its large results (messages.ts); null until the parent says. */
let messageDir: string | null = null;

process.on('message', (received: ParentMessage) => {
  const msg = receiveMessage(received);
  if (msg.type === 'message-dir') {
    messageDir = msg.dir;
    return;
  }
  if (msg.type === 'broadcast') {
    cache.add(msg.broadcast);
    return;
  }
  tasksRun++;
  maybeInjectFault(tasksRun);
  runTask(msg.task, cache).then((result) => sliceLargePartial(result, msg.task.terminal)).then(
    (result) => sendMessage(process, { type: 'result', id: msg.id, result }, messageDir, collectGarbage),
    (err) => process.send!({ type: 'error', id: msg.id, error: serializeError(err) }),
  );
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
