// Decimal to float64 on the GPU, correctly rounded (so equal to the CPU reader's doubles), with
// u32 arithmetic only (WGSL has no f64 and no u64): value = m · 10^e10 for a 64-bit mantissa m.
//   e10 >= 0: m · 5^e10 exactly (128 bits), then rounded to 53 bits, times 2^e10;
//   e10 < 0:  m / 5^k · 2^-k (k = -e10), from the product of m (normalised to 64 bits) and a
//             128-bit reciprocal of 5^k (the Eisel-Lemire approach): the product's top 128 bits
//             are within one of the exact quotient's, which decides the rounding unless every bit
//             below the rounding bit is one, and then the value is exactly top + 1 (as 0.5, or a
//             halfway point such as 9007199254740993.0).
// Only |e10| <= 22 (the table's reach; 5^22 < 2^52 keeps 5^k in two words, and the all-ones case
// needs 2 · 10^-k above 2^-73): decimalToF64 clears `f64ok` otherwise, and the caller sends the
// chunk to the CPU reader.

/** The largest |e10| the GPU converts. */
export const MAX_DECIMAL_EXPONENT = 22;

/**
 * The reciprocal table decimalToF64 reads from its module's uniform `p` (appended to the words of
 * its Params): recip[k] = floor(2^e_k / 5^k) in four little-endian words, with e_k such that it has
 * 128 bits, then e_k in recipExp (four to a vec4), for k = 0..22.
 */
export function decimalTableWords(): number[] {
  const recip: number[] = [], exps: number[] = [];
  for (let k = 0; k <= MAX_DECIMAL_EXPONENT; k++) {
    const five = 5n ** BigInt(k);
    const e = 127 + five.toString(2).length;
    const r = k === 0 ? (1n << 128n) - 1n : (1n << BigInt(e)) / five;
    for (let w = 0; w < 4; w++) recip.push(Number((r >> BigInt(32 * w)) & 0xffffffffn));
    exps.push(e);
  }
  while (exps.length % 4 !== 0) exps.push(0);
  return [...recip, ...exps];
}

/** The Params fields that hold decimalTableWords(), for the including kernel's struct. */
export const WGSL_DECIMAL_TABLE_FIELDS = `recip: array<vec4u, ${MAX_DECIMAL_EXPONENT + 1}>, recipExp: array<vec4u, ${Math.ceil((MAX_DECIMAL_EXPONENT + 1) / 4)}>,`;

export const WGSL_DECIMAL_TO_F64 = /* wgsl */ `
var<private> f64ok: bool = true;

fn add64(a: vec2u, b: vec2u) -> vec2u {
  let lo = a.x + b.x;
  return vec2u(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn shl64(v: vec2u, s: u32) -> vec2u {
  if (s == 0u) { return v; }
  if (s >= 32u) { return vec2u(0u, v.x << (s - 32u)); }
  return vec2u(v.x << s, (v.y << s) | (v.x >> (32u - s)));
}

fn bitLen32(x: u32) -> u32 { return select(0u, firstLeadingBit(x) + 1u, x != 0u); }
fn bitLen64(v: vec2u) -> u32 { return select(bitLen32(v.x), 32u + bitLen32(v.y), v.y != 0u); }

fn mul32(a: u32, b: u32) -> vec2u {
  let a0 = a & 0xffffu; let a1 = a >> 16u;
  let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2u((p00 & 0xffffu) | (mid << 16u), p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

fn mul64(a: vec2u, b: vec2u) -> vec4u {
  let p00 = mul32(a.x, b.x); let p01 = mul32(a.x, b.y);
  let p10 = mul32(a.y, b.x); let p11 = mul32(a.y, b.y);
  let m1 = add64(vec2u(p00.y, 0u), vec2u(p01.x, 0u));
  let w1 = add64(m1, vec2u(p10.x, 0u));
  let m2 = add64(add64(vec2u(p01.y, 0u), vec2u(p10.y, 0u)), add64(vec2u(p11.x, 0u), vec2u(w1.y, 0u)));
  return vec4u(p00.x, w1.x, m2.x, p11.y + m2.y);
}

fn pow5(k: u32) -> vec2u {
  var v = vec2u(1u, 0u);
  for (var i = 0u; i < k; i++) { v = add64(shl64(v, 2u), v); }
  return v;
}

// Words of a 128-bit n picked by selects, not by a dynamic index (which may go through memory).
fn word128(n: vec4u, i: u32) -> u32 {
  return select(0u, n.x, i == 0u) | select(0u, n.y, i == 1u) | select(0u, n.z, i == 2u) | select(0u, n.w, i == 3u);
}

/** The bits of each of n's words that lie below bit count, as a mask per word. */
fn lowMasks(count: u32) -> vec4u {
  let c = vec4u(count, count, count, count);
  let first = vec4u(0u, 32u, 64u, 96u);
  let partial = (vec4u(1u, 1u, 1u, 1u) << ((c - min(c, first)) & vec4u(31u, 31u, 31u, 31u))) - vec4u(1u, 1u, 1u, 1u);
  return select(select(partial, vec4u(0u, 0u, 0u, 0u), c <= first), vec4u(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu), c >= first + vec4u(32u, 32u, 32u, 32u));
}

fn bitLen128(n: vec4u) -> u32 {
  if (n.w != 0u) { return 96u + bitLen32(n.w); }
  if (n.z != 0u) { return 64u + bitLen32(n.z); }
  return bitLen64(n.xy);
}

/** Bits [s, s + 64) of n. */
fn shr128(n: vec4u, s: u32) -> vec2u {
  let w = s / 32u;
  let r = s % 32u;
  if (r == 0u) { return vec2u(word128(n, w), word128(n, w + 1u)); }
  return vec2u((word128(n, w) >> r) | (word128(n, w + 1u) << (32u - r)),
               (word128(n, w + 1u) >> r) | (word128(n, w + 2u) << (32u - r)));
}

/** Whether any of the bits [0, count) of n is set. */
fn lowBitsSet(n: vec4u, count: u32) -> bool { return any((n & lowMasks(count)) != vec4u(0u, 0u, 0u, 0u)); }

/** The double nearest to (n + a sticky fraction) · 2^e2, as (lo, hi) words. */
fn roundToDouble(n: vec4u, e2: i32, stickyIn: bool, neg: bool) -> vec2u {
  let sign = select(0u, 0x80000000u, neg);
  let len = bitLen128(n);
  if (len == 0u) { return vec2u(0u, sign); }
  var exp = i32(len) - 1 + e2;
  var q: vec2u;
  if (len <= 53u) {
    q = shl64(n.xy, 53u - len);
  } else {
    let sh = len - 53u;
    q = shr128(n, sh);
    let guard = (word128(n, (sh - 1u) / 32u) >> ((sh - 1u) % 32u)) & 1u;
    let sticky = stickyIn || lowBitsSet(n, sh - 1u);
    if (guard == 1u && (sticky || (q.x & 1u) == 1u)) {
      q = add64(q, vec2u(1u, 0u));
      if ((q.y >> 21u) != 0u) { q = vec2u(0u, 0x100000u); exp += 1; }
    }
  }
  let biased = exp + 1023;
  if (biased <= 0 || biased >= 2047) { f64ok = false; return vec2u(0u, sign); }
  return vec2u(q.x, (q.y & 0xfffffu) | (u32(biased) << 20u) | sign);
}

/** Whether bits [0, count) of n are all ones. */
fn lowBitsAllOnes(n: vec4u, count: u32) -> bool { let mask = lowMasks(count); return all((n & mask) == mask); }

fn decimalToF64(m: vec2u, e10: i32, neg: bool) -> vec2u {
  if (m.x == 0u && m.y == 0u) { return vec2u(0u, select(0u, 0x80000000u, neg)); }
  if (e10 > ${MAX_DECIMAL_EXPONENT} || e10 < -${MAX_DECIMAL_EXPONENT}) { f64ok = false; return vec2u(0u, 0u); }
  // Both exponent signs end in one roundToDouble (of n + a sticky fraction, times 2^e2), so that a
  // subgroup holding both rounds once.
  var n: vec4u;
  var e2: i32;
  var sticky = false;
  if (e10 >= 0) {
    n = mul64(m, pow5(u32(e10)));
    e2 = e10;
  } else {
    let k = u32(-e10);
    let lz = 64u - bitLen64(m);
    let mn = shl64(m, lz);
    let r = p.recip[k];
    let e = p.recipExp[k / 4u][k % 4u];
    // The product mn · r in six words; top = its words 2..5. The exact mn · 2^e / 5^k lies in
    // (mn · r, mn · r + 2^64): its top 128 bits are top or top + 1.
    let lo = mul64(mn, r.xy);
    let hi = mul64(mn, r.zw);
    let w2 = add64(vec2u(lo.z, 0u), vec2u(hi.x, 0u));
    let w3 = add64(add64(vec2u(lo.w, 0u), vec2u(hi.y, 0u)), vec2u(w2.y, 0u));
    let w4 = add64(vec2u(hi.z, 0u), vec2u(w3.y, 0u));
    let top = vec4u(w2.x, w3.x, w4.x, hi.w + w4.y);
    // value = exact · 2^-(lz + e + k) = (top + fraction) · 2^e2.
    e2 = 64 - i32(lz) - i32(e) - i32(k);
    n = top;
    sticky = true;
    if (lowBitsAllOnes(top, bitLen128(top) - 54u)) {
      // Every bit below the rounding bit one: the value lies within 2^-73 of a step of the 54-bit
      // grid (doubles and the halfway points between them) from a grid point, and so is that
      // point, top + 1, exactly. A decimal off the grid is at least 2 · 10^-22 of a step away:
      // with G the step, x - N·G = (m · 2^j - N · 10^k) / (10^k · 2^j) for j = 53 - log2(x) >= 1,
      // an even nonzero numerator (for j <= 0, x >= 2^53 leaves k <= 3, and the distance is larger).
      let c1 = add64(top.xy, vec2u(1u, 0u));
      n = vec4u(c1, add64(top.zw, vec2u(select(0u, 1u, c1.x == 0u && c1.y == 0u), 0u)));
      sticky = false;
    }
  }
  return roundToDouble(n, e2, sticky, neg);
}
`;
