// Flags shared by the make-* data generators.

import { Flags } from '@oclif/core';
import { UsageError } from '../engine/errors.js';
import { parseNumber } from './flags.js';

export const generatorFlags = {
  'n-samples': Flags.integer({ description: 'rows to generate', required: true, min: 0 }),
  'n-features': Flags.integer({ description: "feature columns x0..x{n-1} (scikit-learn's default: 2 blobs, 20 classification, 100 regression)", min: 1 }),
  seed: Flags.integer({ description: 'random seed (the same seed gives the same rows whatever the workers)', default: 0 }),
};

export function pair(text: string, flag: string): [number, number] {
  const parts = text.split(',').map(Number);
  if (parts.length !== 2 || parts.some((x) => !Number.isFinite(x))) throw new UsageError(`${flag} expects two numbers: min,max; got '${text}'`);
  return [parts[0], parts[1]];
}

/**
 * make-blobs' --centers: how many (placed at random in --center-box), or the centres themselves,
 * ';' between centres and ',' between coordinates ('0,0;5,5'), as scikit-learn takes either.
 */
export function blobCenters(text: string): number | number[][] {
  if (/^\s*\d+\s*$/.test(text)) {
    const k = Number(text);
    if (k < 1) throw new UsageError(`--centers expects a count ≥ 1 or coordinates like '0,0;5,5', got '${text}'`);
    return k;
  }
  const centres = text.split(';').map((c) => c.split(',').map((t) => parseNumber(t, '--centers')));
  if (centres.some((c) => c.length !== centres[0].length)) throw new UsageError(`--centers: every centre needs the same number of coordinates, got '${text}'`);
  return centres;
}

/** A comma-separated list of numbers ≥ 0 (the generator checks how many). */
export function shareList(text: string, flag: string): number[] {
  return text.split(',').map((t) => parseNumber(t, flag, { min: 0 }));
}

/** make-blobs' --cluster-std: one standard deviation for every centre, or one per centre (scikit-learn takes either). */
export function clusterStds(text: string): number | number[] {
  const values = shareList(text, '--cluster-std');
  return values.length === 1 ? values[0] : values;
}
