// Seeded CSV generator for benchmarks: flights-like rows with string keys, ints and floats.
// node bench/generate.mjs PATH BYTES  (streams; memory stays small whatever the size)

import { createWriteStream } from 'node:fs';

export async function generateFlights(path, targetBytes, seed = 42) {
  let s = seed >>> 0;
  const rand = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  const codes = Array.from({ length: 300 }, (_, i) => letters[i % 26] + letters[Math.floor(i / 26) % 26] + letters[(i * 7) % 26]);
  const carriers = ['AA', 'DL', 'UA', 'WN', 'B6', 'AS', 'NK', 'F9'];
  const out = createWriteStream(path);
  out.write('id,origin,dest,carrier,delay,distance,price\n');
  let bytes = 0;
  let id = 0;
  while (bytes < targetBytes) {
    const lines = [];
    for (let i = 0; i < 10000; i++, id++) {
      const delay = Math.floor(rand() * rand() * 300) - 30;
      const line = `${id},${codes[Math.floor(rand() * 300)]},${codes[Math.floor(rand() * 300)]},${carriers[Math.floor(rand() * 8)]},${delay},${100 + Math.floor(rand() * 4900)},${(rand() * 900 + 50).toFixed(2)}\n`;
      lines.push(line);
      bytes += line.length;
    }
    if (!out.write(lines.join(''))) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
  return { rows: id, bytes };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [path, size] = process.argv.slice(2);
  const r = await generateFlights(path, Number(size));
  console.log(`${path}: ${r.rows} rows, ${(r.bytes / 1e6).toFixed(0)} MB`);
}
