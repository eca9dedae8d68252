// GPU workers answer some map-matrix tasks with their partitions' raw results (f32 (hi, lo) pairs,
// or u32 words in their bytes) in one array, decoded in the parent: one typed array crosses the process boundary instead of several
// float64 arrays per partition (half the bytes; on the H200 machine a k-means round's answer for 8
// partitions took ~1.3 ms to arrive as float64 arrays, 0.4–0.7 ms as one array of pairs).

import { StepWords } from '../../kernels/kmeans.js';
import { asU32 } from '../gpu/buffers.js';

/** The results of partitions indices[i] at pairs[offsets[i], offsets[i + 1]): f32 (hi, lo) pairs, or u32 words in their bytes. */
export interface MappedPairs { indices: number[]; offsets: number[]; pairs: Float32Array }

/** How the parent decodes a task's pairs: pure functions of the pairs and the task's arguments. */
const DECODERS: Record<string, (pairs: Float32Array, args: any) => unknown> = {
  // The step's u32 words (stepLayout), carried in the f32 array's bytes; the trainer adds
  // partitions' words exactly and decodes the total once.
  'kmeans.assign': (pairs, { centers, k }: { centers: Float64Array; k: number }) => new StepWords(asU32(pairs), k, centers.length / k),
};

/** Whether a GPU worker sends this task's results as pairs for the parent to decode. */
export function decodesOnParent(task: string): boolean {
  return task in DECODERS;
}

export function decodeMappedPairs(task: string, args: unknown, m: MappedPairs): { index: number; value: unknown }[] {
  const decode = DECODERS[task];
  return m.indices.map((index, i) => ({ index, value: decode(m.pairs.subarray(m.offsets[i], m.offsets[i + 1]), args) }));
}
