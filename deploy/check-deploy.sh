#!/bin/bash
# check-deploy.sh - exercise everything in deploy/ for real (`make check-deploy`).
#
#   1. lint: yamllint and an offline schema + policy check of the manifests,
#      shell syntax, the man page, systemd-analyze verify and security;
#   2. image: build it (build-image.sh), run it read-only, wait for /readyz,
#      reduce tensors through it, SIGTERM it and check it exits 0 in time;
#      then boot it with systemd and reduced.service and do the same;
#   3. kube: `podman kube play` the Deployment and Service (a variant made
#      from the real manifests), wait for readiness, send requests, kube down.
#
# Needs (scripts/bootstrap.sh installs them; nothing is installed here):
# podman, runc, debootstrap, yamllint, systemd, man-db, curl, nodejs, and
# the npm packages under $DEPLOY_WORK/node (step: npm tools). Prints timings, the image size and
# `N passed, N failed`; exits 1 on any failure. Removes the containers and
# pods it started, also on failure.
#
# Environment: REDUCED_BIN (the built daemon, for systemd-analyze verify and
# --help), DEPLOY_WORK (scratch dir), IMAGE, SECURITY_THRESHOLD.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
export DEPLOY_PROG=check-deploy
DEPLOY_WORK=${DEPLOY_WORK:-$top/build-deploy}
REDUCED_BIN=${REDUCED_BIN:-$top/daemon/reduced}
# systemd-analyze's exposure x 10 (0..100): 15 means "1.5 or better".
SECURITY_THRESHOLD=${SECURITY_THRESHOLD:-15}
# The daemon's drain time in the run test; podman stop waits longer.
RUN_GRACE=5
STOP_TIMEOUT=10
IMAGE_MAX_BYTES=120000000
mkdir -p "$DEPLOY_WORK"
# shellcheck source=deploy/podman-env.sh
. "$top/deploy/podman-env.sh"

version=$(sed -n 's/^AC_INIT(\[reduced\], *\[\([^]]*\)\].*/\1/p' "$top/configure.ac")
IMAGE=${IMAGE:-localhost/reduced:$version}
export IMAGE DEPLOY_WORK
ctr=reduced-check-$$
sdctr=reduced-check-systemd-$$
kube_yaml=$DEPLOY_WORK/kube-play.yaml
kube_up=no
log=$DEPLOY_WORK/step.log

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
# check NAME CMD... - one check: run CMD, show its output when it fails.
check() {
  local name=$1
  shift
  if "$@" >"$log" 2>&1; then
    pass "$name"
  else
    fail "$name"
    tail -n 25 "$log" | sed 's/^/    /'
  fi
}

cleanup() {
  if command -v podman >/dev/null 2>&1; then
    podman rm -f -t 0 "$ctr" >/dev/null 2>&1
    podman rm -f -t 0 "$sdctr" >/dev/null 2>&1
    [ "$kube_up" = yes ] && podman kube down "$kube_yaml" >/dev/null 2>&1
  fi
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port START - the first port from START on that nothing listens on.
free_port() {
  local p
  for ((p = $1; p < $1 + 200; p++)); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# wait_ready URL - poll until URL answers 200, for at most 60 s.
wait_ready() {
  local i
  for ((i = 0; i < 120; i++)); do
    curl -fsS --max-time 2 -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.5
  done
  echo "no 200 from $1 after 60 s"
  return 1
}

# http_json METHOD URL EXPECT_STATUS EXPECT_JSON [BODY] - one request; the
# status must match and the body must equal EXPECT_JSON as JSON values.
http_json() {
  local method=$1 url=$2 want_status=$3 want=$4 body=${5:-} out status
  if [ -n "$body" ]; then
    out=$(curl -sS --max-time 10 -X "$method" -H 'Content-Type: application/json' \
      --data-binary "$body" -w '\n%{http_code}' "$url") || return 1
  else
    out=$(curl -sS --max-time 10 -X "$method" -w '\n%{http_code}' "$url") || return 1
  fi
  status=${out##*$'\n'}
  out=${out%$'\n'*}
  echo "status $status, body $out"
  [ "$status" = "$want_status" ] || { echo "want status $want_status"; return 1; }
  json_equal "$out" "$want"
}

# json_equal GOT WANT - the same JSON value (numbers compared as numbers).
json_equal() {
  node -e '
    const util = require("node:util");
    const got = JSON.parse(process.argv[1]), want = JSON.parse(process.argv[2]);
    if (!util.isDeepStrictEqual(got, want)) {
      console.log("want body " + JSON.stringify(want));
      process.exit(1);
    }' "$1" "$2"
}

# drain_inflight CONTAINER PORT - SIGTERM with a request in flight: the
# request still gets its exact answer, then the daemon exits 0. No timing:
# "100 Continue" proves the daemon holds the request before the signal, and
# /readyz no longer answering 200 proves the drain began before the rest of
# the body is sent.
drain_inflight() {
  local c=$1 port=$2 body=$REQ_L2 line resp status code i
  exec 5<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'POST /v1/reduce HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n' \
    "${#body}" >&5
  IFS= read -r -t 10 line <&5 || { echo "no answer to the headers"; return 1; }
  echo "< ${line%$'\r'}"
  case $line in "HTTP/1.1 100"*) ;; *) return 1 ;; esac
  IFS= read -r -t 10 line <&5
  printf '%s' "${body:0:10}" >&5
  podman kill --signal TERM "$c" >/dev/null || return 1
  for ((i = 0; i < 100; i++)); do
    curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null || break
    sleep 0.2
  done
  [ "$i" -lt 100 ] || { echo "/readyz still 200 after SIGTERM"; return 1; }
  echo "/readyz no longer 200: draining"
  printf '%s' "${body:10}" >&5
  resp=$(timeout 20 cat <&5 | tr -d '\r')
  exec 5<&-
  status=$(printf '%s\n' "$resp" | head -n 1)
  echo "< $status"
  case $status in "HTTP/1.1 200"*) ;; *) return 1 ;; esac
  json_equal "$(printf '%s\n' "$resp" | sed '1,/^$/d')" "$ANS_L2" || return 1
  code=$(podman wait "$c")
  echo "exit code $code"
  [ "$code" = 0 ]
}

# The requests and answers used against the image and the pod. The answers
# are worked by hand: sqrt(3^2+4^2) = 5, sqrt(5^2+12^2) = 13 (exact in
# float32); 1^2+3^2 = 10, 2^2+4^2 = 20.
REQ_L2='{"op":"ReduceL2","opset":18,"axes":[1],"keepdims":0,"input":{"dtype":"float32","shape":[2,2],"data":[3,4,5,12]}}'
ANS_L2='{"op":"ReduceL2","opset":18,"op_version":18,"output":{"dtype":"float32","shape":[2],"data":[5,13]}}'
REQ_SSQ='{"op":"ReduceSumSquare","opset":13,"axes":[0],"keepdims":1,"input":{"dtype":"int32","shape":[2,2],"data":[1,2,3,4]}}'
ANS_SSQ='{"op":"ReduceSumSquare","opset":13,"op_version":13,"output":{"dtype":"int32","shape":[1,2],"data":[10,20]}}'
REQ_BAD='{"op":"ReduceL2","axes":[2],"input":{"dtype":"float32","shape":[2,2],"data":[3,4,5,12]}}'

# error_code URL BODY WANT_STATUS WANT_CODE - an error answer's status and code.
error_code() {
  local out status
  out=$(curl -sS --max-time 10 -H 'Content-Type: application/json' --data-binary "$2" \
    -w '\n%{http_code}' "$1") || return 1
  status=${out##*$'\n'}
  out=${out%$'\n'*}
  echo "status $status, body $out"
  [ "$status" = "$3" ] &&
    node -e 'process.exit(JSON.parse(process.argv[1]).error.code === process.argv[2] ? 0 : 1)' "$out" "$4"
}

# ---------------------------------------------------------------- tools
echo "== tools"
# abort WHAT - nothing can be checked without the tools.
abort() {
  fail "$1"
  echo "$passed passed, $failed failed"
  exit 1
}
deploy_apt_install yamllint systemd man-db curl git ca-certificates nodejs || abort "tools installed"
deploy_podman_setup || abort "podman installed"
NODE_DIR=$DEPLOY_WORK/node
if [ ! -d "$NODE_DIR/node_modules/kubernetes-models" ] || [ ! -d "$NODE_DIR/node_modules/yaml" ]; then
  # kubernetes-models 4.x: 5.x wants node >= 22, Debian 12 has 18.
  echo "missing kubernetes-models and yaml in $NODE_DIR: run scripts/bootstrap.sh (step: npm tools)"
  abort "npm tools installed"
fi

# ---------------------------------------------------------------- 1. lint
echo "== lint"
yamllint_conf='{extends: default, rules: {line-length: {max: 120}}}'
for f in "$top"/deploy/k8s/*.yaml; do
  check "yamllint ${f#"$top"/}" yamllint -s -d "$yamllint_conf" "$f"
done
check "manifests: schema and policy ($(node "$top/deploy/validate-k8s.mjs" --modules "$NODE_DIR" \
  "$top/deploy/k8s" | tail -n 1))" node "$top/deploy/validate-k8s.mjs" --modules "$NODE_DIR" "$top/deploy/k8s"
check "kube-play variant generates" node "$top/deploy/kube-play.mjs" --modules "$NODE_DIR" \
  --image "$IMAGE" --port 8080 "$top/deploy/k8s"
check "sh -n build-image.sh podman-env.sh" sh -n "$top/deploy/build-image.sh" "$top/deploy/podman-env.sh"
bash_syntax() { bash -n "$top/deploy/check-deploy.sh" && bash -n "$top/deploy/healthcheck.sh"; }
check "bash -n check-deploy.sh healthcheck.sh" bash_syntax
if command -v shellcheck >/dev/null 2>&1; then
  # From the top: the `source=` directives name paths relative to it.
  run_shellcheck() {
    (cd "$top" && shellcheck -x deploy/build-image.sh deploy/check-deploy.sh \
      deploy/healthcheck.sh deploy/podman-env.sh)
  }
  check "shellcheck" run_shellcheck
fi

man_lint() {
  local warn
  warn=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$1" 2>&1 >/dev/null)
  [ -z "$warn" ] || { echo "$warn"; return 1; }
}
check "man page renders without warnings" man_lint "$top/deploy/reduced.8"

# Every option the daemon offers, and every REDUCED_* variable of the
# contract, is in the man page.
man_covers_options() {
  local opts missing="" o
  opts=$({ "$REDUCED_BIN" --help 2>&1; cat "$top/docs/http-api.md"; } |
    grep -oE -- '--[a-z][a-z-]+|REDUCED_[A-Z_]+' | sort -u)
  [ -n "$opts" ] || { echo "no options found"; return 1; }
  for o in $opts; do
    grep -qF -- "$(printf '%s' "$o" | sed 's/-/\\-/g')" "$top/deploy/reduced.8" || missing="$missing $o"
  done
  [ -z "$missing" ] || { echo "not in reduced.8:$missing"; return 1; }
}
check "man page documents every option and variable" man_covers_options

# systemd-analyze needs the ExecStart binary to exist and resolves
# Documentation=man:reduced(8): verify a copy that points at the built
# binary, with the man page on MANPATH.
unitdir=$DEPLOY_WORK/unit
rm -rf "$unitdir" "$DEPLOY_WORK/man"
mkdir -p "$unitdir" "$DEPLOY_WORK/man/man8"
cp "$top/deploy/reduced.8" "$DEPLOY_WORK/man/man8/"
sed "s|^ExecStart=/usr/local/bin/reduced|ExecStart=$REDUCED_BIN|" "$top/deploy/reduced.service" \
  >"$unitdir/reduced.service"
check "unit ExecStart points at the built binary ($REDUCED_BIN)" test -x "$REDUCED_BIN"
check "systemd-analyze verify reduced.service" \
  env MANPATH="$DEPLOY_WORK/man" systemd-analyze verify "$unitdir/reduced.service"
score=$(systemd-analyze security --offline=true "$unitdir/reduced.service" 2>/dev/null |
  sed -n 's/.*Overall exposure level for reduced.service: \([0-9.]*\).*/\1/p')
check "systemd-analyze security: exposure ${score:-?} <= $SECURITY_THRESHOLD/10" \
  systemd-analyze security --offline=true --threshold="$SECURITY_THRESHOLD" "$unitdir/reduced.service"

# ---------------------------------------------------------------- 2. image
echo "== image"
t0=$(date +%s)
check "build-image.sh builds $IMAGE" "$top/deploy/build-image.sh"
grep -E '^(build-image: |image )' "$log" | sed 's/^/    /'
build_s=$(($(date +%s) - t0))
size=$(podman image inspect --format '{{.Size}}' "$IMAGE" 2>/dev/null || echo 0)
if [ "$size" -gt 0 ]; then
  check "image size $((size / 1000000)) MB < $((IMAGE_MAX_BYTES / 1000000)) MB" test "$size" -lt "$IMAGE_MAX_BYTES"
  image_config() {
    local got
    got=$(podman image inspect --format \
      '{{.Config.User}}|{{range .Config.Env}}{{.}} {{end}}|{{range $p, $v := .Config.ExposedPorts}}{{$p}}{{end}}|{{.Config.StopSignal}}|{{if .Config.Healthcheck}}health{{end}}' \
      "$IMAGE")
    echo "$got"
    # HTTP on 8080 and gRPC on 8081, both listening on every interface.
    case $got in
      "10001:10001|"*"REDUCED_LISTEN=0.0.0.0:8080 "*"|8080/tcp8081/tcp|SIGTERM|health") ;;
      *) return 1 ;;
    esac
    case $got in
      *"REDUCED_GRPC_LISTEN=0.0.0.0:8081 "*) return 0 ;;
    esac
    return 1
  }
  check "image config: USER 10001, REDUCED_LISTEN, REDUCED_GRPC_LISTEN, EXPOSE 8080 8081, STOPSIGNAL, HEALTHCHECK" image_config

  port=$(free_port 18080)
  base=http://127.0.0.1:$port
  # Read-only, no capabilities, no privilege gain: as the Deployment runs it.
  check "podman run -d -p 127.0.0.1:$port:8080" podman run -d --name "$ctr" --read-only \
    --cap-drop ALL --security-opt no-new-privileges -e REDUCED_GRACE=$RUN_GRACE \
    -p "127.0.0.1:$port:8080" "$IMAGE"
  check "container: /readyz answers 200" wait_ready "$base/readyz"
  check "container: GET /readyz" http_json GET "$base/readyz" 200 '{"status":"ready"}'
  check "container: GET /healthz" http_json GET "$base/healthz" 200 '{"status":"ok"}'
  check "container: ReduceL2 float32 [[3,4],[5,12]] axis 1 = [5,13]" \
    http_json POST "$base/v1/reduce" 200 "$ANS_L2" "$REQ_L2"
  check "container: ReduceSumSquare int32 [[1,2],[3,4]] axis 0 = [[10,20]]" \
    http_json POST "$base/v1/reduce" 200 "$ANS_SSQ" "$REQ_SSQ"
  check "container: axis 2 of a rank-2 input is 400 AXIS_OUT_OF_RANGE" \
    error_code "$base/v1/reduce" "$REQ_BAD" 400 AXIS_OUT_OF_RANGE
  check "container: HEALTHCHECK (podman healthcheck run)" podman healthcheck run "$ctr"
  runs_as() { [ "$(podman exec "$1" /usr/bin/id -u)" = "$2" ]; }
  check "container: runs as uid 10001" runs_as "$ctr" 10001
  # podman logs replays each stream on its own fd: the log lines must be on stderr.
  logs_on_stderr() {
    podman logs "$ctr" 2>"$DEPLOY_WORK/ctr.stderr" >"$DEPLOY_WORK/ctr.stdout"
    cat "$DEPLOY_WORK/ctr.stderr"
    grep -q 'listening on 0.0.0.0:8080' "$DEPLOY_WORK/ctr.stderr" &&
      grep -q 'path=/v1/reduce status=200' "$DEPLOY_WORK/ctr.stderr" &&
      ! grep -q 'listening on' "$DEPLOY_WORK/ctr.stdout"
  }
  check "container: logs on stderr (listening line, request lines)" logs_on_stderr
  stop_in_time() {
    local t0 t1 code
    t0=$(date +%s)
    podman stop -t "$STOP_TIMEOUT" "$ctr" >/dev/null || return 1
    t1=$(date +%s)
    code=$(podman inspect --format '{{.State.ExitCode}}' "$ctr")
    echo "exit code $code after $((t1 - t0)) s (grace $RUN_GRACE s, stop timeout $STOP_TIMEOUT s)"
    [ "$code" = 0 ] && [ $((t1 - t0)) -le "$RUN_GRACE" ]
  }
  check "container: SIGTERM (podman stop -t $STOP_TIMEOUT) exits 0 within the grace period" stop_in_time
  sed 's/^/    /' "$log"
  podman rm -f -t 0 "$ctr" >/dev/null 2>&1
  check "podman run -d (for the drain test)" podman run -d --name "$ctr" --read-only \
    --cap-drop ALL --security-opt no-new-privileges -e REDUCED_GRACE=$RUN_GRACE \
    -p "127.0.0.1:$port:8080" "$IMAGE"
  check "container: /readyz answers 200" wait_ready "$base/readyz"
  check "container: SIGTERM mid-request: the request completes exactly, exit 0" drain_inflight "$ctr" "$port"
  sed 's/^/    /' "$log"
  podman rm -f -t 0 "$ctr" >/dev/null 2>&1
else
  fail "no image $IMAGE: container and kube tests not run"
fi

# ---------------------------------------------------------------- 2b. unit
# The hardened unit around the real binary under a real systemd: the image
# plus systemd, booted as a container. --privileged because podman masks
# parts of /proc, where systemd sets up PrivateUsers= (217/USER otherwise);
# on a host the unit needs nothing of the kind.
echo "== systemd unit"
unit_s=0
if [ "$size" -gt 0 ]; then
  t0=$(date +%s)
  sd_ctx=$DEPLOY_WORK/systemd-test
  sd_image=localhost/reduced-systemd-test:$version
  rm -rf "$sd_ctx"
  mkdir -p "$sd_ctx"
  sed 's|^ExecStart=/usr/local/bin/reduced|ExecStart=/usr/bin/reduced|' "$top/deploy/reduced.service" \
    >"$sd_ctx/reduced.service"
  # userdel: the image's static user would stand in for the DynamicUser.
  cat >"$sd_ctx/Containerfile" <<'CF'
ARG IMAGE
FROM ${IMAGE}
USER root
RUN apt-get update && apt-get install -y --no-install-recommends systemd systemd-sysv \
 && rm -rf /var/lib/apt/lists/* && userdel reduced
COPY reduced.service /usr/lib/systemd/system/reduced.service
RUN echo 'REDUCED_LISTEN=0.0.0.0:8080' >/etc/default/reduced && systemctl enable reduced.service
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT ["/sbin/init"]
CF
  check "systemd test image (the image + systemd + reduced.service)" \
    podman build --pull=never --build-arg "IMAGE=$IMAGE" -t "$sd_image" "$sd_ctx"
  sport=$(free_port 18280)
  sbase=http://127.0.0.1:$sport
  check "podman run --systemd=always $sd_image" podman run -d --name "$sdctr" --systemd=always \
    --privileged -p "127.0.0.1:$sport:8080" "$sd_image"
  check "unit: /readyz answers 200" wait_ready "$sbase/readyz"
  check "unit: ReduceL2 float32 [[3,4],[5,12]] axis 1 = [5,13]" \
    http_json POST "$sbase/v1/reduce" 200 "$ANS_L2" "$REQ_L2"
  unit_sandbox() {
    local pid st
    pid=$(podman exec "$sdctr" systemctl show -P MainPID reduced.service)
    st=$(podman exec "$sdctr" cat "/proc/$pid/status")
    echo "$st" | grep -E '^(Uid|CapBnd|CapEff|NoNewPrivs|Seccomp):'
    echo "$st" | grep -qE '^Uid:[[:space:]]+[1-9]' &&
      echo "$st" | grep -qE '^CapBnd:[[:space:]]+0+$' &&
      echo "$st" | grep -qE '^NoNewPrivs:[[:space:]]+1$' &&
      echo "$st" | grep -qE '^Seccomp:[[:space:]]+2$'
  }
  check "unit: dynamic non-root user, no capabilities, no_new_privs, seccomp filter" unit_sandbox
  unit_stop() {
    podman exec "$sdctr" systemctl stop reduced.service || return 1
    podman exec "$sdctr" systemctl show -p Result -p ExecMainStatus reduced.service |
      tee /dev/stderr | tr '\n' ' ' | grep -q 'Result=success ExecMainStatus=0'
  }
  check "unit: systemctl stop drains, exit 0" unit_stop
  podman exec "$sdctr" journalctl -u reduced.service --no-pager -o cat 2>/dev/null | sed 's/^/    /' | tail -n 5
  podman rm -f -t 0 "$sdctr" >/dev/null 2>&1
  unit_s=$(($(date +%s) - t0))
fi

# ---------------------------------------------------------------- 3. kube play
echo "== kube play"
kube_s=0
if [ "$size" -gt 0 ]; then
  t0=$(date +%s)
  kport=$(free_port 18180)
  kbase=http://127.0.0.1:$kport
  make_variant() {
    node "$top/deploy/kube-play.mjs" --modules "$NODE_DIR" --image "$IMAGE" --port "$kport" \
      "$top/deploy/k8s" >"$kube_yaml"
  }
  check "kube play variant from deploy/k8s (hostPort $kport, $IMAGE)" make_variant
  # podman logs an error about healthcheck timers where PID 1 is not
  # systemd; the pod runs regardless.
  kube_up=yes
  check "podman kube play" podman kube play "$kube_yaml"
  check "pod: /readyz answers 200" wait_ready "$kbase/readyz"
  kube_requests() {
    local i
    for ((i = 0; i < 20; i++)); do
      http_json POST "$kbase/v1/reduce" 200 "$ANS_L2" "$REQ_L2" >/dev/null || return 1
      http_json POST "$kbase/v1/reduce" 200 "$ANS_SSQ" "$REQ_SSQ" >/dev/null || return 1
    done
  }
  check "pod: 40 reduce requests, exact answers" kube_requests
  pod_security() {
    local c
    c=$(podman ps --filter label=app.kubernetes.io/name=reduced --format '{{.Names}}' | grep -v infra | head -n 1)
    [ -n "$c" ] || c=$(podman ps --format '{{.Names}}' | grep -- '-reduced$' | head -n 1)
    podman inspect --format '{{.HostConfig.ReadonlyRootfs}} {{.Config.User}} {{.HostConfig.SecurityOpt}} {{.HostConfig.Memory}}' "$c"
    [ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$c")" = true ] &&
      [ "$(podman exec "$c" /usr/bin/id -u)" = 10001 ]
  }
  check "pod: read-only root filesystem, uid 10001" pod_security
  check "podman kube down" podman kube down "$kube_yaml"
  kube_up=no
  kube_s=$(($(date +%s) - t0))
fi

# ---------------------------------------------------------------- summary
echo "== summary"
echo "timing: image build ${build_s} s, systemd unit test ${unit_s} s, kube play test ${kube_s} s"
echo "image size: $size bytes ($((size / 1000000)) MB)"
echo "systemd-analyze security exposure: ${score:-?} (threshold $SECURITY_THRESHOLD/10)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
