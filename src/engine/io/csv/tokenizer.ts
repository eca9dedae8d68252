// Splits CSV bytes into records and fields (RFC 4180) without making strings: each field is a
// byte range of the buffer. Column conversion happens later, per needed column.
//
// Strict about quotes so that chunk planning by quote parity stays exact: a quote may only open a
// field or, doubled, appear inside a quoted one. A quote inside an unquoted field or text after a
// closing quote is an error (use `--quote ''` to read quote characters literally).
import { reuse } from '../scratch.js';
import { CR, LF, type CsvDialect } from './options.js';

/** Fields of the records read, column-major so that converting one column reads memory in order:
 *  field c of record r is at index c * stride + r (see `index`). A field is the byte range
 *  [start, end) of its text (inside the quotes when quoted). A field holding doubled quotes, whose
 *  text must be unescaped when copied, stores its start as ~start. */
export class FieldTable {
  starts: Int32Array;
  ends: Int32Array;
  /** Byte position where each kept record starts (for error locations). */
  recordStarts: Int32Array;
  /** Record capacity: distance between one column's fields and the next's. */
  stride: number;
  records = 0;
  /** Position after the last complete record consumed. */
  consumed = 0;
  /** How many fields the last record had (the header's width in any-width mode). */
  lastRecordWidth = 0;

  constructor(private width: number, capacityRecords: number) {
    this.stride = capacityRecords;
    this.starts = new Int32Array(width * capacityRecords);
    this.ends = new Int32Array(width * capacityRecords);
    this.recordStarts = new Int32Array(capacityRecords);
  }

  /** Whether this table can be emptied and reused for records of `width` fields. */
  fits(width: number, capacityRecords: number): boolean {
    return width === this.width && capacityRecords <= this.stride;
  }

  /** Empties the table for reuse (the arrays keep stale fields past `records`). */
  clear(): this {
    this.records = 0;
    this.consumed = 0;
    this.lastRecordWidth = 0;
    return this;
  }

  index(column: number, record: number): number {
    return column * this.stride + record;
  }

  /** Doubles the record capacity, moving each column's fields to their new place. */
  growRecords(): void {
    const stride = this.stride * 2 + 16;
    this.starts = restrided(this.starts, this.width, this.stride, stride);
    this.ends = restrided(this.ends, this.width, this.stride, stride);
    const recordStarts = new Int32Array(stride);
    recordStarts.set(this.recordStarts);
    this.recordStarts = recordStarts;
    this.stride = stride;
  }

  /** Any-width mode holds one record: its fields are simply 0, 1, 2, ... */
  growWidth(): void {
    this.width = this.width * 2 + 16;
    this.starts = restrided(this.starts, 1, this.starts.length, this.width);
    this.ends = restrided(this.ends, 1, this.ends.length, this.width);
  }
}

function restrided(old: Int32Array, width: number, oldStride: number, stride: number): Int32Array {
  const out = new Int32Array(width * stride);
  for (let c = 0; c < width; c++) out.set(old.subarray(c * oldStride, (c + 1) * oldStride), c * stride);
  return out;
}

export interface TokenizeRequest {
  /** Fields every record must have; -1 accepts any width (header and skipped rows). */
  fieldsPerRecord: number;
  maxRecords: number;
  /** True when `to` is a record boundary (chunk end, end of file); false for a sample cut anywhere,
   *  where an unfinished last record is left unread rather than reported. */
  toIsRecordEnd: boolean;
  skipBlankLines: boolean;
  /** The table may be the process's reused one (io/scratch.ts): valid until the next such call. */
  scratchTable?: boolean;
}

/** How the tokenizer reports problems; `fail` throws, `ragged` throws, warns or returns. */
export interface TokenizeProblems {
  fail(message: string, pos: number, column: number): never;
  /** A record with the wrong number of fields; it is dropped if this returns. */
  ragged(recordStart: number, got: number): void;
}

/** Estimates the records in buf[from, to) from the line breaks in its first 64 KiB, so that big
 *  chunks rarely regrow the field table. */
function estimateRecords(buf: Buffer, from: number, to: number): number {
  const probeEnd = Math.min(to, from + 65536);
  let n = 0;
  for (let i = buf.indexOf(LF, from); i >= 0 && i < probeEnd; i = buf.indexOf(LF, i + 1)) n++;
  return Math.ceil(((n + 1) * (to - from)) / Math.max(1, probeEnd - from) * 1.1) + 16;
}

/** The scan's stop "byte" at `to`: no byte, and not the -1 of a dialect without quoting. */
const END = 256;

function fieldTable(width: number, capacityRecords: number, scratch: boolean): FieldTable {
  if (!scratch) return new FieldTable(width, capacityRecords);
  return reuse('csv field table', (t: FieldTable) => t.fits(width, capacityRecords), () => new FieldTable(width, capacityRecords)).clear();
}

export function tokenize(buf: Buffer, from: number, to: number, d: CsvDialect, req: TokenizeRequest,
                         problems: TokenizeProblems): FieldTable {
  const width = req.fieldsPerRecord;
  const anyWidth = width < 0;
  if (anyWidth && req.maxRecords !== 1) throw new Error('any-width tokenizing reads one record at a time');
  const delim = d.delimiter;
  const quote = d.quote;
  // Bytes that end a field's scan: delimiter, line feed, a quote (opening a quoted field, or an
  // error), and CR (ending the line before LF; any other CR is text and the scan goes on).
  const stops = new Uint8Array(256);
  stops[delim] = 1;
  stops[LF] = 1;
  stops[CR] = 1;
  if (quote >= 0) stops[quote] = 1;
  const t = anyWidth ? new FieldTable(16, 1) : fieldTable(width, Math.min(estimateRecords(buf, from, to), req.maxRecords), req.scratchTable === true);
  let starts = t.starts, ends = t.ends, stride = t.stride;
  // The table's counters and the request's fields live in locals inside the loop (stored back at
  // the end): the JIT keeps them in registers, ~15% of the tokenizer's time.
  const { maxRecords, skipBlankLines, toIsRecordEnd } = req;
  let recordStarts = t.recordStarts;
  let records = 0;
  let consumed = from;
  let pos = from;
  records: while (pos < to && records < maxRecords) {
    const recordStart = pos;
    if (skipBlankLines) {
      const b = buf[pos];
      if (b === LF) { pos++; consumed = pos; continue; }
      if (b === CR && pos + 1 < to && buf[pos + 1] === LF) { pos += 2; consumed = pos; continue; }
      // A CR ending the file ends a line (as after the last field), so a blank one there too.
      if (b === CR && pos + 1 === to && toIsRecordEnd) { pos++; consumed = pos; continue; }
    }
    if (records >= stride) {
      t.records = records;
      t.growRecords();
      ({ starts, ends, stride, recordStarts } = t);
    }
    let c = 0;
    let f = records; // index of field c of this record
    for (;;) {
      let start = pos;
      let end: number;
      let escaped = false;
      // One scan finds the field's end, or its opening quote (a stop at its first byte).
      let p = pos;
      let b = END; // the stop byte
      for (;;) {
        while (p < to && stops[buf[p]] === 0) p++;
        b = p < to ? buf[p] : END;
        if (b === CR && p + 1 < to && buf[p + 1] !== LF) { p++; continue; } // a CR inside the field
        break;
      }
      if (b === quote && p === pos) {
        start = pos + 1;
        let q = start;
        for (;;) {
          const close = buf.indexOf(quote, q);
          if (close < 0 || close >= to) {
            if (toIsRecordEnd) problems.fail('unterminated quoted field', pos, c + 1);
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
        if (b === quote) {
          problems.fail("quote character inside an unquoted field (quote the whole field, or pass --quote '' to read quotes literally)", p, c + 1);
        }
        end = p;
        pos = b === CR ? p + 1 : p; // past a CR ending the line: at its LF, or at `to`
      }
      if (anyWidth) {
        if (c >= starts.length) { t.growWidth(); starts = t.starts; ends = t.ends; }
        starts[c] = escaped ? ~start : start;
        ends[c] = end;
      } else if (c < width) {
        starts[f] = escaped ? ~start : start;
        ends[f] = end;
        f += stride;
      }
      c++;
      if (pos >= to) {
        if (!toIsRecordEnd) break records;
        break;
      }
      if (buf[pos] === delim) { pos++; continue; }
      pos++; // the LF (a CR before it was passed with the field)
      break;
    }
    consumed = pos;
    if (!anyWidth && c !== width) {
      problems.ragged(recordStart, c); // the record is not kept: its fields get overwritten
      continue;
    }
    recordStarts[records++] = recordStart;
    t.lastRecordWidth = c;
  }
  t.records = records;
  t.consumed = consumed;
  return t;
}

/** Physical line breaks in buf[from, to): turns a byte position into a line number on error paths. */
export function countLineBreaks(buf: Uint8Array, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if (buf[i] === LF) n++;
  return n;
}
