// table.mjs - the side-by-side table of `make bench` (bench/ops.sh): joins the
// JSON lines of bench/bench (libreduce) and bench/ort.mjs (ONNX Runtime) on
// operator, case and thread count.
//
//   node bench/table.mjs [--json] REDUCED.jsonl ORT.jsonl
//
// Text: the probe lines, then one row per float32 operator x case x threads
// with libreduce's GB/s, % of the probe and target, ONNX Runtime's GB/s, the
// ratio and whether libreduce is faster; the other dtypes (no ONNX Runtime
// figure) follow, then a summary.  --json: one object per line, the compare
// rows and a summary ({"compare":true,...}, {"compare_summary":true,...}).
import { readFileSync } from 'node:fs';
import process from 'node:process';

const args = process.argv.slice(2);
const json = args[0] === '--json';
if (json) args.shift();
if (args.length !== 2) {
  console.error('usage: node bench/table.mjs [--json] REDUCED.jsonl ORT.jsonl');
  process.exit(2);
}
const lines = (f) => readFileSync(f, 'utf8').split('\n').filter((l) => l.startsWith('{'))
  .map((l) => JSON.parse(l));
const reduced = lines(args[0]);
const ort = lines(args[1]);
const key = (o) => `${o.op}/${o.case}/${o.threads}`;
const ortBy = new Map(ort.filter((o) => o.engine === 'onnxruntime').map((o) => [key(o), o]));
const ortInfo = ort.find((o) => o.ort_version);

const rows = reduced.filter((o) => o.op && o.dtype === 'float32').map((o) => {
  const x = ortBy.get(key(o));
  return { ...o, ort_gbs: x ? x.gbs : null, ratio: x ? o.gbs / x.gbs : null,
    faster: x ? o.gbs > x.gbs : null };
});
const others = reduced.filter((o) => o.op && o.dtype !== 'float32');
const probes = reduced.filter((o) => o.probe);
const withTarget = rows.filter((r) => r.target_pct);
const summary = {
  compare_summary: true,
  probe_isa: probes[0]?.isa ?? null,
  ort_version: ortInfo?.ort_version ?? null,
  rows: rows.length,
  targets_met: withTarget.filter((r) => r.target_met).length,
  targets: withTarget.length,
  other_dtype_targets: others.filter((r) => r.target_pct).length,
  other_dtype_targets_met: others.filter((r) => r.target_pct && r.target_met).length,
  faster: rows.filter((r) => r.faster).length,
  compared: rows.filter((r) => r.faster !== null).length,
};

if (json) {
  for (const r of rows) {
    console.log(JSON.stringify({ compare: true, op: r.op, case: r.case, dtype: r.dtype,
      threads: r.threads, gbs: r.gbs, pct_probe: r.pct_probe, target_pct: r.target_pct,
      target_met: r.target_met, ort_gbs: r.ort_gbs,
      ratio: r.ratio === null ? null : Number(r.ratio.toFixed(2)), faster: r.faster }));
  }
  console.log(JSON.stringify(summary));
  process.exit(0);
}

const fmt = (v, w, d = 2) => (v === null || v === undefined ? '-' : v.toFixed(d)).padStart(w);
console.log(`# side by side: libreduce (bench/bench) and onnxruntime-node ${summary.ort_version ?? '(not run)'} `
  + '(CPU EP, intraOpNumThreads = threads), same float32 inputs, medians');
for (const p of probes) {
  console.log(`# read-bandwidth probe: ${p.isa}, ${p.accumulators} accumulators, run alternately `
    + "with each figure's runs (%probe: that figure's probe)");
}
console.log(`${'op'.padEnd(15)} case thr ${'GB/s'.padStart(7)} ${'%probe'.padStart(6)} ${'target'.padEnd(11)} `
  + `${'ORT GB/s'.padStart(8)} ${'ratio'.padStart(6)} faster`);
for (const r of rows) {
  const tgt = r.target_pct ? `${r.target_pct}% ${r.target_met ? 'met' : 'NOT met'}` : '-';
  const faster = r.faster === null ? '-' : r.faster ? 'yes' : 'NO';
  console.log(`${r.op.padEnd(15)} ${r.case.padEnd(4)} ${String(r.threads).padStart(3)} `
    + `${fmt(r.gbs, 7)} ${fmt(r.pct_probe, 5, 0)}% ${tgt.padEnd(11)} ${fmt(r.ort_gbs, 8)} `
    + `${fmt(r.ratio, 6)} ${faster}`);
}
if (others.length) {
  console.log('# other dtypes (libreduce only)');
  for (const r of others) {
    const tgt = r.target_pct ? `${r.target_pct}% ${r.target_met ? 'met' : 'NOT met'}` : '-';
    console.log(`${r.op.padEnd(15)} ${r.case.padEnd(4)} ${String(r.threads).padStart(3)} `
      + `${fmt(r.gbs, 7)} ${fmt(r.pct_probe, 5, 0)}% ${r.dtype.padEnd(9)} ${tgt}`);
  }
}
const othersTarget = others.filter((r) => r.target_pct);
const othersNotMet = othersTarget.filter((r) => !r.target_met);
if (othersTarget.length) {
  console.log(`other dtypes, targets met: ${othersTarget.length - othersNotMet.length} of ${othersTarget.length}`);
}
const notMet = withTarget.filter((r) => !r.target_met).map((r) => `${r.op}/${r.case}/${r.threads}`);
const slower = rows.filter((r) => r.faster === false).map((r) => `${r.op}/${r.case}/${r.threads}`);
console.log(`targets met: ${summary.targets_met} of ${summary.targets}`
  + (notMet.length ? ` (NOT met: ${notMet.join(' ')})` : ''));
console.log(`faster than ONNX Runtime: ${summary.faster} of ${summary.compared}`
  + (slower.length ? ` (NOT faster: ${slower.join(' ')})` : ''));
