// WGSL of k-means on a device matrix (ml-matrix.wgsl.ts layout), generated per feature count D so
// that a row lives in registers. Distances are f32, summed over features in order; the nearest
// centre is the lowest index among equal distances (strict <), as the CPU code.
//   step:         a Lloyd iteration's pass: each row's nearest centre, and per cluster the row count
//                 and exact fixed-point sums of its rows' features and squared distances
//   max_abs:      each column's largest |x| (with the column statistics; the step's fixed-point scales)
//   pp_update:    each row's nearest squared distance over centres [from, to), kept between calls
//   pp_potential: min(nearest, distance to candidate t) per row, for each candidate t
//   smallest_hash: the row with the smallest row hash (k-means++'s first centre)
//   par_sample:   k-means|| rows sampled by row hash against their nearest squared distance

import { memoWgsl, WGSL_GRID, WGSL_MIX32, WGSL_ROW_HASH } from './wgsl-common.js';
import { WGSL_DOUBLE_FLOAT } from './ml-matrix.wgsl.js';

/** Centre values staged per workgroup (16 KiB). */
export const CENTRE_TILE = 4096;

function header(d: number): string {
  return /* wgsl */ `
${WGSL_GRID}
${WGSL_DOUBLE_FLOAT}
const D: u32 = ${d}u;
const MAX_F32: f32 = 3.4028234663852886e38;
struct Params { rows: u32, k: u32, first: u32, end: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
fn loadRow(r: u32) -> array<f32, D> {
  var row: array<f32, D>;
  for (var j = 0u; j < D; j++) { row[j] = x[j * p.rows + r]; }
  return row;
}
`;
}

/** Rows per thread in the step: each centre value read from workgroup memory serves them all (4: 3.13–3.15 ms for 10^7 × 32, k = 64 on an H200; 2: 3.53; 8: 12.0). */
export function stepRowsPerThread(d: number): number {
  return d <= 32 ? 4 : d <= 64 ? 2 : 1;
}

/**
 * Layout of a k-means step's result, in u32 words from the partition's first word: the 64-bit
 * fixed-point sum of value v (feature v < d, the squared distance at v = d) over cluster c as its
 * low word at v × k + c and its high word at `hi` + v × k + c (two regions, so that threads adding
 * to neighbouring clusters touch different memory banks); then k counts; then the d + 1 scale
 * exponents F (value v was summed as trunc(value × 2^F)), STEP_NON_FINITE where the data (or, for
 * the distance, its bound) is not finite.
 */
export function stepLayout(k: number, d: number): { hi: number; counts: number; scales: number; words: number } {
  const hi = k * (d + 1), counts = 2 * hi, scales = counts + k;
  return { hi, counts, scales, words: scales + d + 1 };
}
/** A scale word of a value whose sum is not meaningful (non-finite data, or distances that may overflow f32). */
export const STEP_NON_FINITE = 0x80000000;
/** Bits of the largest magnitude a sum over the matrix's rows may reach: 2^62, so a 64-bit two's-complement sum never wraps. */
export const STEP_SUM_BITS = 62;

/**
 * Values of a row whose low words the step adds before the high words that wait on those additions'
 * carries, so the additions' latencies overlap (10^7 × 32, k = 64 on an H200: 8 at a time 3.13–3.17 ms,
 * 1: 3.42, 4: 4.08, 16: 4.80, all 33: 6.02).
 */
export const STEP_CARRY_BATCH = 8;

/** Centres one workgroup of the step stages at a time: at most CENTRE_TILE values, and no more than k centres. */
function stepTileCentres(d: number, k: number): number {
  return Math.min(k, Math.floor(CENTRE_TILE / (Math.ceil(d / 4) * 4)));
}

/** Workgroup memory of the step kernel: the centre tile, the scales, and (local) the accumulators. */
export function stepWorkgroupBytes(d: number, k: number, local: boolean): number {
  const d4 = Math.ceil(d / 4);
  return 16 * stepTileCentres(d, k) * d4 + 16 * d4 + 4 + (local ? 4 * stepLayout(k, d).scales : 0);
}

/**
 * The k-means step: each row's nearest centre (f32 distances summed over features in order, the
 * lowest index on ties, as the CPU code), and per cluster the row count and the sums of the rows'
 * features and squared distances. The sums are exact: each value is scaled by a power of two,
 * truncated to a 64-bit integer and added with 32-bit atomics and a carry (WGSL has no i64), so
 * the result does not depend on the order the device adds the rows in: the same bits on any GPU,
 * with any number of workgroups, as the CPU twin (kmeansStepCpu). The scale 2^F of feature j keeps
 * rows × max|x_j| × 2^F below 2^62, over the rows of the whole matrix (p.scaleRows, and maxBits from
 * its column statistics), so every partition sums on the same scale; the distance's, rows × a bound
 * of the distance × 2^F. `local`: clusters are summed in workgroup memory and added to `out` once per
 * workgroup; otherwise every row goes to `out` with device-memory atomics (for k × d too large for
 * workgroup memory). Rows: several per thread in registers, centres staged as vec4s (each padded
 * with zeros to a multiple of 4 features; (0 - 0)² = +0 changes no sum). The rows, their sums and
 * best centres are separate variables written out per row and feature quad, not private arrays
 * indexed in loops, which a driver that does not unroll such loops keeps in local memory.
 * `countsOnly`: the counts alone (the sums stay 0), for weighing k-means|| candidates.
 * Measured and not kept (BENCHMARKS.md): distances as dot products (slower once the inertia needs
 * each row's own distance again), and register tiles of 4 rows × 4 centres from workgroup memory
 * (6.7 ms against 3.1 ms for 10^7 × 32, k = 64 on an H200, whatever the number of workgroups).
 */
/**
 * Variants of the step kernel (defaults: the measured best for d); each gives the same words.
 * `bounded`: the bounded step (kmeansBoundCheckWgsl's rows only), see below.
 */
export interface StepVariant { rowsPerThread?: number; batch?: number; fromRegisters?: boolean; countsOnly?: boolean; bounded?: boolean }

function buildKmeansStepWgsl(d: number, k: number, local: boolean,
                             { rowsPerThread = stepRowsPerThread(d), batch = STEP_CARRY_BATCH, fromRegisters = d <= 32, countsOnly = false, bounded = false }: StepVariant = {}): string {
  if (bounded && countsOnly) throw new Error('the bounded k-means step keeps the sums');
  const d4 = Math.ceil(d / 4);
  const { hi, counts, scales } = stepLayout(k, d);
  // All centres in one tile (staged once, before the rows): the distance loop's bound is the
  // constant K, so that the tile's indices are provably in bounds and carry no robustness clamp
  // (10^7 × 32, k = 64 on an H200: 2.94–2.97 ms against 3.09–3.11 with a bound known only at run
  // time; 2.83 with Dawn's robustness off altogether).
  const oneTile = k <= stepTileCentres(d, k);
  const rows = Array.from({ length: rowsPerThread }, (_, i) => i);
  const quads = Array.from({ length: d4 }, (_, q) => q);
  const lanes = ['x', 'y', 'z', 'w'];
  const load = (q: number, i: number) => [0, 1, 2, 3].map((t) => (4 * q + t < d ? `x[${4 * q + t}u * p.rows + r${i}]` : '0.0')).join(', ');
  const each = (f: (i: number) => string, indent: string) => rows.map((i) => indent + f(i)).join('\n');
  const acc = local ? 'acc' : 'out';
  const word = (i: string) => `${acc}[${local ? '' : 'p.outWord + '}${i}]`;
  // A row's values (index of the low word, scaled value), their low words added `batch` at a time
  // before the high words that wait on those additions' carries. `fromRegisters`: the features as
  // the distance loop left them in registers, every addition written out (for small d: the code
  // grows with d × rows per thread, and so does its compile time); else a loop over features
  // that reads them again (from cache).
  const addValues = (values: { at: string; y: string }[], name: string, guard = (_n: number) => '') => {
    const lines = values.map(({ at, y }, n) => `${guard(n) ? `var w${name}${n} = vec2u(0u); var o${name}${n} = 0u; if (${guard(n)}) { w${name}${n}` : `let w${name}${n}`} = fixedWords(${y}); ${guard(n) ? '' : 'let '}o${name}${n} = atomicAdd(&${word(at)}, w${name}${n}.x);${guard(n) ? ' }' : ''}`);
    return [...lines, ...values.map(({ at }, n) => `${guard(n) ? `if (${guard(n)}) { ` : ''}addHigh(${at}, w${name}${n}, o${name}${n});${guard(n) ? ' }' : ''}`)];
  };
  // Row i's features added to cluster `cluster` (negated: taken away from it).
  const addFeatures = (i: number, cluster: string, negate: boolean, name: string) => {
    const lines: string[] = [];
    const signed = (y: string) => (negate ? `-(${y})` : y);
    if (fromRegisters) {
      const values = quads.flatMap((q) => [0, 1, 2, 3].filter((t) => 4 * q + t < d).map((t) => ({ at: `${4 * q + t}u * K + ${cluster}`, y: signed(`x${i}_${q}.${lanes[t]} * scales[${q}].${lanes[t]}`) })));
      for (let b = 0; b < values.length; b += batch) lines.push(...addValues(values.slice(b, b + batch), `${i}_${b}_${name}`));
    } else {
      const group = Array.from({ length: batch }, (_, n) => ({ at: `(j0 + ${n}u) * K + ${cluster}`, y: signed(`x[(j0 + ${n}u) * p.rows + r${i}] * scales[(j0 + ${n}u) / 4u][(j0 + ${n}u) % 4u]`) }));
      lines.push(`for (var j0 = 0u; j0 < D; j0 += ${batch}u) {`, ...addValues(group, `${i}_${name}`, d % batch === 0 ? undefined : (n) => `j0 + ${n}u < D`).map((l) => `  ${l}`), '}');
    }
    return lines;
  };
  const sumRow = (i: number) => {
    if (countsOnly) return `atomicAdd(&${word(`COUNTS + best${i}`)}, 1u);`;
    if (bounded) {
      // The row's bounds from its distances; its features move only when its nearest centre did.
      return [
        `let old${i} = labels[r${i}];`,
        `labels[r${i}] = best${i};`,
        `bounds[r${i}] = vec2f(sqrt(bestD${i}) * (1.0 + BOUND_SLACK) + BOUND_TINY, max(sqrt(second${i}) * (1.0 - BOUND_SLACK) - BOUND_TINY, 0.0));`,
        `if (best${i} != old${i}) {`,
        ...addFeatures(i, `best${i}`, false, 'n').map((l) => `  ${l}`),
        `  atomicAdd(&${word(`COUNTS + best${i}`)}, 1u);`,
        `  if (old${i} != NO_LABEL) {`,
        ...addFeatures(i, `old${i}`, true, 'o').map((l) => `    ${l}`),
        `    atomicAdd(&${word(`COUNTS + old${i}`)}, 0xffffffffu);`,
        '  }',
        '}',
      ].join('\n      ');
    }
    const lines = addFeatures(i, `best${i}`, false, '');
    lines.push(...addValues([{ at: `D * K + best${i}`, y: `bestD${i} * distScale` }], `${i}_d`));
    lines.push(`atomicAdd(&${word(`COUNTS + best${i}`)}, 1u);`);
    return lines.join('\n      ');
  };
  // The bounded step takes rows from its list (list[0] of them), the step every row.
  const valid = (i: number) => (bounded ? `i${i} < n` : `r${i} < p.rows`);
  const rowOf = (i: number) => (bounded
    ? `let i${i} = base + ${i}u * WG + lid.x; var r${i} = 0u; if (i${i} < n) { r${i} = list[1u + i${i}]; }`
    : `let r${i} = base + ${i}u * WG + lid.x;`);
  const nearer = (i: number) => (bounded
    ? `if (s${i} < bestD${i}) { second${i} = bestD${i}; bestD${i} = s${i}; best${i} = c0 + c; } else if (s${i} < second${i}) { second${i} = s${i}; }`
    : `if (s${i} < bestD${i}) { bestD${i} = s${i}; best${i} = c0 + c; }`);
  return /* wgsl */ `
${WGSL_GRID}
const D: u32 = ${d}u;
const K: u32 = ${k}u;
const D4: u32 = ${d4}u;
const R: u32 = ${rowsPerThread}u;
const PER_TILE: u32 = ${stepTileCentres(d, k)}u;
const HI: u32 = ${hi}u;
const COUNTS: u32 = ${counts}u;
const SCALES: u32 = ${scales}u;
const LOG2_D: i32 = ${Math.ceil(Math.log2(d))};
const SUM_BITS: i32 = ${STEP_SUM_BITS};
const NON_FINITE: u32 = ${STEP_NON_FINITE}u;
const MAX_F32: f32 = 3.4028234663852886e38;
/** outWord: the partition's first word in out; centreExp: max |centre| < 2^centreExp (kmeans.ts centreExponent); scaleRows: the rows of the whole matrix (the scales' basis, with maxBits). */
struct StepParams { rows: u32, outWord: u32, centreExp: i32, scaleRows: u32 }
@group(0) @binding(0) var<uniform> p: StepParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> centres: array<f32>;
@group(0) @binding(3) var<storage, read> maxBits: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<atomic<u32>>;
var<workgroup> tile: array<array<vec4f, D4>, PER_TILE>;
var<workgroup> scales: array<vec4f, D4>;
var<workgroup> distScale: f32;
${local ? 'var<workgroup> acc: array<atomic<u32>, SCALES>;' : ''}
${bounded ? `${WGSL_BOUNDS}
const BOUND_SLACK: f32 = ${boundSlack(d)};
@group(0) @binding(5) var<storage, read> list: array<u32>;
@group(0) @binding(6) var<storage, read_write> labels: array<u32>;
@group(0) @binding(7) var<storage, read_write> bounds: array<vec2f>;` : ''}

/** e with |v| < 2^e, from the bits of |v| (finite v; 0 and subnormals give -126). */
fn exponentOf(absBits: u32) -> i32 { return i32(absBits >> 23u) - 126; }
/** F for values below 2^e over the matrix's rows (fewer than 2^rowBits), so a sum over all of them stays below 2^SUM_BITS. */
fn scaleExp(e: i32, rowBits: i32) -> i32 { return clamp(SUM_BITS - rowBits - e, -126, 127); }
fn pow2(e: i32) -> f32 { return bitcast<f32>(u32(e + 127) << 23u); }

/** trunc(y) (|y| < 2^62, already scaled) as 64-bit two's complement (lo, hi): |y| split into its high and low 32 bits (each exact in f32), then negated. */
fn fixedWords(y: f32) -> vec2u {
  let a = abs(y);
  let h = floor(a * 2.3283064365386963e-10);
  var lo = u32(a - h * 4294967296.0);
  var hi = u32(h);
  if (y < 0.0) { lo = ~lo + 1u; hi = ~hi + select(0u, 1u, lo == 0u); }
  return vec2u(lo, hi);
}

/** Adds the high word of w, with the carry out of the low word's addition (old: the low word before it), at HI + i. */
fn addHigh(i: u32, w: vec2u, old: u32) {
  let up = w.y + select(0u, 1u, old + w.x < old);
  if (up != 0u) { atomicAdd(&${word('HI + i')}, up); }
}

fn stage(c0: u32, lane: u32) {
  let n = min(PER_TILE, K - c0) * D4;
  workgroupBarrier();
  for (var i = lane; i < n; i += WG) {
    let c = c0 + i / D4;
    let j = (i % D4) * 4u;
    var v = vec4f(0.0);
    for (var t = 0u; t < 4u; t++) { if (j + t < D) { v[t] = centres[c * D + j + t]; } }
    tile[i / D4][i % D4] = v;
  }
  workgroupBarrier();
}

/** The scale exponents (written to out by workgroup 0) and scales of this partition and round. */
fn setScales(lane: u32, first: bool) {
  let rowBits = i32(32u - countLeadingZeros(p.scaleRows));
  if (lane < D4) {
    var s = vec4f(0.0);
    for (var t = 0u; t < 4u; t++) {
      let j = lane * 4u + t;
      if (j < D) {
        let f = scaleExp(exponentOf(maxBits[j]), rowBits);
        s[t] = pow2(f);
        if (first) { atomicStore(&out[p.outWord + SCALES + j], select(bitcast<u32>(f), NON_FINITE, maxBits[j] >= 0x7f800000u)); }
      }
    }
    scales[lane] = s;
  }
  if (lane == 0u) {
    // |x_j - c_j| < 2^(m + 1) with m the larger exponent, so a distance is below d × 2^(2m + 2);
    // one more bit covers the rounding of its f32 sum. From 2^128 on, the f32 distance may overflow.
    var m = p.centreExp;
    var finite = true;
    for (var j = 0u; j < D; j++) { m = max(m, exponentOf(maxBits[j])); finite = finite && maxBits[j] < 0x7f800000u; }
    let e = LOG2_D + 2 * m + 3;
    let f = scaleExp(e, rowBits);
    distScale = pow2(f);
    if (first) { atomicStore(&out[p.outWord + SCALES + D], select(bitcast<u32>(f), NON_FINITE, !finite || e >= 128)); }
  }
}

@compute @workgroup_size(256)
fn step(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  setScales(lid.x, wid.x == 0u);
${bounded ? `  let n = list[0];
  if (wid.x * WG * R >= n) { return; }` : ''}
${local ? '  for (var i = lid.x; i < SCALES; i += WG) { atomicStore(&acc[i], 0u); }' : ''}
  ${oneTile ? 'stage(0u, lid.x);' : 'workgroupBarrier();'}
  for (var base = wid.x * WG * R; base < ${bounded ? 'n' : 'p.rows'}; base += nwg.x * WG * R) {
${each(rowOf, '    ')}
${rows.map((i) => quads.map((q) => `    var x${i}_${q} = vec4f(0.0);`).join('\n')).join('\n')}
${each((i) => `if (${valid(i)}) { ${quads.map((q) => `x${i}_${q} = vec4f(${load(q, i)});`).join(' ')} }`, '    ')}
${each((i) => `var best${i} = 0u; var bestD${i} = MAX_F32;${bounded ? ` var second${i} = MAX_F32;` : ''}`, '    ')}
    for (var c0 = 0u; c0 < K; c0 += PER_TILE) {
      ${oneTile ? '' : 'stage(c0, lid.x);'}
      for (var c = 0u; c < ${oneTile ? 'K' : 'min(PER_TILE, K - c0)'}; c++) {
${each((i) => `var s${i} = 0.0;`, '        ')}
${quads.map((q) => `        {
          let cv = tile[c][${q}u];
${each((i) => `let t${i} = x${i}_${q} - cv; s${i} = s${i} + t${i}.x * t${i}.x; s${i} = s${i} + t${i}.y * t${i}.y; s${i} = s${i} + t${i}.z * t${i}.z; s${i} = s${i} + t${i}.w * t${i}.w;`, '          ')}
        }`).join('\n')}
${each(nearer, '        ')}
      }
    }
${each((i) => `if (${valid(i)}) { ${sumRow(i)} }`, '    ')}
  }
${local ? `  workgroupBarrier();
  for (var i = lid.x; i < HI; i += WG) {
    let w = vec2u(atomicLoad(&acc[i]), atomicLoad(&acc[HI + i]));
    if ((w.x | w.y) != 0u) {
      let old = atomicAdd(&out[p.outWord + i], w.x);
      let up = w.y + select(0u, 1u, old + w.x < old);
      if (up != 0u) { atomicAdd(&out[p.outWord + HI + i], up); }
    }
  }
  for (var c = lid.x; c < K; c += WG) { let n = atomicLoad(&acc[COUNTS + c]); if (n != 0u) { atomicAdd(&out[p.outWord + COUNTS + c], n); } }` : ''}
}
`;
}
export const kmeansStepWgsl = memoWgsl(buildKmeansStepWgsl);

// The bounded step (Hamerly's bounds, exact by construction). Between Lloyd rounds most rows keep
// their nearest centre, and their sums are what they were: a row keeps an upper bound of its
// distance to its centre and a lower bound of its distance to every other centre; when the centres
// move, bound_check loosens both by how far they moved and lists only the rows whose bounds no
// longer prove their centre (the step's rows otherwise keep theirs), and the bounded step measures
// the listed rows against every centre, as the step does, and moves the features of a row whose
// centre changed from its old cluster's sums to its new one's (exact fixed-point words, so
// adding and taking away leaves the words a full step would give). The sums accumulate in one
// buffer from the first round (every row unlisted: NO_LABEL) on; the distance sums stay 0.
//
// Bounds are on true distances to the f32 centres; BOUND_SLACK covers the f32 distance's rounding
// (relative (d + 3) × 2^-24 for a sum of d positive squares, sqrt's few ulps) and BOUND_TINY what
// flushing subnormal squares may lose, so a kept row is one whose f32 distances would pick the
// same centre, strictly: the labels are those of the step.

/** Relative slack of a bound from a row's f32 squared distances over d features: (d + 16) × 2^-23. */
export function boundSlack(d: number): number {
  return (d + 16) * 2 ** -23;
}

const WGSL_BOUNDS = /* wgsl */ `
const NO_LABEL: u32 = 0xffffffffu;
const BOUND_TINY: f32 = ${2 ** -50};
const DRIFT_SLACK: f32 = ${2 ** -20};
`;

/**
 * Hamerly's test of each row against its bounds, with drift[c] = (how far centre c moved, half the
 * distance from c to the nearest other centre), drift[k] = (the largest move, the second largest)
 * and drift[k + 1].x the bits of the index of the largest: the bounds loosen by the moves (rounded
 * outwards), and a row is kept when upper × margin < max(lower, half gap of its centre). A row that
 * fails has its upper bound measured again (its distance to its own centre, a k-th of the step's
 * work, read where rows are contiguous) and is tested again; only rows that still fail are listed
 * (list[0] counts them, list[1..] holds them) for the bounded step. margin = 1 + 4 × boundSlack(d):
 * both bounds then prove that the f32 distances order the same way. Rows with no label are listed.
 */
function buildKmeansBoundCheckWgsl(d: number): string {
  return /* wgsl */ `
${WGSL_GRID}
${WGSL_BOUNDS}
const D: u32 = ${d}u;
const BOUND_SLACK: f32 = ${boundSlack(d)};
struct CheckParams { rows: u32, k: u32, margin: f32, pad: u32 }
@group(0) @binding(0) var<uniform> p: CheckParams;
@group(0) @binding(1) var<storage, read> labels: array<u32>;
@group(0) @binding(2) var<storage, read_write> bounds: array<vec2f>;
@group(0) @binding(3) var<storage, read> drift: array<vec2f>;
@group(0) @binding(4) var<storage, read_write> list: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read> x: array<f32>;
@group(0) @binding(6) var<storage, read> centres: array<f32>;
var<workgroup> listed: atomic<u32>;
var<workgroup> listedBase: u32;
var<workgroup> listedRows: array<u32, WG>;

@compute @workgroup_size(256)
fn bound_check(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let most = drift[p.k];
  let mostAt = bitcast<u32>(drift[p.k + 1u].x);
  for (var base = wid.x * WG; base < p.rows; base += nwg.x * WG) {
    if (lid.x == 0u) { atomicStore(&listed, 0u); }
    workgroupBarrier();
    let r = base + lid.x;
    if (r < p.rows) {
      let c = labels[r];
      var keep = false;
      if (c != NO_LABEL) {
        let b = bounds[r];
        let moved = drift[c];
        var upper = (b.x + moved.x) * (1.0 + DRIFT_SLACK);
        let lower = max((b.y - select(most.x, most.y, c == mostAt)) * (1.0 - DRIFT_SLACK), 0.0);
        let enough = max(lower, moved.y);
        if (!(upper * p.margin < enough)) {
          var s = 0.0;
          for (var j = 0u; j < D; j++) { let t = x[j * p.rows + r] - centres[c * D + j]; s = s + t * t; }
          upper = sqrt(s) * (1.0 + BOUND_SLACK) + BOUND_TINY;
        }
        bounds[r] = vec2f(upper, lower);
        keep = upper * p.margin < enough;
      }
      if (!keep) { listedRows[atomicAdd(&listed, 1u)] = r; }
    }
    workgroupBarrier();
    // One reservation a workgroup: its rows are listed together, near each other in memory.
    let count = atomicLoad(&listed);
    if (lid.x == 0u) { listedBase = atomicAdd(&list[0], count); }
    workgroupBarrier();
    if (lid.x < count) { atomicStore(&list[1u + listedBase + lid.x], listedRows[lid.x]); }
    workgroupBarrier();
  }
}
`;
}
export const kmeansBoundCheckWgsl = memoWgsl(buildKmeansBoundCheckWgsl);

/**
 * Per column j < cols, the largest |x| as its f32 bits (atomicMax: the bits of non-negative floats
 * order as their values; NaN above infinity), into out[outWord + j] (zeroed before). Workgroup w takes
 * column w / chunks, rows chunk × 256 + lane + i × chunks × 256.
 */
export const KMEANS_MAX_ABS_WGSL = /* wgsl */ `
${WGSL_GRID}
struct MaxParams { rows: u32, cols: u32, chunks: u32, outWord: u32 }
@group(0) @binding(0) var<uniform> p: MaxParams;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<atomic<u32>>;
var<workgroup> wgMax: atomic<u32>;

@compute @workgroup_size(256)
fn max_abs(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var w = wid.x; w < p.cols * p.chunks; w += nwg.x) {
    let j = w / p.chunks;
    let chunk = w % p.chunks;
    if (lid.x == 0u) { atomicStore(&wgMax, 0u); }
    workgroupBarrier();
    var m = 0u;
    for (var r = chunk * WG + lid.x; r < p.rows; r += p.chunks * WG) { m = max(m, x[j * p.rows + r] & 0x7fffffffu); }
    atomicMax(&wgMax, m);
    workgroupBarrier();
    if (lid.x == 0u) { atomicMax(&out[p.outWord + j], atomicLoad(&wgMax)); }
    workgroupBarrier();
  }
}
`;

/** Clusters the kernels take (more run on the CPU code). */
export const MAX_GPU_CLUSTERS = 1024;


function buildKmeansPpUpdateWgsl(d: number): string {
  return /* wgsl */ `${header(d)}
@group(0) @binding(2) var<storage, read> centres: array<f32>;
@group(0) @binding(3) var<storage, read_write> minD2: array<f32>;

@compute @workgroup_size(256)
fn pp_update(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  for (var r = gid.x; r < p.rows; r += gridStride(nwg)) {
    let row = loadRow(r);
    var m = select(minD2[r], MAX_F32, p.first == 0u);
    for (var c = p.first; c < p.end; c++) {
      var s = 0.0;
      for (var j = 0u; j < D; j++) { let t = row[j] - centres[c * D + j]; s = s + t * t; }
      if (s < m) { m = s; }
    }
    minD2[r] = m;
  }
}
`;
}
export const kmeansPpUpdateWgsl = memoWgsl(buildKmeansPpUpdateWgsl);

function buildKmeansPpPotentialWgsl(d: number): string {
  return /* wgsl */ `${header(d)}
@group(0) @binding(2) var<storage, read> candidates: array<f32>;
@group(0) @binding(3) var<storage, read> minD2: array<f32>;
@group(0) @binding(4) var<storage, read_write> potential: array<f32>;

/** p.k is the number of candidates here; potential[t × rows + r]. */
@compute @workgroup_size(256)
fn pp_potential(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  dfInit(nwg);
  for (var r = gid.x; r < p.rows; r += gridStride(nwg)) {
    let row = loadRow(r);
    let m = minD2[r];
    for (var t = 0u; t < p.k; t++) {
      var s = 0.0;
      for (var j = 0u; j < D; j++) { let u = row[j] - candidates[t * D + j]; s = s + u * u; }
      potential[t * p.rows + r] = min(m, s);
    }
  }
}
`;
}
export const kmeansPpPotentialWgsl = memoWgsl(buildKmeansPpPotentialWgsl);

/**
 * The row with the smallest rowUniform(key, row) hash (random.ts) among rows firstRow + r, r < rows:
 * each row's hash as its top 27 and next 26 bits (a >> 5, b >> 6), which order rows as the float64
 * score does; ties go to the lower row. Each workgroup writes its best as (a >> 5, b >> 6, row lo,
 * row hi) to best[workgroup]; the host takes the best of those (kmeans.ts smallestHashRow).
 */
export const KMEANS_SMALLEST_HASH_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_MIX32}
${WGSL_ROW_HASH}
struct Params { rows: u32, key: u32, firstLo: u32, firstHi: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> best: array<vec4u>;
var<workgroup> lanes: array<vec4u, 256>;

/** Whether (score, row) s comes before t: score words, then row hi, then row lo. */
fn before(s: vec4u, t: vec4u) -> bool {
  if (s.x != t.x) { return s.x < t.x; }
  if (s.y != t.y) { return s.y < t.y; }
  if (s.w != t.w) { return s.w < t.w; }
  return s.z < t.z;
}

@compute @workgroup_size(256)
fn smallest_hash(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  var mine = vec4u(0xffffffffu); // after every row: a real score word is below 2^27
  for (var r = wid.x * WG + lid.x; r < p.rows; r += nwg.x * WG) {
    let lo = p.firstLo + r;
    let hi = p.firstHi + select(0u, 1u, lo < r); // the carry of firstRow + r
    let a = rowHash32(p.key, lo);
    let b = mix32(a + (hi ^ p.key) * 0x9e3779b1u + lo);
    let s = vec4u(a >> 5u, b >> 6u, lo, hi);
    if (before(s, mine)) { mine = s; }
  }
  lanes[lid.x] = mine;
  workgroupBarrier();
  for (var half = 128u; half > 0u; half >>= 1u) {
    if (lid.x < half && before(lanes[lid.x + half], lanes[lid.x])) { lanes[lid.x] = lanes[lid.x + half]; }
    workgroupBarrier();
  }
  if (lid.x == 0u) { best[wid.x] = lanes[0]; }
}
`;

/**
 * k-means|| sampling: row r (global row firstRow + r) is sampled when u × phi < oversampling ×
 * minD2[r], u its row hash's top 24 bits as an f32 in [0, 1) (the hash of rowUniform); sampled rows
 * are counted at out[outWord] and listed (in no particular order) from out[outWord + 1], the first
 * `cap` of them. CPU twin: kmeans.ts parSampleCpu.
 */
export const KMEANS_PAR_SAMPLE_WGSL = /* wgsl */ `
${WGSL_GRID}
${WGSL_MIX32}
${WGSL_ROW_HASH}
struct Params { rows: u32, key: u32, firstLo: u32, _pad: u32, oversampling: f32, phi: f32, cap: u32, outWord: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> minD2: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<atomic<u32>>;

@compute @workgroup_size(256)
fn par_sample(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var r = gid.x; r < p.rows; r += gridStride(nwg)) {
    // The first word of rowUniform's hash, which depends on the low word of the global row only.
    let a = rowHash32(p.key, p.firstLo + r);
    let u = f32(a >> 8u) * 5.9604644775390625e-8;
    if (u * p.phi < p.oversampling * minD2[r]) {
      let i = atomicAdd(&out[p.outWord], 1u);
      if (i < p.cap) { atomicStore(&out[p.outWord + 1u + i], r); }
    }
  }
}
`;
