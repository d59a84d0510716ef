// validate-k8s.mjs - offline checks of the Kubernetes manifests.
//
//   node deploy/validate-k8s.mjs --modules DIR deploy/k8s
//
// DIR holds node_modules/ with kubernetes-models and yaml (check-deploy.sh
// installs them there). Each document is checked against the OpenAPI schema
// of its kind (kubernetes-models); the kustomization's resources must exist;
// then the rules this service relies on are checked across documents
// (probes, security context, drain timing, selectors). Prints one line per
// check and `N passed, N failed`; exits 1 if anything failed.
import { createRequire } from 'node:module';
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { join, dirname, basename, resolve } from 'node:path';

const args = process.argv.slice(2);
let modules = process.env.DEPLOY_NODE_DIR || '.';
const inputs = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--modules') modules = args[++i];
  else inputs.push(args[i]);
}
if (inputs.length === 0) {
  console.error('usage: validate-k8s.mjs [--modules DIR] FILE|DIR...');
  process.exit(2);
}
// Resolve packages from DIR/node_modules, not from this script's directory.
const require = createRequire(join(resolve(modules), 'resolver.js'));
const YAML = require('yaml');

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${!ok && detail ? `: ${detail}` : ''}`);
}

const files = [];
for (const p of inputs) {
  if (statSync(p).isDirectory()) {
    for (const f of readdirSync(p).sort()) if (/\.ya?ml$/.test(f)) files.push(join(p, f));
  } else files.push(p);
}

// Every document of every file, parsed strictly (duplicate keys are errors).
const docs = [];
for (const file of files) {
  const parsed = YAML.parseAllDocuments(readFileSync(file, 'utf8'), { uniqueKeys: true });
  for (const d of parsed) {
    const errs = d.errors.map((e) => e.message);
    check(`${file}: YAML parses`, errs.length === 0, errs.join('; '));
    if (errs.length === 0 && d.contents !== null) docs.push({ file, obj: d.toJS() });
  }
}

function modelOf(apiVersion, kind) {
  // "apps/v1" -> kubernetes-models/apps/v1, "v1" -> kubernetes-models/v1
  try {
    const mod = require(`kubernetes-models/${apiVersion}`);
    return mod[kind];
  } catch {
    return undefined;
  }
}

const byKind = {};
for (const { file, obj } of docs) {
  const id = `${file}: ${obj.kind}/${obj.metadata?.name ?? '(kustomization)'}`;
  (byKind[obj.kind] ??= []).push(obj);
  if (obj.kind === 'Kustomization') {
    check(`${id} apiVersion`, obj.apiVersion === 'kustomize.config.k8s.io/v1beta1', obj.apiVersion);
    const res = obj.resources ?? [];
    check(`${id} lists resources`, res.length > 0);
    for (const r of res) check(`${id} resource ${r} exists`, existsSync(join(dirname(file), r)));
    const listed = new Set(res);
    for (const f of files) {
      const base = basename(f);
      if (dirname(f) === dirname(file) && base !== basename(file))
        check(`${id} includes ${base}`, listed.has(base));
    }
    continue;
  }
  const Model = modelOf(obj.apiVersion, obj.kind);
  check(`${id} known kind ${obj.apiVersion}`, Model !== undefined);
  if (!Model) continue;
  let err = '';
  try {
    new Model(obj).validate();
  } catch (e) {
    err = e.message;
  }
  check(`${id} schema`, err === '', err);
}

// Rules for this service, beyond the schema.
const dep = (byKind.Deployment ?? [])[0];
if (dep) {
  const pod = dep.spec.template.spec;
  const c = pod.containers[0];
  const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
  const labels = dep.spec.template.metadata.labels ?? {};
  const matches = (sel) =>
    sel && Object.keys(sel).length > 0 && Object.entries(sel).every(([k, v]) => labels[k] === v);
  const portOk = (p) => p === 'http' || p === 8080;
  check('deployment: replicas >= 2', dep.spec.replicas >= 2, `replicas ${dep.spec.replicas}`);
  check('deployment: selector matches pod labels', matches(dep.spec.selector.matchLabels));
  check('deployment: liveness probe GET /healthz',
    c.livenessProbe?.httpGet?.path === '/healthz' && portOk(c.livenessProbe.httpGet.port));
  check('deployment: readiness probe GET /readyz',
    c.readinessProbe?.httpGet?.path === '/readyz' && portOk(c.readinessProbe.httpGet.port));
  for (const r of ['requests', 'limits'])
    for (const k of ['cpu', 'memory'])
      check(`deployment: resources.${r}.${k} set`, c.resources?.[r]?.[k] !== undefined);
  const sc = c.securityContext ?? {};
  const psc = pod.securityContext ?? {};
  check('deployment: runAsNonRoot', (sc.runAsNonRoot ?? psc.runAsNonRoot) === true);
  check('deployment: readOnlyRootFilesystem', sc.readOnlyRootFilesystem === true);
  check('deployment: allowPrivilegeEscalation false', sc.allowPrivilegeEscalation === false);
  check('deployment: capabilities drop ALL', (sc.capabilities?.drop ?? []).includes('ALL'));
  check('deployment: seccomp RuntimeDefault',
    (sc.seccompProfile ?? psc.seccompProfile)?.type === 'RuntimeDefault');
  check('deployment: REDUCED_LISTEN on the container port',
    env.REDUCED_LISTEN === `0.0.0.0:${c.ports?.[0]?.containerPort}`);
  const gp = (c.ports ?? []).find((p) => p.name === 'grpc');
  check('deployment: a container port named grpc (8081)', gp?.containerPort === 8081 && gp?.protocol === 'TCP',
    JSON.stringify(gp));
  check('deployment: REDUCED_GRPC_LISTEN on the grpc container port',
    env.REDUCED_GRPC_LISTEN === `0.0.0.0:${gp?.containerPort}`, env.REDUCED_GRPC_LISTEN);
  check('deployment: every env var is REDUCED_*', Object.keys(env).every((k) => k.startsWith('REDUCED_')));
  // Admitted requests plus the buffers kept for reuse (the daemon's
  // defaults when unset) plus 64 MiB for the idle daemon fit the limit.
  const mib = (q) => {
    const m = /^(\d+)(Mi|Gi)$/.exec(String(q ?? ''));
    return m ? Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1) : NaN;
  };
  const held = (Number(env.REDUCED_MAX_INFLIGHT_BYTES ?? 1073741824) +
    Number(env.REDUCED_BUFFER_CACHE_BYTES ?? 67108864)) / 1048576;
  const memLimit = mib(c.resources?.limits?.memory);
  check('deployment: REDUCED_MAX_INFLIGHT_BYTES + REDUCED_BUFFER_CACHE_BYTES + 64 MiB within the memory limit',
    held + 64 <= memLimit, `${held} MiB + 64 MiB > ${memLimit} MiB`);
  // The kubelet's clock for terminationGracePeriodSeconds starts with preStop.
  const cmd = c.lifecycle?.preStop?.exec?.command ?? [];
  const sleep = /sleep$/.test(cmd[0] ?? '') ? Number(cmd[1]) : c.lifecycle?.preStop?.sleep?.seconds;
  const grace = Number(env.REDUCED_GRACE ?? 10);
  check('deployment: preStop sleep', Number.isFinite(sleep) && sleep > 0, JSON.stringify(cmd));
  check('deployment: terminationGracePeriodSeconds > preStop + REDUCED_GRACE',
    pod.terminationGracePeriodSeconds > sleep + grace,
    `${pod.terminationGracePeriodSeconds} <= ${sleep} + ${grace}`);
  for (const svc of byKind.Service ?? []) {
    check(`service ${svc.metadata.name}: selector matches pod labels`, matches(svc.spec.selector));
    check(`service ${svc.metadata.name}: targets a container port`,
      svc.spec.ports.every((p) => (c.ports ?? []).some((cp) => cp.name === p.targetPort || cp.containerPort === p.targetPort)));
  }
  check('service: some Service carries the grpc port',
    (byKind.Service ?? []).some((svc) => svc.spec.ports.some((p) => p.targetPort === 'grpc' || p.targetPort === gp?.containerPort)));
  for (const pdb of byKind.PodDisruptionBudget ?? [])
    check(`pdb ${pdb.metadata.name}: selector matches pod labels`, matches(pdb.spec.selector?.matchLabels));
  for (const hpa of byKind.HorizontalPodAutoscaler ?? []) {
    const t = hpa.spec.scaleTargetRef;
    check(`hpa ${hpa.metadata.name}: targets the Deployment`, t.kind === 'Deployment' && t.name === dep.metadata.name);
    check(`hpa ${hpa.metadata.name}: minReplicas >= 2`, hpa.spec.minReplicas >= 2);
    check(`hpa ${hpa.metadata.name}: scales on CPU`,
      (hpa.spec.metrics ?? []).some((m) => m.type === 'Resource' && m.resource?.name === 'cpu'));
  }
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
