// Messages between the parent and its worker processes. A large one goes through a file in the
// run's temp dir, and only the file's name goes over the IPC channel.
//
// Why: Node's channel moved ~90 MB/s on the development machine (the sender serialises and writes
// 64 KB at a time; the receiver joins the pieces with Buffer.concat as they arrive), so a 64 MB
// batch of rows spent most of a second in transit, every result of a read-csv to Parquet or Arrow
// output went through it, and so did each worker's copy of a broadcast join table. Through a
// file the same bytes are one serialisation, one write and one read.

import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import type { Broadcast, Task } from './fragment.js';
import { writeSpillFile } from './spill-file.js';

/** Serialised size from which a message goes through a file. */
export const FILE_MESSAGE_BYTES = 1 << 20;

/** The environment variable that names a worker's message dir (the run's temp dir). */
export const MESSAGE_DIR_ENV = 'GPUFRAME_MESSAGE_DIR';

/** What goes over the channel in a large message's place. `shared`: several receivers read it (a broadcast); none removes it. */
interface ViaFile { type: 'via-file'; file: string; shared: boolean }

/** A child process, or this process as a worker (whose `send` exists while it has a parent). */
interface Channel { send?(msg: unknown, callback?: (err: Error | null) => void): boolean }

/** Writes msg to a new file in `dir` when it is large; null when it is small enough for the channel. */
export function messageFile(msg: object, dir: string | null, shared = false): ViaFile | null {
  if (dir === null) return null;
  const bytes = serialize(msg);
  if (bytes.length < FILE_MESSAGE_BYTES) return null;
  const file = join(dir, `message-${randomBytes(6).toString('hex')}.v8`);
  writeSpillFile(file, bytes); // a full disk stops the run with a message naming the temp dir
  return { type: 'via-file', file, shared };
}

/** Sends msg over the channel, or through a file in `dir` when large (dir null: always the channel). */
export function sendMessage(to: Channel, msg: object, dir: string | null, callback?: () => void): void {
  const via = messageFile(msg, dir);
  to.send!(via ?? msg, callback && (() => callback()));
}

/** The message a received one stands for: read from its file (removed unless shared) when it came through one. */
export function receiveMessage<T>(msg: T | ViaFile): T {
  const via = msg as ViaFile;
  if (via?.type !== 'via-file') return msg as T;
  const bytes = readFileSync(via.file);
  if (!via.shared) unlinkSync(via.file);
  return deserialize(bytes) as T;
}

/** What the parent sends a worker (after receiveMessage). */
type ParentMessage =
  | { type: 'broadcast'; broadcast: Broadcast }
  | { type: 'message-dir'; dir: string }
  | { type: 'task'; id: number; task: Task };

/**
 * A worker's end of the channel to its parent: messages read (from their files), the message dir
 * kept, broadcasts and tasks handed on. `send` answers, through a file in that dir when large.
 */
export function parentChannel(handlers: { broadcast(b: Broadcast): void; task(id: number, task: Task): void }): { send(msg: object, callback?: () => void): void } {
  let dir: string | null = null; // until the parent says
  process.on('message', (arrived: ParentMessage) => {
    const msg = receiveMessage(arrived);
    if (msg.type === 'message-dir') dir = msg.dir;
    else if (msg.type === 'broadcast') handlers.broadcast(msg.broadcast);
    else handlers.task(msg.id, msg.task);
  });
  return { send: (msg, callback) => sendMessage(process, msg, dir, callback) };
}
