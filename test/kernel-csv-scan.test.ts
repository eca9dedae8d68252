import { describe, expect, it } from 'vitest';
import { csvScan, csvScanCpu, decimalToDouble, findRecords, type CsvScanRequest } from '../src/kernels/csv-scan.js';
import { freeBuffer, readU32, uploadNew } from '../src/engine/gpu/buffers.js';
import { firstDifference, skipGpuTests, testGpu } from '../src/engine/gpu/test-gpu.js';

let seed = 11;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
const concat = (a: Uint8Array, b: Uint8Array) => { const out = new Uint8Array(a.length + b.length); out.set(a); out.set(b, a.length); return out; };

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

  it('finds every record end over many scan blocks: quoted newlines, doubled quotes, quoted fields longer than a block, CRLF', async () => {
    const ctx = await testGpu();
    const blockBytes = 16_384; // 4096 words: four of the prefix scan's blocks
    // Fields: plain, quoted with newlines, commas and doubled quotes, or (rarely) quoted and longer
    // than a block, so that blocks start inside quotes and some hold no quote at all. The sizes
    // take the scans past one level of block sums and end mid-word.
    // (¢ and Ê end in the bytes 0xa2 and 0x8a: '"' and '\n' with the top bit set, which must not count.)
    const quoted = () => `"${Array.from({ length: Math.floor(rand() * 40) }, () => pick(['a', '\n', ',', '""', '\r\n', ' ', '¢', 'Ê'])).join('')}"`;
    const field = () => (rand() < 0.002 ? `"${'x\n"",'.repeat(Math.ceil(blockBytes * (1 + rand()) / 6))}"` : rand() < 0.3 ? quoted() : String(Math.floor(rand() * 1e6)));
    for (const size of [3, blockBytes - 1, 3 * blockBytes + 7, 300 * blockBytes + 5]) {
      let text = '';
      while (text.length < size) text += Array.from({ length: 1 + Math.floor(rand() * 4) }, field).join(',') + pick(['\n', '\r\n', '\n\n']);
      const bytes = enc(text.slice(0, size));
      // Reference: a '\n' after an even number of '"' ends a record.
      const want: number[] = [];
      let quotes = 0;
      bytes.forEach((b, i) => { if (b === 34) quotes++; else if (b === 10 && quotes % 2 === 0) want.push(i); });
      // The buffer goes on past the chunk with quotes and line breaks, which must not count: in the
      // chunk's last word, and in whole words after it.
      const data = await uploadNew(ctx, concat(bytes, enc('"\n'.repeat(20))), 'csv bytes');
      const { records, recEnd } = await findRecords(ctx, data, bytes.length, Math.ceil(bytes.length / 4));
      expect(records, `${bytes.length} bytes`).toBe(want.length);
      if (records > 0) expect(Array.from(await readU32(ctx, recEnd, records))).toEqual(want);
      freeBuffer(ctx, data);
      freeBuffer(ctx, recEnd);
    }
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
