// Splits CSV bytes into records and fields (RFC 4180) without making strings: each field is a
// byte range of the buffer. Column conversion happens later, per needed column.
//
// Strict about quotes so that chunk planning by quote parity stays exact: a quote may only open a
// field or, doubled, appear inside a quoted one. A quote inside an unquoted field or text after a
// closing quote is an error (use `--quote ''` to read quote characters literally).
import { CR, LF, type CsvDialect } from './options.js';

/** Fields of the records read, record-major: field c of record r is at index r * fieldsPerRecord + c.
 *  A field is the byte range [start, end) of its text (inside the quotes when quoted). A field
 *  holding doubled quotes, whose text must be unescaped when copied, stores its start as ~start. */
export class FieldTable {
  starts: Int32Array;
  ends: Int32Array;
  /** Byte position where each kept record starts (for error locations). */
  recordStarts: Int32Array;
  records = 0;
  /** Position after the last complete record consumed. */
  consumed = 0;
  /** In any-width mode: how many fields the last record had. */
  lastRecordWidth = 0;

  constructor(capacityFields: number, capacityRecords: number) {
    this.starts = new Int32Array(capacityFields);
    this.ends = new Int32Array(capacityFields);
    this.recordStarts = new Int32Array(capacityRecords);
  }

  growFields(): void {
    const n = this.starts.length * 2 + 16;
    this.starts = grown(this.starts, new Int32Array(n));
    this.ends = grown(this.ends, new Int32Array(n));
  }

  growRecords(): void {
    this.recordStarts = grown(this.recordStarts, new Int32Array(this.recordStarts.length * 2 + 16));
  }
}

function grown(old: Int32Array, bigger: Int32Array): Int32Array {
  bigger.set(old);
  return bigger;
}

export interface TokenizeRequest {
  /** Fields every record must have; -1 accepts any width (header and skipped rows). */
  fieldsPerRecord: number;
  maxRecords: number;
  /** True when `to` is a record boundary (chunk end, end of file); false for a sample cut anywhere,
   *  where an unfinished last record is left unread rather than reported. */
  toIsRecordEnd: boolean;
  skipBlankLines: boolean;
}

/** How the tokenizer reports problems; `fail` throws, `ragged` throws, warns or returns. */
export interface TokenizeProblems {
  fail(message: string, pos: number, column: number): never;
  /** A record with the wrong number of fields; it is dropped if this returns. */
  ragged(recordStart: number, got: number): void;
}

/** Sizes the field table from the density of delimiters and line breaks in the first 64 KiB,
 *  so that big chunks rarely regrow it. */
function estimateFields(buf: Buffer, from: number, to: number, stops: Uint8Array): number {
  const probeEnd = Math.min(to, from + 65536);
  let n = 0;
  for (let i = from; i < probeEnd; i++) n += stops[buf[i]];
  return Math.ceil(((n + 1) * (to - from)) / Math.max(1, probeEnd - from) * 1.1) + 64;
}

export function tokenize(buf: Buffer, from: number, to: number, d: CsvDialect, req: TokenizeRequest,
                         problems: TokenizeProblems): FieldTable {
  const width = req.fieldsPerRecord;
  const anyWidth = width < 0;
  const delim = d.delimiter;
  const quote = d.quote;
  // Bytes that end an unquoted field's scan: delimiter, line feed, and a quote (an error there).
  const stops = new Uint8Array(256);
  stops[delim] = 1;
  stops[LF] = 1;
  if (quote >= 0) stops[quote] = 1;
  const fieldsGuess = req.maxRecords === 1 ? 64 : estimateFields(buf, from, to, stops);
  const t = new FieldTable(fieldsGuess, anyWidth ? 1 : Math.ceil(fieldsGuess / width) + 8);
  let starts = t.starts, ends = t.ends;
  let pos = from;
  let f = 0;
  t.consumed = from;
  records: while (pos < to && t.records < req.maxRecords) {
    const recordStart = pos;
    if (req.skipBlankLines) {
      const b = buf[pos];
      if (b === LF) { pos++; t.consumed = pos; continue; }
      if (b === CR && pos + 1 < to && buf[pos + 1] === LF) { pos += 2; t.consumed = pos; continue; }
    }
    const recordField0 = f;
    let c = 0;
    for (;;) {
      let start = pos;
      let end: number;
      let escaped = false;
      if (pos < to && buf[pos] === quote) {
        start = pos + 1;
        let q = start;
        for (;;) {
          const close = buf.indexOf(quote, q);
          if (close < 0 || close >= to) {
            if (req.toIsRecordEnd) problems.fail('unterminated quoted field', pos, c + 1);
            f = recordField0;
            break records; // unfinished record at the end of a sample
          }
          if (close + 1 < to && buf[close + 1] === quote) { escaped = true; q = close + 2; continue; }
          end = close;
          pos = close + 1;
          break;
        }
        if (pos < to) {
          const b = buf[pos];
          if (b === CR && (pos + 1 === to || buf[pos + 1] === LF)) pos++;
          else if (b !== delim && b !== LF) {
            problems.fail(`unexpected character '${String.fromCharCode(b)}' after a closing quote`, pos, c + 1);
          }
        }
      } else {
        let p = pos;
        while (p < to && stops[buf[p]] === 0) p++;
        if (p < to && buf[p] === quote) {
          problems.fail("quote character inside an unquoted field (quote the whole field, or pass --quote '' to read quotes literally)", p, c + 1);
        }
        end = p;
        if (end > start && buf[end - 1] === CR && (p === to || buf[p] === LF)) end--;
        pos = p;
      }
      if (anyWidth || c < width) {
        if (f >= starts.length) { t.growFields(); starts = t.starts; ends = t.ends; }
        starts[f] = escaped ? ~start : start;
        ends[f] = end;
        f++;
      }
      c++;
      if (pos >= to) {
        if (!req.toIsRecordEnd) { f = recordField0; break records; }
        break;
      }
      if (buf[pos] === delim) { pos++; continue; }
      if (buf[pos] === CR) pos++;
      pos++; // the LF
      break;
    }
    t.consumed = pos;
    if (!anyWidth && c !== width) {
      f = recordField0;
      problems.ragged(recordStart, c);
      continue;
    }
    if (t.records >= t.recordStarts.length) t.growRecords();
    t.recordStarts[t.records++] = recordStart;
    t.lastRecordWidth = c;
  }
  return t;
}

/** Physical line breaks in buf[from, to): turns a byte position into a line number on error paths. */
export function countLineBreaks(buf: Uint8Array, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if (buf[i] === LF) n++;
  return n;
}
