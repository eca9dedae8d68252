// Worker thread of cut-points.ts: counts the quote parity of the spans it is given.

import { parentPort, workerData } from 'node:worker_threads';
import { quoteParities, type CutRequest } from './cut-points.js';

const { req, spans } = workerData as { req: CutRequest; spans: [number, number][] };
parentPort!.postMessage(quoteParities(req, spans));
