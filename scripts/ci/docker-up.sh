#!/bin/sh
# Makes a Docker daemon and the workspace tests' base image available, installing nothing:
#  - a private dockerd at $TOOLBELT_DOCKER_DIR/docker.sock unless one already answers there;
#  - the image toolbelt-base:bookworm (a debootstrap minbase Debian, no Node) unless the daemon has it.
#    The rootfs tarball is cached at $TOOLBELT_DOCKER_CACHE (reuse it across CI runs).
# Needs root, dockerd and docker (docker.io) and debootstrap. Prints the line to export for the tests:
#   TOOLBELT_TEST_DOCKER_HOST=unix:///…/docker.sock
set -eu
dir=${TOOLBELT_DOCKER_DIR:-/tmp/dk}
cache=${TOOLBELT_DOCKER_CACHE:-$HOME/.cache/toolbelt-ci/bookworm-minbase.tar}
image=toolbelt-base:bookworm
sock="$dir/docker.sock"
export DOCKER_HOST="unix://$sock"
mkdir -p "$dir"

if ! docker version >/dev/null 2>&1; then
  rm -f "$sock" "$dir/docker.pid"
  # setsid: the daemon outlives this script (CI stops it with: kill "$(cat $dir/docker.pid)").
  setsid dockerd --host "$DOCKER_HOST" --data-root "$dir/data" --exec-root "$dir/exec" \
    --pidfile "$dir/docker.pid" >"$dir/dockerd.log" 2>&1 < /dev/null &
  tries=0
  until docker version >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -gt 60 ]; then
      echo "docker-up: dockerd did not answer at $sock; its log:" >&2
      tail -20 "$dir/dockerd.log" >&2
      exit 1
    fi
    sleep 1
  done
fi

if ! docker image inspect "$image" >/dev/null 2>&1; then
  if [ ! -s "$cache" ]; then
    rootfs="$dir/rootfs"
    rm -rf "$rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$dir/debootstrap.log" 2>&1 || {
      echo "docker-up: debootstrap failed; its log:" >&2
      tail -20 "$dir/debootstrap.log" >&2
      exit 1
    }
    mkdir -p "$(dirname "$cache")"
    tar -C "$rootfs" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
    rm -rf "$rootfs"
  fi
  docker import - "$image" < "$cache" >/dev/null
fi

echo "TOOLBELT_TEST_DOCKER_HOST=$DOCKER_HOST"
