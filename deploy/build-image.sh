#!/bin/sh
# build-image.sh - build the container image localhost/reduced:<version>.
#
#   deploy/build-image.sh            (as root on Debian 12)
#
# Needs podman/runc/debootstrap (scripts/bootstrap.sh installs them), writes a containers.conf for
# this machine's limits when needed (under $DEPLOY_WORK, never /etc), creates
# the Debian base image locally when it is missing (no image registry is
# reachable: debootstrap from the apt mirror + podman import), then builds
# deploy/Dockerfile with --pull=never and prints the image size.
#
# Environment: BASE_IMAGE (debian:bookworm-slim), IMAGE (localhost/reduced:
# <version from configure.ac>), DEPLOY_WORK (<top>/build-deploy),
# CONTAINERS_CONF (kept when set).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
export DEPLOY_PROG=build-image
DEPLOY_WORK=${DEPLOY_WORK:-$top/build-deploy}
# shellcheck source=deploy/podman-env.sh
. "$top/deploy/podman-env.sh"

version=$(sed -n 's/^AC_INIT(\[reduced\], *\[\([^]]*\)\].*/\1/p' "$top/configure.ac")
[ -n "$version" ] || { deploy_log "cannot read the version from configure.ac"; exit 1; }
BASE_IMAGE=${BASE_IMAGE:-debian:bookworm-slim}
IMAGE=${IMAGE:-localhost/reduced:$version}

deploy_podman_setup
deploy_apt_install debootstrap

# An unqualified name is looked up as docker.io/library/NAME.
case $BASE_IMAGE in
  */*) base_ref=$BASE_IMAGE ;;
  *) base_ref=docker.io/library/$BASE_IMAGE ;;
esac

# make_base - a slim Debian rootfs, the way the official -slim images trim
# theirs (no docs, man pages, locales or apt caches), imported as base_ref.
make_base() {
  suite=${BASE_IMAGE#*:}
  suite=${suite%-slim}
  case $suite in bookworm | trixie | bullseye) ;; *) suite=bookworm ;; esac
  mirror=$(deploy_debian_mirror)
  mkdir -p "$DEPLOY_WORK"
  rootfs=$(mktemp -d "$DEPLOY_WORK/rootfs.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$rootfs'" EXIT
  deploy_log "debootstrap $suite from $mirror (no base image $base_ref yet)"
  debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$DEPLOY_WORK/debootstrap.log" 2>&1 || {
    tail -n 20 "$DEPLOY_WORK/debootstrap.log" >&2
    return 1
  }
  # Keep later apt-get installs (in the Dockerfile) as slim as this one.
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
  cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
CFG
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs/usr/share/man/"* "$rootfs/usr/share/info/"* "$rootfs/usr/share/groff/"* \
    "$rootfs/usr/share/lintian/"* "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*.bin \
    "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/log/"*.log "$rootfs/var/log/apt/"*
  find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
  tar --numeric-owner -C "$rootfs" -c . |
    podman import --change 'CMD ["bash"]' \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      - "$base_ref" >/dev/null
  rm -rf "$rootfs"
  trap - EXIT
  deploy_log "created $base_ref ($(podman image inspect --format '{{.Size}}' "$base_ref") bytes)"
}

podman image exists "$base_ref" || make_base

# The build context: in a git checkout, exactly the files git tracks (with
# their working-tree content), so that build directories anywhere in the tree
# stay out; otherwise the tree itself, filtered by .dockerignore.
context=$top
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  context=$DEPLOY_WORK/context
  rm -rf "$context"
  mkdir -p "$context"
  (cd "$top" && git ls-files -z --cached | tar --null --ignore-failed-read -T - -cf -) |
    tar -C "$context" -xf -
  # Swagger UI for /docs: not tracked (scripts/bootstrap.sh installs the
  # pinned npm package), embedded by the build stage's make.
  if [ -d "$top/web/npm/node_modules/swagger-ui-dist" ]; then
    mkdir -p "$context/web/npm/node_modules"
    cp -R "$top/web/npm/node_modules/swagger-ui-dist" "$context/web/npm/node_modules/"
  fi
fi

start=$(date +%s)
# --format docker: the OCI image format has no HEALTHCHECK, podman would drop it.
podman build --format docker --pull=never \
  --build-arg "BASE_IMAGE=$base_ref" \
  -f "$context/deploy/Dockerfile" -t "$IMAGE" "$context"
end=$(date +%s)

size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
echo "image $IMAGE: $size bytes ($((size / 1000000)) MB), built in $((end - start)) s"
