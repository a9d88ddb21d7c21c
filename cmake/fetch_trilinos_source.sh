#!/usr/bin/env bash
# Fetch Debian's trilinos source package (it carries Kokkos 3.4.1 and Kokkos
# Kernels 3.4.1) into $1, using deb-src entries derived from this machine's own
# apt sources in a private apt configuration: nothing system-wide is changed and
# no host is hard-coded.
set -euo pipefail
dest=${1:?usage: fetch_trilinos_source.sh DEST}
mkdir -p "$dest"
apt_dir=$(mktemp -d)
trap 'rm -rf "$apt_dir"' EXIT
mkdir -p "$apt_dir/lists/partial" "$apt_dir/sources.list.d"
src_list="$apt_dir/sources.list"
: >"$src_list"
# One-line format: turn every enabled "deb" line into "deb-src".
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >>"$src_list"
done
# deb822 format: same entries with Types: deb-src.
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  sed 's/^Types:.*/Types: deb-src/' "$f" >"$apt_dir/sources.list.d/$(basename "$f")"
done
opts=(-o "Dir::Etc::SourceList=$src_list" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
      -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir")
apt-get "${opts[@]}" -qq update
cd "$dest"
# --download-only + dpkg-source: no build-dependency resolution, no dpkg-dev hooks.
apt-get "${opts[@]}" -qq --download-only source trilinos
dsc=$(ls trilinos_*.dsc | head -n 1)
if command -v dpkg-source >/dev/null 2>&1; then
  dpkg-source --no-check -x "$dsc" trilinos-src >/dev/null
else
  mkdir -p trilinos-src && tar -xf trilinos_*.orig.tar.* -C trilinos-src --strip-components=1
fi
rm -f trilinos_*.tar.* trilinos_*.dsc
test -d trilinos-src/packages/kokkos && test -d trilinos-src/packages/kokkos-kernels
echo "trilinos source in $dest/trilinos-src"
