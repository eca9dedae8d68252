// Double-double arithmetic: a value is hi + lo with |lo| <= ulp(hi)/2, about 106 bits of precision.
// Float sums accumulate in it so that however the rows are split into partials and merged, the
// result rounded once at the end is (barring exact ties) the same double.
// Functions return hi and leave lo in `dd.lo`, so the hot loops allocate nothing.

export const dd = { lo: 0 };

/** hi + lo of a + b, exactly (Knuth's TwoSum). */
export function twoSum(a: number, b: number): number {
  const s = a + b;
  const bb = s - a;
  dd.lo = (a - (s - bb)) + (b - bb);
  return s;
}

/** hi + lo of a * b, exactly (Dekker's TwoProduct with Veltkamp splitting; JS has no fma). */
export function twoProduct(a: number, b: number): number {
  const p = a * b;
  const ca = 134217729 * a, ah = ca - (ca - a), al = a - ah;
  const cb = 134217729 * b, bh = cb - (cb - b), bl = b - bh;
  dd.lo = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  return p;
}

/** (ahi, alo) + (bhi, blo), accurate version (both parts' errors kept). */
export function ddAdd(ahi: number, alo: number, bhi: number, blo: number): number {
  let s = twoSum(ahi, bhi);
  let e = dd.lo;
  const t = twoSum(alo, blo);
  const f = dd.lo;
  e += t;
  let hi = s + e;
  e = e - (hi - s);
  s = hi;
  e += f;
  hi = s + e;
  dd.lo = e - (hi - s);
  return hi;
}

/** (ahi, alo) * (bhi, blo). */
export function ddMul(ahi: number, alo: number, bhi: number, blo: number): number {
  const p = twoProduct(ahi, bhi);
  const e = dd.lo + (ahi * blo + alo * bhi);
  const hi = p + e;
  dd.lo = e - (hi - p);
  return hi;
}

/** (ahi, alo) / (bhi, blo): two Newton-style quotient digits. */
export function ddDiv(ahi: number, alo: number, bhi: number, blo: number): number {
  const q1 = ahi / bhi;
  // r = a - q1 * b
  let phi = ddMul(q1, 0, bhi, blo);
  let plo = dd.lo;
  const rhi = ddAdd(ahi, alo, -phi, -plo);
  const rlo = dd.lo;
  const q2 = rhi / bhi;
  phi = ddMul(q2, 0, bhi, blo);
  plo = dd.lo;
  const r2 = ddAdd(rhi, rlo, -phi, -plo);
  const q3 = r2 / bhi;
  // q1 + q2 + q3, renormalised
  const s = twoSum(q1, q2);
  return ddAdd(s, dd.lo, q3, 0);
}
