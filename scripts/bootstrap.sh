#!/bin/sh
# bootstrap.sh - install what is missing (Debian 12, as root), then build.
#   scripts/bootstrap.sh [configure options...]
# Safe to run again: it installs only missing packages and reconfigures only
# when there is no Makefile yet (or when configure options are given).
set -eu
cd "$(dirname "$0")/.."

# python3-numpy is a test dependency: tests/integration/t_binary.sh writes
# real .npy files and np.load()s the responses with /usr/bin/python3.
PKGS="build-essential autoconf automake libtool autoconf-archive pkg-config
libmicrohttpd-dev libjansson-dev libuv1-dev libcmocka-dev libcurl4-openssl-dev
curl ca-certificates python3-numpy
openssl nginx"
# openssl: t_security.sh makes its test certificate.  nginx: make bench's
# baseline (bench/daemon.sh starts its own instance).  make fuzz installs
# clang-14 and libclang-rt-14-dev, make check-load wrk, slowhttptest and
# iproute2, make check-deploy podman and friends, each when missing.

missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "bootstrap: installing$missing"
  if [ "$(id -u)" -ne 0 ]; then
    echo "bootstrap: missing packages and not root; run as root or install:$missing" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

[ -x configure ] || autoreconf -fi
if [ ! -f Makefile ] || [ $# -gt 0 ]; then
  ./configure "$@"
fi
make -j"$(nproc)"
