#!/usr/bin/env bash
# Install the Debian packages abtest's demo and tests need, when they are
# missing. Needs root (or does nothing but say what is missing).
set -euo pipefail
pkgs=(git ca-certificates dpkg-dev build-essential bison flex libreadline-dev zlib1g-dev
      ccache meson ninja-build pkg-config postgresql-15 postgresql-server-dev-15 linux-perf valgrind bc chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "deps: missing Debian packages: ${missing[*]}; install them (sudo apt-get install ${missing[*]})" >&2
  exit 2
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
