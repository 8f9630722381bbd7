#!/usr/bin/env bash
# Makes sure the machine has what a test needs, installing what is missing:
#   tests/need.sh redis-server nginx openssl chromium pyyaml node npm script
# Called by the test helpers on first use (tests/it/support/need.rs), so
# README's `cargo test --locked` sets up a fresh machine by itself. As root
# it installs Debian packages with apt-get (and PyYAML with pip when python3
# is not Debian's); otherwise it says which command to run and exits 1.
# Concurrent callers (parallel tests, several test processes) take turns.
set -euo pipefail

usage() { echo "usage: $0 {redis-server|nginx|openssl|chromium|pyyaml|node|npm|script}..." >&2; exit 2; }
[ "$#" -gt 0 ] || usage

present() {
  case "$1" in
    pyyaml) python3 -c 'import yaml' >/dev/null 2>&1 ;;
    chromium) [ -x /usr/bin/chromium ] ;;
    redis-server|nginx|openssl|node|npm|script) command -v "$1" >/dev/null 2>&1 ;;
    *) usage ;;
  esac
}

apt_package() {
  case "$1" in
    pyyaml) echo python3-yaml ;;
    node) echo nodejs ;;
    script) echo bsdutils ;;   # util-linux's terminal recorder
    *) echo "$1" ;;
  esac
}

missing=()
for what in "$@"; do present "$what" || missing+=("$what"); done
[ "${#missing[@]}" -eq 0 ] && exit 0

# One installer at a time on this machine; re-check under the lock, since
# another caller may have installed it meanwhile.
exec 9>"${TMPDIR:-/tmp}/elicitkit-need.lock"
flock 9
still=()
for what in "${missing[@]}"; do present "$what" || still+=("$what"); done
[ "${#still[@]}" -eq 0 ] && exit 0

apt=() pip=()
for what in "${still[@]}"; do
  if [ "$what" = pyyaml ] && command -v python3 >/dev/null 2>&1 \
     && [ "$(python3 -c 'import sys; print(sys.prefix)')" != /usr ]; then
    pip+=("PyYAML==6.0.2")   # python3 is not Debian's: its own site-packages
  else
    apt+=("$(apt_package "$what")")
  fi
done

if [ "$(id -u)" -ne 0 ]; then
  {
    echo "the tests need: ${still[*]}, and this user cannot install them."
    [ "${#apt[@]}" -gt 0 ] && echo "  run: sudo apt-get install -y ${apt[*]}"
    [ "${#pip[@]}" -gt 0 ] && echo "  run: python3 -m pip install ${pip[*]}"
    echo "then run the tests again (as root they install it themselves)."
  } >&2
  exit 1
fi

if [ "${#apt[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || {
    echo "the tests need ${apt[*]} (Debian package names) and there is no apt-get: install them with this system's package manager" >&2
    exit 1
  }
  echo "tests/need.sh: apt-get install ${apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Installing redis-server or nginx must not start the system's own
  # copy (port 6379 / 80): the tests start theirs on free ports.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${apt[@]}" >&2
fi
if [ "${#pip[@]}" -gt 0 ]; then
  echo "tests/need.sh: python3 -m pip install ${pip[*]}" >&2
  python3 -m pip install -q --disable-pip-version-check "${pip[@]}" >&2
fi

for what in "${still[@]}"; do
  present "$what" || { echo "tests/need.sh: $what is still missing after installing it" >&2; exit 1; }
done
