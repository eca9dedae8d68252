// A progress bar on stderr (bytes read, rate, ETA), shown only when stderr is a terminal.

import { createRequire } from 'node:module';
import type cliProgress from 'cli-progress';

/** cli-progress, loaded when a bar is first shown (runs without a terminal never need it). */
const loadCliProgress = (): typeof cliProgress => createRequire(import.meta.url)('cli-progress') as typeof cliProgress;

export interface Progress {
  start(totalBytes: number, label: string): void;
  advance(bytes: number, rows: number): void;
  stop(): void;
}

export const silentProgress: Progress = { start() {}, advance() {}, stop() {} };

export function terminalProgress(): Progress {
  let bar: cliProgress.SingleBar | null = null;
  let rows = 0;
  return {
    start(totalBytes, label) {
      bar?.stop();
      rows = 0;
      const bars = loadCliProgress();
      bar = new bars.SingleBar({
        stream: process.stderr,
        format: `${label} [{bar}] {percentage}% | {value_mb}/{total_mb} MB | {rows} rows | {rate} MB/s | ETA {eta_formatted}`,
        hideCursor: true,
        clearOnComplete: true,
        etaBuffer: 20,
      }, bars.Presets.shades_classic);
      bar.start(Math.max(1, totalBytes), 0, { value_mb: '0', total_mb: (totalBytes / 1e6).toFixed(0), rows: 0, rate: '0' });
      (bar as unknown as { startedAt: number }).startedAt = performance.now();
    },
    advance(bytes, newRows) {
      if (!bar) return;
      rows += newRows;
      const value = bar.getProgress() * bar.getTotal() + bytes;
      const seconds = (performance.now() - (bar as unknown as { startedAt: number }).startedAt) / 1000;
      bar.update(value, { value_mb: (value / 1e6).toFixed(0), rows, rate: (value / 1e6 / Math.max(seconds, 1e-3)).toFixed(0) });
    },
    stop() {
      bar?.stop();
      bar = null;
    },
  };
}
