// Keeping a process's event loop polling for a few milliseconds instead of sleeping in epoll. A
// message from another process then runs its handler within microseconds of arriving, not after
// the kernel has woken the thread: Node IPC round trips between processes idle for 3 ms took
// 0.33–0.42 ms on the 2-core development machine, 0.22–0.24 ms with both sides polling; on two
// H200s a k-means round's messages went from 0.17–0.29 to 0.11–0.18 ms each way. Only for
// the short, repeated round trips of iterative training, where the wake-ups add up to a
// measurable share of every round; it costs a busy core while it lasts, so machines of fewer than
// four cores (where that core would be taken from the workers, or from lavapipe's threads) sleep.

import { availableParallelism } from 'node:os';

const SPARE_CORES = availableParallelism() >= 4;

/** Polls the event loop (setImmediate) for up to `ms` milliseconds or until the returned stop is called. */
export function pollFor(ms: number): () => void {
  if (!SPARE_CORES) return () => {};
  let polling = true;
  const until = performance.now() + ms;
  const tick = () => { if (polling && performance.now() < until) setImmediate(tick); };
  setImmediate(tick);
  return () => { polling = false; };
}
