import { describe, expect, it } from 'vitest';
import { csvScan, csvScanCpu, decimalToDouble, type CsvScanRequest } from '../src/kernels/csv-scan.js';
import { firstDifference, skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';

let seed = 11;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];

function randomDecimal(): string {
  const sign = pick(['', '-', '+']);
  const whole = String(Math.floor(rand() * 10 ** Math.floor(rand() * 12)));
  const frac = Array.from({ length: Math.floor(rand() * 18) }, () => Math.floor(rand() * 10)).join('');
  const exp = rand() < 0.2 ? `e${pick(['', '-', '+'])}${Math.floor(rand() * 310)}` : '';
  return pick([`${sign}${whole}.${frac}${exp}`, `${sign}${whole}${exp}`, `${sign}.${frac || '5'}`, String((rand() - 0.5) * 10 ** (rand() * 40 - 20))]);
}

async function expectSame(req: CsvScanRequest) {
  const ctx = await testGpu();
  const gpu = await csvScan(ctx, req);
  const cpu = csvScanCpu(req);
  expect(gpu.records).toBe(cpu.records);
  expect(gpu.consumed).toBe(cpu.consumed);
  gpu.columns.forEach((g, j) => {
    const c = cpu.columns[j];
    expect(g.valid === null ? null : Array.from(g.valid)).toEqual(c.valid === null ? null : Array.from(c.valid));
    expect(firstDifference(g.values, c.values)).toBe(-1);
  });
  return gpu;
}

const enc = (s: string) => new TextEncoder().encode(s);

describe.skipIf(skipGpuTests)('csv-scan kernel', () => {
  it('parses many random decimals to the same doubles as the CPU parser', async () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => `${i},${randomDecimal()},${-i * 1_000_000_007}`);
    const gpu = await expectSame({ bytes: enc(rows.join('\n') + '\n'), columns: [{ index: 1, type: 'float64' }, { index: 2, type: 'int64' }, { index: 0, type: 'int64' }], final: true });
    expect(gpu.records).toBe(20_000);
  });

  it('handles quoted newlines and commas, empty fields, CRLF, blank lines and a partial last record', async () => {
    const text = 'a,"x\nwith, comma",1.5\r\n\nb,,\r\nc,"say ""hi""",-0.25\n"d",q,"7"\n,,\ne,tail,3';
    const bytes = enc(text);
    const gpu = await expectSame({ bytes, columns: [{ index: 2, type: 'float64' }], final: false });
    expect(gpu.records).toBe(5);
    expect(gpu.consumed).toBe(text.lastIndexOf('\n') + 1);
    expect(Array.from(gpu.columns[0].values)).toEqual([1.5, 0, -0.25, 7, 0]);
    expect(Array.from(gpu.columns[0].valid!)).toEqual([1, 0, 1, 1, 0]);
    const fin = await expectSame({ bytes, columns: [{ index: 2, type: 'float64' }], final: true });
    expect(fin.records).toBe(6);
  });

  it('parses int64 extremes, signs and long values (host fallback) exactly', async () => {
    const vals = ['9223372036854775807', '-9223372036854775808', '0', '-0', '+42', '123456789012345678', '-999999999999999999', '"17"', '', '4294967296', '-4294967297'];
    await expectSame({ bytes: enc(vals.map((v, i) => `${i},${v}`).join('\n')), columns: [{ index: 1, type: 'int64' }], final: true });
  });

  it('reports malformed numbers and missing fields as data errors', async () => {
    const ctx = await testGpu();
    await expect(csvScan(ctx, { bytes: enc('1,2\n3,x4\n'), columns: [{ index: 1, type: 'int64' }], final: true })).rejects.toThrow(/cannot parse 'x4' as int64/);
    await expect(csvScan(ctx, { bytes: enc('1,2\n3\n'), columns: [{ index: 1, type: 'float64' }], final: true })).rejects.toThrow(/no field 2/);
    await expect(csvScan(ctx, { bytes: enc('1,99999999999999999999\n'), columns: [{ index: 1, type: 'int64' }], final: true })).rejects.toThrow(/out of int64 range/);
  });

  it('forms exact doubles from mantissa digits and decimal exponents', () => {
    for (let i = 0; i < 5000; i++) {
      const digits = BigInt(Math.floor(rand() * 2 ** 53)) * BigInt(1 + Math.floor(rand() * 2000));
      const e = Math.floor(rand() * 80) - 40;
      const lo = Number(digits & 0xffffffffn), hi = Number(digits >> 32n);
      expect(decimalToDouble(lo, hi, e)).toBe(Number(`${digits}e${e}`));
    }
  });
});
