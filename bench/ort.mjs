// ort.mjs - ONNX Runtime side of `make bench`: the same operators and cases
// as bench/bench, run by onnxruntime-node (CPU execution provider) on models
// this script builds itself, so the two are measured in the same run.
//
//   node bench/ort.mjs [--json] [--runs N] [--threads LIST] [--op NAME] [--case NAME]
//
// onnxruntime-node is installed, pinned, into the build tree by bench/ops.sh
// (npm --ignore-scripts: its install script only fetches GPU providers).
// Each model is one node whose data input is a graph input (so ORT runs its
// kernel instead of folding constants) and, at input-form versions, whose
// axes are an initializer.  The input is float32 with the same values as
// bench/bench (the same xorshift64* stream, uniform in [-10, 10));
// ReduceLogSum and ReduceProd get the same positive values near 1 so their
// results stay finite.  ArgMax/ArgMin reduce the last reduced axis of the
// case (A: axis 0), as bench/bench does.  Reported: median seconds of --runs
// runs (3 once they took 2 s) after a warm-up, and the input read rate in
// GB/s, per intra-op thread count (--threads 1,2: intraOpNumThreads 1 and
// 2).  --json: one object per line, first {"ort_version":...}, then one per
// op x case x threads.
import { createRequire } from 'node:module';
import process from 'node:process';

const require = createRequire(import.meta.url);
const ortPath = process.env.ORT_NODE_MODULES
  ? `${process.env.ORT_NODE_MODULES}/onnxruntime-node`
  : 'onnxruntime-node';
const ort = require(ortPath);

// ---------------------------------------------------------------- protobuf
// Just the wire types ONNX models need: varint (0) and length-delimited (2).
function varint(n) {
  const out = [];
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n;
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) b |= 0x80;
    out.push(b);
  } while (v !== 0n);
  return out;
}
const fInt = (field, n) => [...varint((field << 3) | 0), ...varint(n)];
function fBytes(field, bytes) {
  return [...varint((field << 3) | 2), ...varint(bytes.length), ...bytes];
}
const fStr = (field, s) => fBytes(field, [...Buffer.from(s, 'utf8')]);
const fMsg = fBytes;

// onnx.proto field numbers.
const ELEM_FLOAT = 1;
const ELEM_INT64 = 7;
function valueInfo(name, elemType, dims) {
  const shape = dims.flatMap((d) => fMsg(1, fInt(1, d)));      // Dimension.dim_value
  const tensor = [...fInt(1, elemType), ...fMsg(2, shape)];    // TypeProto.Tensor
  return [...fStr(1, name), ...fMsg(2, fMsg(1, tensor))];      // ValueInfoProto
}
function attrInt(name, v) {
  return [...fStr(1, name), ...fInt(3, v), ...fInt(20, 2)];   // type INT
}
function attrInts(name, vs) {
  return [...fStr(1, name), ...vs.flatMap((v) => fInt(8, v)), ...fInt(20, 7)];
}
function int64Tensor(name, values) {
  const packed = values.flatMap((v) => varint(v));
  return [...fInt(1, values.length), ...fInt(2, ELEM_INT64),
    ...fBytes(7, packed), ...fStr(8, name)];
}

// Versions at which each operator takes axes as an input.
const AXES_INPUT = { ReduceSum: 13 };
const ARG = new Set(['ArgMax', 'ArgMin']);

function buildModel(op, opset, dims, axes, keepdims) {
  const inputs = ['x'];
  const attrs = [attrInt('keepdims', keepdims)];
  const inits = [];
  if (ARG.has(op)) {
    attrs.push(attrInt('axis', axes[0]));
  } else if (opset >= (AXES_INPUT[op] ?? 18)) {
    if (axes.length) {
      inputs.push('axes');
      inits.push(int64Tensor('axes', axes));
    }
  } else if (axes.length) {
    attrs.push(attrInts('axes', axes));
  }
  const outDims = [];
  const red = new Set(axes.length ? axes : dims.map((_, i) => i));
  dims.forEach((d, i) => {
    if (!red.has(i)) outDims.push(d);
    else if (keepdims) outDims.push(1);
  });
  const node = [...inputs.flatMap((n) => fStr(1, n)), ...fStr(2, 'y'),
    ...fStr(3, 'n0'), ...fStr(4, op), ...attrs.flatMap((a) => fMsg(5, a))];
  const graph = [...fMsg(1, node), ...fStr(2, 'g'),
    ...inits.flatMap((t) => fMsg(5, t)),
    ...fMsg(11, valueInfo('x', ELEM_FLOAT, dims)),
    ...fMsg(12, valueInfo('y', ARG.has(op) ? ELEM_INT64 : ELEM_FLOAT, outDims))];
  const model = [...fInt(1, 8), ...fStr(2, 'reduced-bench'),
    ...fMsg(7, graph), ...fMsg(8, [...fStr(1, ''), ...fInt(2, opset)])];
  return Uint8Array.from(model);
}

// ---------------------------------------------------------------- cases
// The float32 cases of bench/bench (256 MiB each).
const CASES = [
  { name: 'A', dims: [67108864], axes: [] },
  { name: 'B', dims: [8192, 8192], axes: [1] },
  { name: 'C', dims: [8192, 8192], axes: [0] },
  { name: 'D', dims: [256, 512, 512], axes: [1] },
  { name: 'E', dims: [512, 512, 256], axes: [0, 2] },
  { name: 'F', dims: [4194304, 16], axes: [1] },
];
const OPS = ['ReduceL2', 'ReduceSumSquare', 'ReduceSum', 'ReduceMean',
  'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceL1', 'ReduceLogSum',
  'ReduceLogSumExp', 'ArgMax', 'ArgMin'];
// ArgMax/ArgMin reduce one axis: the last reduced axis of the case, or 0
// for the full reduction of A.
const argAxes = (c) => [c.axes.length ? c.axes[c.axes.length - 1] : 0];

// Both data sets in one pass of the generator (BigInt is slow): `mixed` in
// [-10, 10) for most operators, `positive` near 1 for ReduceProd and
// ReduceLogSum; bench/bench computes the same doubles and rounds them to
// float32 the same way (round to nearest), so the inputs are bit-identical.
function fill(n) {
  const mixed = new Float32Array(n);
  const positive = new Float32Array(n);
  let s = 0x9e3779b97f4a7c15n;
  const mask = (1n << 64n) - 1n;
  for (let i = 0; i < n; i++) {
    s ^= s >> 12n; s ^= (s << 25n) & mask; s ^= s >> 27n;
    const r = Number(((s * 0x2545f4914f6cdd1dn) & mask) >> 11n) / 2 ** 53;
    mixed[i] = (2 * r - 1) * 10;
    positive[i] = 1 + (r - 0.5) * 1e-6;
  }
  return { mixed, positive };
}

function median(v) {
  const s = [...v].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// ---------------------------------------------------------------- main
const args = process.argv.slice(2);
const opt = { json: false, runs: 5, threads: [1, 2], op: null, case: null };
const usage = 'usage: node bench/ort.mjs [--json] [--runs N] [--threads 1,2] [--op NAME] [--case NAME]';
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--json') opt.json = true;
  else if (args[i] === '--runs') opt.runs = Number(args[++i]);
  else if (args[i] === '--threads') opt.threads = args[++i].split(',').map(Number);
  else if (args[i] === '--op') opt.op = args[++i];
  else if (args[i] === '--case') opt.case = args[++i];
  else {
    console.error(usage);
    process.exit(2);
  }
}
if (!(opt.runs >= 1 && opt.runs <= 1000) || !opt.threads.every((t) => t >= 1 && t <= 64)) {
  console.error(usage);
  process.exit(2);
}
if (opt.op && !OPS.includes(opt.op) && !OPS.includes(`Reduce${opt.op}`)) {
  console.error(`ort.mjs: --op: unknown operator '${opt.op}'`);
  process.exit(2);
}

const N = 67108864;
const data = fill(N);
const version = ort.env?.versions?.common ?? '?';
if (opt.json) {
  console.log(JSON.stringify({ ort_version: version, runs: opt.runs, threads: opt.threads }));
} else {
  console.log(`onnxruntime-node ${version}, CPU EP`);
  console.log(`${'op'.padEnd(16)} case threads ${'seconds'.padStart(9)} ${'GB/s'.padStart(7)}`);
}
for (const op of OPS) {
  if (opt.op && op !== opt.op && op !== `Reduce${opt.op}`) continue;
  const positive = op === 'ReduceProd' || op === 'ReduceLogSum';
  const values = positive ? data.positive : data.mixed;
  for (const c of CASES) {
    if (opt.case && c.name !== opt.case) continue;
    const axes = ARG.has(op) ? argAxes(c) : c.axes;
    const model = buildModel(op, 18, c.dims, axes, 1);
    for (const t of opt.threads) {
      const sess = await ort.InferenceSession.create(model, {
        intraOpNumThreads: t, interOpNumThreads: 1, executionProviders: ['cpu'],
      });
      const feed = { x: new ort.Tensor('float32', values, c.dims) };
      await sess.run(feed);                     // warm-up
      // As bench/bench: a slow figure stops after 3 runs once they took 2 s.
      const times = [];
      let spent = 0;
      while (times.length < opt.runs && !(times.length >= 3 && spent >= 2)) {
        const t0 = process.hrtime.bigint();
        await sess.run(feed);
        times.push(Number(process.hrtime.bigint() - t0) / 1e9);
        spent += times[times.length - 1];
      }
      await sess.release();
      const sec = median(times);
      const gbs = (N * 4) / sec / 1e9;
      if (opt.json) {
        console.log(JSON.stringify({ engine: 'onnxruntime', op, case: c.name,
          dtype: 'float32', axes: ARG.has(op) ? `axis ${axes[0]}` : JSON.stringify(axes),
          threads: t, median_ms: Number((sec * 1e3).toFixed(3)),
          gbs: Number(gbs.toFixed(2)), runs: times.length }));
      } else {
        console.log(`${op.padEnd(16)} ${c.name.padEnd(4)} ${String(t).padStart(7)} ${sec.toFixed(4).padStart(9)} ${gbs.toFixed(2).padStart(7)}`);
      }
    }
  }
}
