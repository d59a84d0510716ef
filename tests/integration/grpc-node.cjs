// grpc-node.cjs - a third-party gRPC client of reduced: Node's @grpc/grpc-js
// and @grpc/proto-loader loading the Open Inference Protocol's published
// .proto (shared/protocols/open_inference_grpc.proto), as a KServe or
// Triton user's generated client would.  Driven by t_grpc.sh:
//   node grpc-node.cjs MODE PROTO HEALTH_PROTO ADDR [HTTP_URL] [EXTRA]
// MODE: main (every RPC, datatype, error; HTTP comparison), auth KEY,
// tls CERT, drain (prints "held" then waits for "go" on stdin), overload.
// Prints one "ok - NAME" or "not ok - NAME: WHY" line per check.  Expected
// values are worked out by hand in the comments (IEEE bit patterns), never
// taken from the server.
'use strict';
const path = require('path');
const tools = process.env.GRPC_TOOLS;
const grpc = require(path.join(tools, 'node_modules/@grpc/grpc-js'));
const loader = require(path.join(tools, 'node_modules/@grpc/proto-loader'));

const [mode, protoFile, healthFile, addr, httpUrl, extra] = process.argv.slice(2);
const opts = { keepCase: true, longs: String, enums: String, defaults: true,
               oneofs: true };
const inference = grpc.loadPackageDefinition(loader.loadSync(protoFile, opts)).inference;
const health = grpc.loadPackageDefinition(loader.loadSync(healthFile, opts)).grpc.health.v1;
const MiB = 1024 * 1024;
const chanOpts = { 'grpc.max_receive_message_length': 64 * MiB,
                   'grpc.max_send_message_length': 64 * MiB };

let failed = 0;
function ok(name) { console.log(`ok - ${name}`); }
function bad(name, why) { failed++; console.log(`not ok - ${name}: ${why}`); }
function check(name, cond, why) { if (cond) ok(name); else bad(name, why); }

function client(creds) {
  return new inference.GRPCInferenceService(addr, creds || grpc.credentials.createInsecure(), chanOpts);
}
function healthClient(creds) {
  return new health.Health(addr, creds || grpc.credentials.createInsecure());
}
// call(c, 'ModelInfer', req[, md]) -> {err, res}
function call(c, method, req, md) {
  return new Promise((resolve) => {
    c[method](req, md || new grpc.Metadata(), { deadline: Date.now() + 60000 },
              (err, res) => resolve({ err, res }));
  });
}

// ---- tensors
function f32(...v) { const b = Buffer.alloc(4 * v.length); v.forEach((x, i) => b.writeFloatLE(x, i * 4)); return b; }
function f64(...v) { const b = Buffer.alloc(8 * v.length); v.forEach((x, i) => b.writeDoubleLE(x, i * 8)); return b; }
function i64(...v) { const b = Buffer.alloc(8 * v.length); v.forEach((x, i) => b.writeBigInt64LE(BigInt(x), i * 8)); return b; }
function u64(...v) { const b = Buffer.alloc(8 * v.length); v.forEach((x, i) => b.writeBigUInt64LE(BigInt(x), i * 8)); return b; }
function i32(...v) { const b = Buffer.alloc(4 * v.length); v.forEach((x, i) => b.writeInt32LE(x, i * 4)); return b; }
function u32(...v) { const b = Buffer.alloc(4 * v.length); v.forEach((x, i) => b.writeUInt32LE(x, i * 4)); return b; }
function i16(...v) { const b = Buffer.alloc(2 * v.length); v.forEach((x, i) => b.writeInt16LE(x, i * 2)); return b; }
function u16(...v) { const b = Buffer.alloc(2 * v.length); v.forEach((x, i) => b.writeUInt16LE(x, i * 2)); return b; }
function i8(...v) { const b = Buffer.alloc(v.length); v.forEach((x, i) => b.writeInt8(x, i)); return b; }
function u8(...v) { return Buffer.from(v); }

function infer(model, datatype, shape, contents, params, extraFields) {
  const input = { name: 'data', datatype, shape };
  const req = { model_name: model, inputs: [input], parameters: params || {} };
  if (Buffer.isBuffer(contents)) req.raw_input_contents = [contents];
  else input.contents = contents;
  return Object.assign(req, extraFields || {});
}
const P = {
  int: (v) => ({ int64_param: String(v) }),
  bool: (v) => ({ bool_param: v }),
  str: (v) => ({ string_param: v }),
};

// expectOut NAME {err,res} DATATYPE SHAPE BYTES
function expectOut(name, r, datatype, shape, bytes) {
  if (r.err) return bad(name, `status ${r.err.code}: ${r.err.details}`);
  const o = r.res.outputs[0];
  const raw = r.res.raw_output_contents[0];
  const gotShape = o.shape.map(Number);
  if (r.res.outputs.length !== 1 || o.name !== 'reduced') return bad(name, `outputs ${JSON.stringify(r.res.outputs)}`);
  if (o.datatype !== datatype) return bad(name, `datatype ${o.datatype}, expected ${datatype}`);
  if (JSON.stringify(gotShape) !== JSON.stringify(shape)) return bad(name, `shape ${JSON.stringify(gotShape)}, expected ${JSON.stringify(shape)}`);
  if (!raw || !raw.equals(bytes)) return bad(name, `raw ${raw && raw.toString('hex')}, expected ${bytes.toString('hex')}`);
  ok(name);
}
// expectErr NAME {err} CODE WIRE_NAME
function expectErr(name, r, code, wire) {
  if (!r.err) return bad(name, `succeeded, expected status ${code}`);
  if (r.err.code !== code) return bad(name, `status ${r.err.code} (${r.err.details}), expected ${code}`);
  if (wire && !String(r.err.details).startsWith(wire + ': ')) return bad(name, `message "${r.err.details}" does not start with "${wire}: "`);
  ok(name);
}

// ---- HTTP /v2 with the binary extension, for the same tensor
async function httpInfer(model, datatype, shape, blob, params) {
  const header = JSON.stringify({
    inputs: [{ name: 'data', datatype, shape, parameters: { binary_data_size: blob.length } }],
    outputs: [{ name: 'reduced', parameters: { binary_data: true } }],
    parameters: params || {},
  });
  const body = Buffer.concat([Buffer.from(header), blob]);
  const res = await fetch(`${httpUrl}/v2/models/${model}/infer`, {
    method: 'POST', body,
    headers: { 'Inference-Header-Content-Length': String(header.length),
               'Content-Type': 'application/octet-stream' },
  });
  const buf = Buffer.from(await res.arrayBuffer());
  const h = res.headers.get('inference-header-content-length');
  const jl = h === null ? buf.length : Number(h);
  if (res.status !== 200) return { status: `${res.status} ${buf.toString().slice(0, 200)}` };
  return { status: res.status, json: JSON.parse(buf.subarray(0, jl).toString()), blob: buf.subarray(jl) };
}

// A deterministic pseudo-random generator (xorshift32).
function rng(seed) { let s = seed >>> 0; return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; }; }

async function main() {
  const c = client();
  let r;

  // ---- the metadata RPCs
  r = await call(c, 'ServerLive', {});
  check('ServerLive: live', !r.err && r.res.live === true, JSON.stringify(r));
  r = await call(c, 'ServerReady', {});
  check('ServerReady: ready', !r.err && r.res.ready === true, JSON.stringify(r));
  r = await call(c, 'ServerMetadata', {});
  check('ServerMetadata: name and version', !r.err && r.res.name === 'reduced' && r.res.version === extra,
        JSON.stringify(r.res || r.err));
  r = await call(c, 'ModelReady', { name: 'ReduceL2', version: '' });
  check('ModelReady ReduceL2: ready', !r.err && r.res.ready === true, JSON.stringify(r));
  r = await call(c, 'ModelReady', { name: 'ReduceSum', version: '13' });
  check('ModelReady ReduceSum version 13: ready', !r.err && r.res.ready === true, JSON.stringify(r));
  expectErr('ModelReady unknown model: NOT_FOUND', await call(c, 'ModelReady', { name: 'Softmax' }), grpc.status.NOT_FOUND, 'NOT_FOUND');
  expectErr('ModelReady version 99: NOT_FOUND', await call(c, 'ModelReady', { name: 'ReduceL2', version: '99' }), grpc.status.NOT_FOUND, 'NOT_FOUND');
  expectErr('ModelReady version "x": INVALID_ARGUMENT', await call(c, 'ModelReady', { name: 'ReduceL2', version: 'x' }), grpc.status.INVALID_ARGUMENT, 'INVALID_FIELD');

  r = await call(c, 'ModelMetadata', { name: 'ReduceSumSquare' });
  check('ModelMetadata ReduceSumSquare: versions, platform, inputs data+axes, output',
        !r.err && JSON.stringify(r.res.versions) === '["1","11","13","18"]' && r.res.platform === 'onnx_reduce' &&
        r.res.inputs.map((t) => `${t.name}:${t.datatype}`).join() === 'data:FP32,axes:INT64' &&
        r.res.outputs.map((t) => `${t.name}:${t.datatype}:${t.shape.join()}`).join() === 'reduced:FP32:-1' &&
        r.res.properties.data_datatypes.split(',').sort().join() === 'BF16,FP16,FP32,FP64,INT32,INT64,UINT32,UINT64',
        JSON.stringify(r.res || r.err));
  r = await call(c, 'ModelMetadata', { name: 'ReduceSumSquare', version: '13' });
  check('ModelMetadata ReduceSumSquare version 13: data only',
        !r.err && r.res.inputs.map((t) => t.name).join() === 'data', JSON.stringify(r.res || r.err));
  r = await call(c, 'ModelMetadata', { name: 'ArgMax' });
  check('ModelMetadata ArgMax: versions 1 11 12 13, INT64 output',
        !r.err && JSON.stringify(r.res.versions) === '["1","11","12","13"]' && r.res.outputs[0].datatype === 'INT64',
        JSON.stringify(r.res || r.err));
  expectErr('ModelMetadata unknown model: NOT_FOUND', await call(c, 'ModelMetadata', { name: 'reducel2' }), grpc.status.NOT_FOUND, 'NOT_FOUND');

  // ---- health
  const h = healthClient();
  r = await call(h, 'Check', { service: '' });
  check('Health/Check: SERVING', !r.err && r.res.status === 'SERVING', JSON.stringify(r));
  r = await call(h, 'Check', { service: 'inference.GRPCInferenceService' });
  check('Health/Check of the service: SERVING', !r.err && r.res.status === 'SERVING', JSON.stringify(r));
  expectErr('Health/Check unknown service: NOT_FOUND', await call(h, 'Check', { service: 'nope' }), grpc.status.NOT_FOUND);

  // ---- every datatype, typed contents and raw contents
  // ReduceSumSquare [1,2,3] = 14 (FP32 0x41600000); ReduceL2 [3,4] = 5.
  const cases = [
    ['ReduceSumSquare', 'FP32', { fp32_contents: [1, 2, 3] }, f32(1, 2, 3), f32(14)],
    ['ReduceL2', 'FP64', { fp64_contents: [3, 4] }, f64(3, 4), f64(5)],
    ['ReduceSumSquare', 'INT32', { int_contents: [-2, 3, 0] }, i32(-2, 3, 0), i32(13)],
    ['ReduceSumSquare', 'INT64', { int64_contents: ['3000000000', '-1', '0'] }, i64(3000000000, -1, 0), i64(9000000000000000001n)],
    ['ReduceSumSquare', 'UINT32', { uint_contents: [1, 2, 65536] }, u32(1, 2, 65536), u32(5)],  // 2^32 overflows: below
    ['ReduceSum', 'UINT64', { uint64_contents: ['18446744073709551614', '1', '0'] }, u64(18446744073709551614n, 1, 0), u64(18446744073709551615n)],
    ['ReduceMax', 'INT8', { int_contents: [-5, 7, 3] }, i8(-5, 7, 3), i8(7)],
    ['ReduceMin', 'UINT8', { uint_contents: [9, 4, 200] }, u8(9, 4, 200), u8(4)],
    ['ArgMax', 'INT16', { int_contents: [-300, 1000, 2] }, i16(-300, 1000, 2), i64(1)],
    ['ArgMin', 'UINT16', { uint_contents: [60000, 5, 70] }, u16(60000, 5, 70), i64(1)],
    ['ReduceMax', 'BOOL', { bool_contents: [false, true, false] }, u8(0, 1, 0), u8(1)],
    ['ReduceMin', 'BOOL', { bool_contents: [true, true, false] }, u8(1, 1, 0), u8(0)],
  ];
  for (const [model, dt, typed, raw, want] of cases) {
    const outDt = model.startsWith('Arg') ? 'INT64' : dt;
    // UINT32 65536^2 = 2^32 does not fit: the "wrap" policy gives 1+4+0 = 5.
    const params = dt === 'UINT32' ? { overflow: P.str('wrap') } : {};
    expectOut(`${model} ${dt} typed contents`, await call(c, 'ModelInfer', infer(model, dt, [3 - (dt === 'FP64' ? 1 : 0)], typed, params)), outDt, [1], want);
    expectOut(`${model} ${dt} raw contents`, await call(c, 'ModelInfer', infer(model, dt, [3 - (dt === 'FP64' ? 1 : 0)], raw, params)), outDt, [1], want);
  }
  // FP16 and BF16 travel raw only: 1.0, 2.0 -> sum of squares 5.0.
  expectOut('ReduceSumSquare FP16 raw (0x3c00 0x4000 -> 0x4500)',
            await call(c, 'ModelInfer', infer('ReduceSumSquare', 'FP16', [2], u16(0x3c00, 0x4000))), 'FP16', [1], u16(0x4500));
  expectOut('ReduceSumSquare BF16 raw (0x3f80 0x4000 -> 0x40a0)',
            await call(c, 'ModelInfer', infer('ReduceSumSquare', 'BF16', [2], u16(0x3f80, 0x4000))), 'BF16', [1], u16(0x40a0));
  expectErr('FP16 typed contents: INVALID_ARGUMENT',
            await call(c, 'ModelInfer', infer('ReduceSumSquare', 'FP16', [2], { fp32_contents: [1, 2] })), grpc.status.INVALID_ARGUMENT, 'INVALID_FIELD');

  // ---- axes, keepdims, versions, ArgMax parameters, id
  // [[1,2,3],[4,5,6]] over axis 1: 1+4+9 = 14, 16+25+36 = 77.
  const m23 = { fp32_contents: [1, 2, 3, 4, 5, 6] };
  const axesReq = infer('ReduceSumSquare', 'FP32', [2, 3], m23, { keepdims: P.int(0) });
  axesReq.inputs.push({ name: 'axes', datatype: 'INT64', shape: [1], contents: { int64_contents: ['1'] } });
  expectOut('axes input (INT64) at version 18, keepdims 0', await call(c, 'ModelInfer', axesReq), 'FP32', [2], f32(14, 77));
  const rawAxes = infer('ReduceSumSquare', 'FP32', [2, 3], f32(1, 2, 3, 4, 5, 6));
  rawAxes.inputs.push({ name: 'axes', datatype: 'INT64', shape: [1] });
  rawAxes.raw_input_contents.push(i64(-2));
  expectOut('raw axes input -2, keepdims 1', await call(c, 'ModelInfer', rawAxes), 'FP32', [1, 3], f32(17, 29, 45));
  expectOut('parameters.axes "1" at version 13 (string_param)',
            await call(c, 'ModelInfer', infer('ReduceSumSquare', 'FP32', [2, 3], m23, { axes: P.str('1'), keepdims: P.bool(false) },
                                              { model_version: '13' })), 'FP32', [2], f32(14, 77));
  expectOut('parameters.axes 0 at version 11 (int64_param)',
            await call(c, 'ModelInfer', infer('ReduceSumSquare', 'FP32', [2, 3], m23, { axes: P.int(0) }, { model_version: '11' })),
            'FP32', [1, 3], f32(17, 29, 45));
  expectErr('parameters.axes at version 18: INVALID_ARGUMENT',
            await call(c, 'ModelInfer', infer('ReduceSumSquare', 'FP32', [2, 3], m23, { axes: P.str('1') })), grpc.status.INVALID_ARGUMENT, 'INVALID_FIELD');
  expectOut('noop_with_empty_axes true: elementwise squares',
            await call(c, 'ModelInfer', infer('ReduceSumSquare', 'FP32', [3], { fp32_contents: [1, 2, 3] }, { noop_with_empty_axes: P.bool(true) })),
            'FP32', [3], f32(1, 4, 9));
  // [[1,3,3],[2,2,0]] along axis 1: first maximum at 1 and 0, last at 2 and 1.
  const am = { fp32_contents: [1, 3, 3, 2, 2, 0] };
  expectOut('ArgMax axis 1', await call(c, 'ModelInfer', infer('ArgMax', 'FP32', [2, 3], am, { axis: P.int(1) })), 'INT64', [2, 1], i64(1, 0));
  expectOut('ArgMax axis 1 select_last_index', await call(c, 'ModelInfer', infer('ArgMax', 'FP32', [2, 3], am, { axis: P.int(1), select_last_index: P.bool(true), keepdims: P.int(0) })),
            'INT64', [2], i64(2, 1));
  expectErr('axis on ReduceL2: INVALID_ARGUMENT ATTRIBUTE_NOT_ALLOWED',
            await call(c, 'ModelInfer', infer('ReduceL2', 'FP32', [3], { fp32_contents: [1, 2, 3] }, { axis: P.int(0) })), grpc.status.INVALID_ARGUMENT, 'ATTRIBUTE_NOT_ALLOWED');
  r = await call(c, 'ModelInfer', infer('ReduceL2', 'FP32', [2], { fp32_contents: [3, 4] }, {}, { id: 'req-42', model_version: '13' }));
  check('id echoed, model_name and model_version answered',
        !r.err && r.res.id === 'req-42' && r.res.model_name === 'ReduceL2' && r.res.model_version === '13',
        JSON.stringify(r.res || r.err));
  r = await call(c, 'ModelInfer', infer('ReduceL2', 'FP32', [2], { fp32_contents: [3, 4] }));
  check('no version: the newest (18)', !r.err && r.res.model_version === '18', JSON.stringify(r.res || r.err));

  // ---- errors and their status codes
  expectErr('unknown model: NOT_FOUND', await call(c, 'ModelInfer', infer('Nope', 'FP32', [1], { fp32_contents: [1] })), grpc.status.NOT_FOUND, 'NOT_FOUND');
  expectErr('unknown version: NOT_FOUND', await call(c, 'ModelInfer', infer('ReduceL2', 'FP32', [1], { fp32_contents: [1] }, {}, { model_version: '12' })), grpc.status.NOT_FOUND, 'NOT_FOUND');
  expectErr('contents count != shape: INVALID_ARGUMENT', await call(c, 'ModelInfer', infer('ReduceL2', 'FP32', [4], { fp32_contents: [1, 2] })), grpc.status.INVALID_ARGUMENT, 'SHAPE_MISMATCH');
  expectErr('raw bytes != shape: INVALID_ARGUMENT', await call(c, 'ModelInfer', infer('ReduceL2', 'FP32', [4], f32(1, 2))), grpc.status.INVALID_ARGUMENT, 'SHAPE_MISMATCH');
  expectErr('wrong typed field: INVALID_ARGUMENT', await call(c, 'ModelInfer', infer('ReduceL2', 'FP32', [2], { fp64_contents: [1, 2] })), grpc.status.INVALID_ARGUMENT, 'INVALID_FIELD');
  expectErr('INT8 element out of range: INVALID_ARGUMENT', await call(c, 'ModelInfer', infer('ReduceMax', 'INT8', [1], { int_contents: [128] })), grpc.status.INVALID_ARGUMENT, 'INVALID_ELEMENT');
  expectErr('axis out of range: INVALID_ARGUMENT', await call(c, 'ModelInfer', infer('ArgMax', 'FP32', [3], { fp32_contents: [1, 2, 3] }, { axis: P.int(3) })), grpc.status.INVALID_ARGUMENT, 'AXIS_OUT_OF_RANGE');
  expectErr('integer overflow (422 class): INVALID_ARGUMENT', await call(c, 'ModelInfer', infer('ReduceSumSquare', 'INT32', [1], { int_contents: [65536] })), grpc.status.INVALID_ARGUMENT, 'INTEGER_OVERFLOW');
  expectErr('unknown parameter: INVALID_ARGUMENT', await call(c, 'ModelInfer', infer('ReduceL2', 'FP32', [1], { fp32_contents: [1] }, { keepdim: P.int(1) })), grpc.status.INVALID_ARGUMENT, 'UNKNOWN_FIELD');
  expectErr('unknown datatype: INVALID_ARGUMENT', await call(c, 'ModelInfer', infer('ReduceL2', 'FP8', [1], u8(1))), grpc.status.INVALID_ARGUMENT, 'UNSUPPORTED_DTYPE');
  expectErr('BF16 at version 11: INVALID_ARGUMENT', await call(c, 'ModelInfer', infer('ReduceL2', 'BF16', [1], u16(0x3f80), {}, { model_version: '11' })), grpc.status.INVALID_ARGUMENT, 'DTYPE_NOT_IN_VERSION');
  expectErr('missing input data: INVALID_ARGUMENT', await call(c, 'ModelInfer', { model_name: 'ReduceL2', inputs: [] }), grpc.status.INVALID_ARGUMENT, 'MISSING_FIELD');
  expectErr('unknown output: INVALID_ARGUMENT', await call(c, 'ModelInfer', Object.assign(infer('ReduceL2', 'FP32', [1], { fp32_contents: [1] }), { outputs: [{ name: 'out' }] })), grpc.status.INVALID_ARGUMENT, 'INVALID_FIELD');
  const big = Buffer.alloc(80 * MiB);
  expectErr('message above --max-body: RESOURCE_EXHAUSTED', await call(c, 'ModelInfer', infer('ReduceL2', 'FP32', [big.length / 4], big)), grpc.status.RESOURCE_EXHAUSTED);
  r = await new Promise((resolve) => {
    c.makeUnaryRequest('/inference.GRPCInferenceService/ModelStreamInfer', (x) => x, (x) => x, Buffer.alloc(0),
                       (err, res) => resolve({ err, res }));
  });
  expectErr('unknown method: UNIMPLEMENTED', r, grpc.status.UNIMPLEMENTED);

  // ---- a 32 MiB tensor: 8388608 FP32 ones; the sum of squares 2^23 is exact.
  const ones = Buffer.alloc(32 * MiB);
  for (let i = 0; i < ones.length; i += 4) ones.writeFloatLE(1, i);
  expectOut('32 MiB FP32 tensor (raw): ReduceSumSquare = 2^23', await call(c, 'ModelInfer', infer('ReduceSumSquare', 'FP32', [8388608], ones)), 'FP32', [1], f32(8388608));
  expectOut('32 MiB FP32 tensor [2048,4096] axis 1: 2048 x 4096.0',
            await call(c, 'ModelInfer', infer('ReduceSumSquare', 'FP32', [2048, 4096], ones, { axes: P.int(1), keepdims: P.int(0) }, { model_version: '13' })),
            'FP32', [2048], f32(...new Array(2048).fill(4096)));

  // ---- bit-identical to HTTP /v2 (binary extension) for the same tensors
  const rnd = rng(12345);
  const vals = Array.from({ length: 4 * 5 * 6 }, () => (rnd() - 0.5) * 1000);
  const same = [
    ['ReduceL2', 'FP32', f32(...vals), { axes: '[0,2]' }],
    ['ReduceLogSumExp', 'FP64', f64(...vals.map((v) => v / 100)), { axes: '[1]' }],
    ['ReduceMean', 'FP16', u16(...vals.map((_, i) => 0x3c00 + (i % 700))), { axes: '[2]' }],
    ['ReduceSumSquare', 'BF16', u16(...vals.map((_, i) => 0x3f80 + (i % 300))), {}],
    ['ReduceProd', 'INT64', i64(...vals.map((v) => Math.round(v / 100))), { axes: '[1,2]', overflow: 'wrap' }],
    ['ArgMin', 'FP32', f32(...vals), { axis: 1 }],
  ];
  for (const [model, dt, blob, p] of same) {
    const gp = {}, hp = {};
    if (p.axes) { gp.axes = P.str(p.axes); hp.axes = JSON.parse(p.axes); }
    if (p.axis !== undefined) { gp.axis = P.int(p.axis); hp.axis = p.axis; }
    if (p.overflow) { gp.overflow = P.str(p.overflow); hp.overflow = p.overflow; }
    const ver = model === 'ArgMin' ? '13' : model === 'ReduceSumSquare' ? '13' : '13';
    const g = await call(c, 'ModelInfer', infer(model, dt, [4, 5, 6], blob, gp, { model_version: ver }));
    let hr;
    try { hr = await httpInfer(`${model}/versions/${ver}`, dt, [4, 5, 6], blob, hp); } catch (e) { hr = { status: String(e) }; }
    if (g.err) bad(`${model} ${dt}: gRPC = HTTP`, `gRPC status ${g.err.code}: ${g.err.details}`);
    else if (hr.status !== 200) bad(`${model} ${dt}: gRPC = HTTP`, `HTTP status ${hr.status}`);
    else check(`${model} ${dt}: gRPC raw_output_contents = HTTP /v2 binary output, shape and datatype`,
               g.res.raw_output_contents[0].equals(hr.blob) &&
               JSON.stringify(g.res.outputs[0].shape.map(Number)) === JSON.stringify(hr.json.outputs[0].shape) &&
               g.res.outputs[0].datatype === hr.json.outputs[0].datatype,
               `gRPC ${g.res.raw_output_contents[0].toString('hex').slice(0, 80)} vs HTTP ${hr.blob.toString('hex').slice(0, 80)}`);
  }
}

async function authMode() {
  const key = extra;
  const c = client();
  const md = (v) => { const m = new grpc.Metadata(); if (v) m.set('authorization', v); return m; };
  const req = infer('ReduceL2', 'FP32', [2], { fp32_contents: [3, 4] });
  expectErr('no key: UNAUTHENTICATED', await call(c, 'ModelInfer', req), grpc.status.UNAUTHENTICATED, 'UNAUTHORIZED');
  expectErr('wrong key: UNAUTHENTICATED', await call(c, 'ModelInfer', req, md('Bearer nope')), grpc.status.UNAUTHENTICATED, 'UNAUTHORIZED');
  expectErr('metadata RPC without key: UNAUTHENTICATED', await call(c, 'ServerMetadata', {}), grpc.status.UNAUTHENTICATED, 'UNAUTHORIZED');
  expectOut('Bearer KEY: ModelInfer answers', await call(c, 'ModelInfer', req, md(`Bearer ${key}`)), 'FP32', [1], f32(5));
  const r = await call(healthClient(), 'Check', { service: '' });
  check('Health/Check needs no key', !r.err && r.res.status === 'SERVING', JSON.stringify(r));
}

async function tlsMode() {
  const fs = require('fs');
  const creds = grpc.credentials.createSsl(fs.readFileSync(extra));
  const c = client(creds);
  let r = await call(c, 'ServerLive', {});
  check('TLS: ServerLive over TLS', !r.err && r.res.live === true, JSON.stringify(r.err || r.res));
  expectOut('TLS: ModelInfer over TLS', await call(c, 'ModelInfer', infer('ReduceL2', 'FP32', [2], { fp32_contents: [3, 4] })), 'FP32', [1], f32(5));
  r = await call(healthClient(creds), 'Check', {});
  check('TLS: Health/Check', !r.err && r.res.status === 'SERVING', JSON.stringify(r.err || r.res));
  r = await call(client(), 'ServerLive', {});
  check('TLS: a plaintext client is refused', !!r.err && r.err.code === grpc.status.UNAVAILABLE, JSON.stringify(r.err || r.res));
}

// tlsold: after a reload, a client that trusts only the old certificate
// is refused.
async function tlsOldMode() {
  const fs = require('fs');
  const r = await call(client(grpc.credentials.createSsl(fs.readFileSync(extra))), 'ServerLive', {});
  check('TLS reload: a client trusting only the old certificate is refused', !!r.err && r.err.code === grpc.status.UNAVAILABLE,
        JSON.stringify(r.err || r.res));
}

// drain: a ModelInfer call is opened (headers sent) and held; the test
// sends SIGTERM; then readiness, health and new calls are checked, and the
// held call is completed: it must be answered.
async function drainMode() {
  const c = client();
  const held = await new Promise((resolve) => {
    const svc = inference.GRPCInferenceService.service.ModelInfer;
    let done;
    const p = new Promise((res) => { done = res; });
    const stream = c.makeClientStreamRequest(svc.path, svc.requestSerialize, svc.responseDeserialize,
                                             new grpc.Metadata(), {}, (err, res) => done({ err, res }));
    resolve({ stream, p });
  });
  // Make sure the call reached the server before the signal.
  let r = await call(c, 'ServerLive', {});
  console.log('held');
  await new Promise((res) => process.stdin.once('data', res));
  r = await call(c, 'ServerReady', {});
  check('draining: ServerReady false', !r.err && r.res.ready === false, JSON.stringify(r.err || r.res));
  r = await call(healthClient(), 'Check', {});
  check('draining: Health/Check NOT_SERVING', !r.err && r.res.status === 'NOT_SERVING', JSON.stringify(r.err || r.res));
  expectErr('draining: a new ModelInfer is UNAVAILABLE', await call(c, 'ModelInfer', infer('ReduceL2', 'FP32', [2], { fp32_contents: [3, 4] })), grpc.status.UNAVAILABLE, 'DRAINING');
  held.stream.write(infer('ReduceL2', 'FP32', [2], { fp32_contents: [6, 8] }));
  held.stream.end();
  expectOut('draining: the call in flight is answered', await held.p, 'FP32', [1], f32(10));
}

// overload: --max-pending 1 and many concurrent large calls: the extra
// ones get RESOURCE_EXHAUSTED OVERLOADED, the admitted ones their result.
async function overloadMode() {
  const c = client();
  const n = 1 << 22, ones = Buffer.alloc(4 * n);
  for (let i = 0; i < ones.length; i += 4) ones.writeFloatLE(1, i);
  const rs = await Promise.all(Array.from({ length: 12 }, () => call(c, 'ModelInfer', infer('ReduceSumSquare', 'FP32', [n], ones))));
  const okN = rs.filter((r) => !r.err && r.res.raw_output_contents[0].equals(f32(n))).length;
  const over = rs.filter((r) => r.err && r.err.code === grpc.status.RESOURCE_EXHAUSTED && String(r.err.details).startsWith('OVERLOADED: ')).length;
  check(`--max-pending 1: ${okN} answered, ${over} RESOURCE_EXHAUSTED OVERLOADED`, okN >= 1 && over >= 1 && okN + over === 12,
        rs.map((r) => (r.err ? `${r.err.code} ${r.err.details}` : 'ok')).join('; '));
}

const modes = { main, auth: authMode, tls: tlsMode, tlsold: tlsOldMode, drain: drainMode, overload: overloadMode };
modes[mode]().then(() => process.exit(failed ? 1 : 0), (e) => { bad('client', e.stack); process.exit(1); });
