// Running a tiny check kernel once per device (openGpu's device checks: subgroups.ts, fma.ts).
// Raw device calls inside error scopes: a failure must not land in GpuContext.errors, which fails
// every later readback. The scopes hold only synchronous calls (the device's other work goes on
// while the pipeline compiles; its errors must not land here either); the asynchronous compile
// rejects by itself.

export interface ProbeKernel {
  code: string;
  entry: string;
  label: string;
  /** Words bound read-only at binding 0 (the output then at binding 1), or none (the output at 0). */
  input?: Uint32Array;
  outputWords: number;
  workgroups: number;
}

/** The words the kernel wrote to its output. */
export async function runProbeKernel(device: GPUDevice, probe: ProbeKernel): Promise<Uint32Array> {
  const bytes = probe.outputWords * 4;
  const out = device.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, label: probe.label });
  const staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const input = probe.input ? device.createBuffer({ size: probe.input.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, label: `${probe.label} input` }) : null;
  try {
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ code: probe.code, label: probe.label });
    const moduleError = await device.popErrorScope();
    if (moduleError) throw new Error(moduleError.message);
    const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: probe.entry } });
    device.pushErrorScope('validation');
    try {
      if (input) device.queue.writeBuffer(input, 0, probe.input!);
      const entries = input ? [{ binding: 0, resource: { buffer: input } }, { binding: 1, resource: { buffer: out } }] : [{ binding: 0, resource: { buffer: out } }];
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries }));
      pass.dispatchWorkgroups(probe.workgroups);
      pass.end();
      enc.copyBufferToBuffer(out, 0, staging, 0, bytes);
      device.queue.submit([enc.finish()]);
    } finally {
      const error = await device.popErrorScope();
      if (error) throw new Error(error.message);
    }
    await staging.mapAsync(GPUMapMode.READ);
    const words = new Uint32Array(staging.getMappedRange().slice(0));
    staging.unmap();
    return words;
  } finally {
    out.destroy();
    staging.destroy();
    input?.destroy();
  }
}
