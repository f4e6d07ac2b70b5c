#!/usr/bin/env bash
# Prepare a PostgreSQL source repository from Debian's source package.
#
# Usage: scripts/pg-source.sh DEST
#
# DEST becomes a git repository whose single commit "base" holds the
# upstream PostgreSQL 15 tree (Debian's orig tarball, without Debian's
# packaging). It is what `make demo` and the from-source tests build when
# no PG_SOURCE_DIR is given. Re-running with an existing DEST does nothing.
#
# Needs root the first time on a machine without a deb-src entry: it adds
# one for bookworm with the same URIs as the existing deb entries.
set -euo pipefail

dest=${1:?usage: scripts/pg-source.sh DEST}
if [ -d "$dest/.git" ]; then
  exit 0
fi

have_src() {
  grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}

if ! have_src; then
  if [ "$(id -u)" != 0 ]; then
    echo "pg-source: no deb-src entry in /etc/apt; run as root once, or set PG_SOURCE_DIR to a PostgreSQL clone" >&2
    exit 2
  fi
  sed -e 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
    >/etc/apt/sources.list.d/abtest-deb-src.sources
  apt-get update -qq
fi
if ! command -v dpkg-source >/dev/null; then
  apt-get install -y -qq dpkg-dev >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The security suite's index may name a version its pool no longer serves:
# try every version apt knows, newest first.
versions=$(apt-cache showsrc postgresql-15 2>/dev/null | sed -n 's/^Version: //p' | sort -rV | uniq)
if [ -z "$versions" ]; then
  apt-get update -qq
  versions=$(apt-cache showsrc postgresql-15 | sed -n 's/^Version: //p' | sort -rV | uniq)
fi
got=
for v in $versions; do
  if (cd "$work" && apt-get source --download-only -qq "postgresql-15=$v" >/dev/null 2>&1); then
    got=$v
    break
  fi
  rm -f "$work"/postgresql-15_*
done
if [ -z "$got" ]; then
  echo "pg-source: apt-get source postgresql-15 failed for every version ($(echo $versions)); check /etc/apt/sources.list.d" >&2
  exit 3
fi
orig=$(ls "$work"/postgresql-15_*.orig.tar.* | head -n 1)
mkdir -p "$work/tree"
tar -xf "$orig" -C "$work/tree" --strip-components=1

mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp"
mv "$work/tree" "$dest.tmp"
(
  cd "$dest.tmp"
  git init -q -b master
  git -c user.name=abtest -c user.email=abtest@localhost add -A
  GIT_AUTHOR_DATE='2024-01-01T00:00:00Z' GIT_COMMITTER_DATE='2024-01-01T00:00:00Z' \
    git -c user.name=abtest -c user.email=abtest@localhost commit -q -m "base: $(basename "$orig")"
  git tag base
)
mv "$dest.tmp" "$dest"
echo "pg-source: $dest ($(git -C "$dest" rev-parse --short HEAD), $(basename "$orig"))"
