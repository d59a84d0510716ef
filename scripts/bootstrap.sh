#!/bin/sh
# bootstrap.sh - install everything the build and every test target need
# (Debian 12, as root), then build.  `make check` and the other test targets
# never install anything: a test whose tool is missing fails with a line
# naming the step of this script that provides it.
#   scripts/bootstrap.sh [configure options...]
#
# Steps:
#   Debian packages   the build, `make check`, check-style, fuzz, check-load,
#                     bench and check-deploy (one apt-get install of what is
#                     missing)
#   npm tools         pinned npm packages into the build tree:
#                     web/npm (swagger-ui-dist: /docs, embedded by make),
#                     tests/browser-tools (playwright-core: t_pages.sh),
#                     tests/openapi-tools (t_openapi.sh) and
#                     build-deploy/node (make check-deploy)
#   build             autoreconf (no configure yet), ./configure (no Makefile
#                     yet, or configure options given), make
# Safe to run again: it installs only what is missing (the npm tools again
# only when their pinned versions change) and reconfigures only as above.
# Not root: the packages the build and `make check` need must be installed
# already; missing packages of the other targets are listed, not fatal.
set -eu
cd "$(dirname "$0")/.."

# ---- step: Debian packages, by the target that needs them
# build: the daemon and the test programs
PKGS_BUILD="build-essential autoconf automake libtool autoconf-archive pkg-config
libmicrohttpd-dev libjansson-dev libuv1-dev libcmocka-dev libcurl4-openssl-dev
zlib1g-dev"
# make check: curl (every integration script), python3-numpy (t_binary.sh:
# real .npy files, np.load with /usr/bin/python3), openssl (t_security.sh's
# test certificate), nodejs and npm (t_openapi.sh), prometheus (promtool,
# t_metrics.sh), coreutils (timeout: tests/run-test.sh), chromium
# (t_pages.sh: the playground and /docs in a real headless browser)
PKGS_CHECK="curl ca-certificates python3-numpy openssl prometheus coreutils
perl chromium"
# node and npm: Debian's nodejs and npm, unless the commands are there already
# (a NodeSource nodejs bundles npm and conflicts with Debian's npm package).
PKGS_NODE="nodejs npm"
# make check-style
PKGS_STYLE="clang-format-14"
# make fuzz: clang-14 with libFuzzer and the sanitizer runtimes
PKGS_FUZZ="clang-14 libclang-rt-14-dev"
# make check-load
PKGS_LOAD="wrk slowhttptest iproute2"
# make bench: nginx, the baseline of bench/daemon.sh (it starts its own instance)
PKGS_BENCH="nginx"
# make check-deploy (deploy/podman-env.sh, deploy/check-deploy.sh)
PKGS_DEPLOY="podman runc catatonit uidmap slirp4netns netavark aardvark-dns
fuse-overlayfs conmon iptables containernetworking-plugins debootstrap
yamllint systemd man-db git shellcheck"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing_of() { _m=""; for _p in $1; do installed "$_p" || _m="$_m $_p"; done; echo "$_m"; }

need_build=$(missing_of "$PKGS_BUILD $PKGS_CHECK")
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  need_build="$need_build$(missing_of "$PKGS_NODE")"
fi
need_more=$(missing_of "$PKGS_STYLE $PKGS_FUZZ $PKGS_LOAD $PKGS_BENCH $PKGS_DEPLOY")
if [ -n "$need_build$need_more" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    [ -n "$need_more" ] &&
      echo "bootstrap: (step: Debian packages) not root; check-style, fuzz, check-load, bench or check-deploy will lack:$need_more" >&2
    if [ -n "$need_build" ]; then
      echo "bootstrap: (step: Debian packages) missing and not root; run as root or install:$need_build" >&2
      exit 1
    fi
  else
    echo "bootstrap: (step: Debian packages) installing$need_build$need_more"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $need_build $need_more >/dev/null
  fi
fi

# ---- step: npm tools (pinned; no install scripts: none of them needs one)
# npm_tools DIR PKGS...: DIR/node_modules holds exactly PKGS (DIR/.pkgs).
npm_tools() {
  _dir=$1; shift
  [ "$(cat "$_dir/.pkgs" 2>/dev/null)" = "$*" ] && return 0
  if ! command -v npm >/dev/null 2>&1; then
    echo "bootstrap: (step: npm tools) npm is missing (Debian package npm); skipping $_dir" >&2
    return 0
  fi
  echo "bootstrap: (step: npm tools) npm install $* into $_dir"
  rm -rf "$_dir"
  mkdir -p "$_dir"
  echo '{"private":true}' >"$_dir/package.json"
  (cd "$_dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error "$@") ||
    { echo "bootstrap: (step: npm tools) npm install into $_dir failed" >&2; exit 1; }
  echo "$*" >"$_dir/.pkgs"
}
# daemon/pages: Swagger UI's bundle, CSS and licences, embedded at build
# time for /docs (./configure --disable-docs-ui does without).  Its
# dependency @scarf/scarf has an install-time analytics script, which
# --ignore-scripts keeps from running.
npm_tools web/npm swagger-ui-dist@5.35.0
# tests/integration/t_pages.sh: drives Debian's chromium (no browser
# download: playwright-core has none).
npm_tools tests/browser-tools playwright-core@1.65.1
# tests/integration/t_openapi.sh: Redocly's linter, YAML, JSON Schema.
npm_tools tests/openapi-tools @redocly/cli@1.34.20 js-yaml@4.1.0 ajv@8.17.1
# deploy/check-deploy.sh: kubernetes-models 4.x (5.x wants node >= 22,
# Debian 12 has 18) and yaml.
npm_tools build-deploy/node kubernetes-models@4.5.1 yaml@2.9.1

# ---- step: build
[ -x configure ] || autoreconf -fi
if [ ! -f Makefile ] || [ $# -gt 0 ]; then
  ./configure "$@"
fi
make -j"$(nproc)"
