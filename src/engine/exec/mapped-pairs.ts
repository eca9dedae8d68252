// GPU workers answer some map-matrix tasks with their partitions' raw results (f32 (hi, lo) pairs,
// or u32 words in their bytes) in one array, decoded in the parent: one typed array crosses the
// process boundary instead of several float64 arrays per partition (half the bytes; on the H200
// machine a k-means round's answer for 8 partitions took ~1.3 ms to arrive as float64 arrays,
// 0.4–0.7 ms as one array of pairs). The k-means step's results are exact sums, so a worker adds
// its partitions' on the GPU and answers with one.

import { StepWords } from '../../kernels/kmeans.js';
import { asU32 } from '../gpu/buffers.js';

/**
 * The results of partitions groups[g] at pairs[ranges[g][0], ranges[g][1]): f32 (hi, lo) pairs, or
 * u32 words in their bytes. A group of several partitions holds their sum (a task whose results
 * are exact sums, added on the GPU).
 */
export interface MappedPairs { groups: number[][]; ranges: [number, number][]; pairs: Float32Array }

/**
 * How the parent decodes a task's pairs: pure functions of the pairs and the task's arguments;
 * `zero`, for tasks summed on the GPU, the result the other partitions of a group stand for.
 */
const DECODERS: Record<string, { decode(pairs: Float32Array, args: any): unknown; zero?(value: any): unknown }> = {
  // The step's u32 words (stepLayout), carried in the f32 array's bytes; the trainer adds
  // workers' words exactly and decodes the total once.
  'kmeans.assign': {
    decode: (pairs, { centers, k }: { centers: Float64Array; k: number }) => new StepWords(asU32(pairs), k, centers.length / k),
    zero: (sum: StepWords) => sum.zero(),
  },
};

/** Whether a GPU worker sends this task's results as pairs for the parent to decode. */
export function decodesOnParent(task: string): boolean {
  return task in DECODERS;
}

export function decodeMappedPairs(task: string, args: unknown, m: MappedPairs): { index: number; value: unknown }[] {
  const { decode, zero } = DECODERS[task];
  return m.groups.flatMap((indices, g) => {
    const value = decode(m.pairs.subarray(m.ranges[g][0], m.ranges[g][1]), args);
    if (indices.length > 1 && !zero) throw new Error(`${task}: results summed over partitions, and no zero to stand for the others`);
    // One zero stands for every other partition of the group (results are not changed once decoded).
    const none = indices.length > 1 ? zero!(value) : undefined;
    return indices.map((index, i) => ({ index, value: i === 0 ? value : none }));
  });
}
