// Compiling a kernel's pipelines costs the NVIDIA driver about a second for the whole CSV
// group-by (the first chunk of a run took ~1 s longer than the others; ~0.1-0.15 s once NVIDIA's
// shader disk cache holds them). A GPU worker on a hardware adapter compiles them right after
// reporting ready, while the parent is still planning chunks.
// (On lavapipe compiling is slow too, but tests start many short-lived workers: it stays lazy.)

import type { GpuContext } from '../gpu/device.js';
import { kernelFor, stagingRingOf } from '../gpu/buffers.js';
import { CSV_ROWS_WGSL, CSV_VALID_BITS_WGSL } from '../../kernels/csv-rows.wgsl.js';
import { CSV_BOUNDARIES_WGSL } from '../../kernels/csv-scan.wgsl.js';
import * as G from '../../kernels/groupby-aggregate.wgsl.js';
import { KEY_VERIFY_WGSL } from '../../kernels/key-hash.wgsl.js';
import { PREFIX_SCAN_WGSL } from '../../kernels/prefix-scan.wgsl.js';
import { scanBlocksKernel, scanVariant } from '../../kernels/prefix-scan.js';

/** Label, WGSL and entry points of every kernel the CSV group-by path dispatches (labels as in their host files). */
export const CSV_GROUPBY_KERNELS: [string, string, string[]][] = [
  ['csv-boundaries', CSV_BOUNDARIES_WGSL, ['quote_counts', 'count_records', 'list_records']],
  ['prefix-scan', PREFIX_SCAN_WGSL, ['scan_blocks', 'add_block_offsets']],
  ['csv-rows', CSV_ROWS_WGSL, ['split_rows']],
  ['csv-valid-bits', CSV_VALID_BITS_WGSL, ['valid_bits']],
  ['groupby-insert', G.GROUPBY_INSERT_WGSL, ['insert_keys']],
  ['key-verify', KEY_VERIFY_WGSL, ['verify_keys']],
  ['groupby-int-sum', G.GROUPBY_INT_SUM_WGSL, ['sum_int']],
  ['groupby-float-sum', G.GROUPBY_FLOAT_SUM_WGSL, ['float_exponents', 'float_sum']],
  ['groupby-min-max', G.GROUPBY_MIN_MAX_WGSL, ['minmax_init', 'minmax_hi', 'minmax_lo']],
  ['groupby-mark-first', G.GROUPBY_MARK_FIRST_WGSL, ['mark_first_rows']],
  ['groupby-order', G.GROUPBY_ORDER_WGSL, ['order_groups']],
  ['groupby-gather', G.GROUPBY_GATHER_WGSL, ['gather']],
];

/**
 * Compiles those kernels and, while the driver compiles, maps the staging ring's slots (~80 ms on
 * an H200, which the first chunk's upload used to wait for) and finishes the device checks.
 * Rejects if a kernel fails to compile.
 */
export async function warmUpKernels(gpu: GpuContext): Promise<void> {
  // Tasks then see the device checks' verdicts (also on software adapters, which compile lazily).
  if (gpu.isSoftware) return gpu.checked;
  const compiling = CSV_GROUPBY_KERNELS.map(([label, code, entries]) => kernelFor(gpu, label, code).prepare(entries));
  // The list holds the plain scan_blocks; where subgroups are usable, the scans run this one.
  compiling.push(gpu.checked.then(() => (scanVariant(gpu) === 'subgroups' ? scanBlocksKernel(gpu, 'subgroups').prepare(['scan_blocks']) : undefined)));
  stagingRingOf(gpu);
  await Promise.all(compiling);
}
