// kube-play.mjs - turn the real manifests into something `podman kube play`
// can run on one machine, printed as multi-document YAML on stdout.
//
//   node deploy/kube-play.mjs --modules DIR --image IMG --port PORT deploy/k8s
//
// From deploy/k8s/deployment.yaml and service.yaml, changing only what a
// single host without a registry or a cluster network needs: the locally
// built image with imagePullPolicy Never, one replica (two would both claim
// the host port), and a hostPort on 127.0.0.1 for the container port.
// Everything else (env, probes, security context, resources) is kept.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const opt = { modules: process.env.DEPLOY_NODE_DIR || '.' };
const rest = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i].startsWith('--')) opt[argv[i].slice(2)] = argv[++i];
  else rest.push(argv[i]);
}
if (!opt.image || !opt.port || rest.length !== 1) {
  console.error('usage: kube-play.mjs --modules DIR --image IMG --port PORT K8S_DIR');
  process.exit(2);
}
const require = createRequire(join(resolve(opt.modules), 'resolver.js'));
const YAML = require('yaml');
const load = (f) => YAML.parseAllDocuments(readFileSync(join(rest[0], f), 'utf8')).map((d) => d.toJS());

const out = [];
for (const dep of load('deployment.yaml').filter((d) => d?.kind === 'Deployment')) {
  dep.spec.replicas = 1;
  for (const c of dep.spec.template.spec.containers) {
    c.image = opt.image;
    c.imagePullPolicy = 'Never';
    const http = (c.ports ?? []).find((p) => p.name === 'http') ?? c.ports[0];
    http.hostPort = Number(opt.port);
    http.hostIP = '127.0.0.1';
  }
  out.push(dep);
}
for (const svc of load('service.yaml').filter((d) => d?.kind === 'Service')) out.push(svc);
if (out.length === 0) {
  console.error('kube-play.mjs: no Deployment found');
  process.exit(1);
}
process.stdout.write(out.map((d) => YAML.stringify(d)).join('---\n'));
