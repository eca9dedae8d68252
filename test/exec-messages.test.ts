// Large messages between the parent and its workers go through files in the run's temp dir
// (messages.ts): the round trip keeps every value, a receiver removes what it read (unless the
// file is shared, as a broadcast's is), and a real pool of workers uses them both ways.

import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FILE_MESSAGE_BYTES, messageFile, receiveMessage, sendMessage } from '../src/engine/exec/messages.js';
import { ProcessPool } from '../src/engine/exec/pool.js';
import type { Task } from '../src/engine/exec/fragment.js';
import type { Batch } from '../src/engine/batch.js';

const dir = mkdtempSync(join(tmpdir(), 'gpuframe-messages-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('messages through files', () => {
  it('a small message stays on the channel; a large one goes through a file, read back whole and removed', () => {
    expect(messageFile({ type: 'x', data: new Uint8Array(1000) }, dir)).toBeNull();
    const big = { type: 'result', id: 7, values: Float64Array.from({ length: FILE_MESSAGE_BYTES / 8 }, (_, i) => i / 3), big: -(2n ** 62n), text: 'héllo' };
    expect(messageFile(big, null)).toBeNull(); // no dir: the channel, whatever the size
    const sent: unknown[] = [];
    sendMessage({ send: (m) => { sent.push(m); return true; } }, big, dir);
    const via = sent[0] as { type: string; file: string; shared: boolean };
    expect(via).toMatchObject({ type: 'via-file', shared: false });
    expect(existsSync(via.file)).toBe(true);
    const back = receiveMessage<typeof big>(via);
    expect(back.values.findIndex((v, i) => v !== i / 3)).toBe(-1);
    expect([back.type, back.id, back.big, back.text]).toEqual(['result', 7, -(2n ** 62n), 'héllo']);
    expect(existsSync(via.file)).toBe(false);
    // A message that did not go through a file is itself.
    expect(receiveMessage({ type: 'ready' })).toEqual({ type: 'ready' });
  });

  it('a shared file (a broadcast) stays for the next reader', () => {
    const via = messageFile({ type: 'broadcast', rows: new Int32Array(FILE_MESSAGE_BYTES / 4) }, dir, true)!;
    expect(receiveMessage<{ rows: Int32Array }>(via).rows.length).toBe(FILE_MESSAGE_BYTES / 4);
    expect(receiveMessage<{ rows: Int32Array }>(via).rows.length).toBe(FILE_MESSAGE_BYTES / 4);
    expect(existsSync(via.file)).toBe(true);
  });
});

describe('a pool of workers with a message dir', () => {
  const rows = 400_000; // 3.2 MB of float64: past FILE_MESSAGE_BYTES both ways
  const batch: Batch = { schema: [{ name: 'x', type: 'float64' }], length: rows, columns: [{ type: 'float64', values: Float64Array.from({ length: rows }, (_, i) => i * 0.5), valid: null }] };
  const collect: Task = { fragment: { index: 0, source: { kind: 'batch', batch }, ops: [], bytes: 0 }, terminal: { kind: 'collect' } };

  it('sends a large task and gets its large result through files, leaving none behind', async () => {
    const runDir = mkdtempSync(join(dir, 'run-'));
    const pool = new ProcessPool(2);
    try {
      pool.useMessageDir(runDir);
      const results = await Promise.all([pool.run(collect, 'a'), pool.run(collect, 'b')]);
      for (const r of results) {
        const values = (r.batches![0].columns[0] as { values: Float64Array }).values;
        expect(values.length).toBe(rows);
        expect(values.findIndex((v, i) => v !== i * 0.5)).toBe(-1);
      }
      expect(readdirSync(runDir)).toEqual([]);
    } finally {
      await pool.close();
    }
  });

  it('a large task goes through the dir: a dir that is not there fails it, naming the file', async () => {
    const pool = new ProcessPool(1);
    try {
      pool.useMessageDir(join(dir, 'not-there'));
      await expect(pool.run(collect, 'a')).rejects.toThrow(/not-there\/message-/);
    } finally {
      await pool.close();
    }
  });
});
