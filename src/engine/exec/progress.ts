// A progress bar on stderr (bytes read, rate, ETA), shown only when stderr is a terminal.

import cliProgress from 'cli-progress';

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
      bar = new cliProgress.SingleBar({
        stream: process.stderr,
        format: `${label} [{bar}] {percentage}% | {value_mb}/{total_mb} MB | {rows} rows | {rate} MB/s | ETA {eta_formatted}`,
        hideCursor: true,
        clearOnComplete: true,
        etaBuffer: 20,
      }, cliProgress.Presets.shades_classic);
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
