// Small dense symmetric solvers in float64 for normal equations (d × d, row-major).

/** Relative size below which a pivot or eigenvalue counts as zero (rank deficiency). */
const RANK_TOLERANCE = 1e-12;

/** Solves A x = b by Cholesky; null when A is not (numerically) positive definite. */
export function choleskySolve(a: Float64Array, b: Float64Array, n: number): Float64Array | null {
  let maxDiag = 0;
  for (let i = 0; i < n; i++) maxDiag = Math.max(maxDiag, Math.abs(a[i * n + i]));
  const floor = maxDiag * n * RANK_TOLERANCE;
  const l = new Float64Array(n * n);
  for (let j = 0; j < n; j++) {
    let s = a[j * n + j];
    for (let k = 0; k < j; k++) s -= l[j * n + k] ** 2;
    if (!(s > floor)) return null;
    const ljj = Math.sqrt(s);
    l[j * n + j] = ljj;
    for (let i = j + 1; i < n; i++) {
      let t = a[i * n + j];
      for (let k = 0; k < j; k++) t -= l[i * n + k] * l[j * n + k];
      l[i * n + j] = t / ljj;
    }
  }
  const z = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let t = b[i];
    for (let k = 0; k < i; k++) t -= l[i * n + k] * z[k];
    z[i] = t / l[i * n + i];
  }
  const x = new Float64Array(n);
  for (let i = n - 1; i >= 0; i--) {
    let t = z[i];
    for (let k = i + 1; k < n; k++) t -= l[k * n + i] * x[k];
    x[i] = t / l[i * n + i];
  }
  return x;
}

/** Eigen-decomposition of a symmetric matrix by cyclic Jacobi rotations: A = V diag(values) Vᵀ. */
export function symmetricEigen(a: Float64Array, n: number): { values: Float64Array; vectors: Float64Array } {
  const m = a.slice();
  const v = new Float64Array(n * n);
  for (let i = 0; i < n; i++) v[i * n + i] = 1;
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += m[p * n + q] ** 2;
    if (off === 0 || !Number.isFinite(off)) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = m[p * n + q];
        if (apq === 0) continue;
        const theta = (m[q * n + q] - m[p * n + p]) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1), s = t * c;
        for (let k = 0; k < n; k++) { // rotate columns p, q
          const mkp = m[k * n + p], mkq = m[k * n + q];
          m[k * n + p] = c * mkp - s * mkq;
          m[k * n + q] = s * mkp + c * mkq;
        }
        for (let k = 0; k < n; k++) { // rotate rows p, q
          const mpk = m[p * n + k], mqk = m[q * n + k];
          m[p * n + k] = c * mpk - s * mqk;
          m[q * n + k] = s * mpk + c * mqk;
        }
        for (let k = 0; k < n; k++) {
          const vkp = v[k * n + p], vkq = v[k * n + q];
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  const values = new Float64Array(n);
  for (let i = 0; i < n; i++) values[i] = m[i * n + i];
  return { values, vectors: v };
}

/** Minimum-norm solution of the (possibly singular) symmetric system A x = b: x = A⁺ b. */
export function minNormSolve(a: Float64Array, b: Float64Array, n: number): Float64Array {
  const { values, vectors } = symmetricEigen(a, n);
  const maxAbs = values.reduce((s, v) => Math.max(s, Math.abs(v)), 0);
  const cutoff = maxAbs * n * RANK_TOLERANCE;
  const x = new Float64Array(n);
  for (let e = 0; e < n; e++) {
    if (values[e] <= cutoff) continue;
    let proj = 0;
    for (let i = 0; i < n; i++) proj += vectors[i * n + e] * b[i];
    const scale = proj / values[e];
    for (let i = 0; i < n; i++) x[i] += scale * vectors[i * n + e];
  }
  return x;
}

/** Cholesky when A is positive definite, else the minimum-norm least-squares fallback. */
export function solveNormalEquations(a: Float64Array, b: Float64Array, n: number): { x: Float64Array; rankDeficient: boolean } {
  const x = choleskySolve(a, b, n);
  return x ? { x, rankDeficient: false } : { x: minNormSolve(a, b, n), rankDeficient: true };
}
