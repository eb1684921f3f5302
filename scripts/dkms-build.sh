#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/dkms-build.sh [KVER...]: build the modules as an admin's DKMS
# would, for each kernel given (by default every installed one): the
# source tree `make dkms-src` installs, added to a DKMS tree of our own
# (build/dkms/, not /var/lib/dkms) and built with `dkms build`. The modules
# DKMS made are then laid out as build/dkms/kmod/KVER/MODULE/MODULE.ko,
# where tests/guest/dkms.sh loads them. Exits non-zero when DKMS fails or
# leaves a module out.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib-kernel.sh
. scripts/lib-kernel.sh

command -v dkms > /dev/null || { echo "dkms-build: dkms is not installed (run 'make deps')" >&2; exit 2; }
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
[ -n "$ver" ] || { echo "dkms-build: no PACKAGE_VERSION in dkms.conf" >&2; exit 2; }
if [ $# -eq 0 ]; then
	mapfile -t kvers < <(list_kernels)
else
	kvers=()
	for k in "$@"; do kvers+=("$(resolve_kernel "$k")"); done
fi
top=$PWD/build/dkms
rm -rf "$top"
make --no-print-directory dkms-src DESTDIR="$top/root" > /dev/null
src=$top/root/usr/src
tree=$top/tree
mkdir -p "$tree"
dkms add --sourcetree "$src" --dkmstree "$tree" -m orfs -v "$ver" > /dev/null
for k in "${kvers[@]}"; do
	echo "dkms-build: orfs/$ver for $k"
	if ! dkms build --sourcetree "$src" --dkmstree "$tree" -m orfs -v "$ver" -k "$k" \
		> "$top/build-$k.log" 2>&1; then
		tail -n 30 "$top/build-$k.log"
		[ ! -f "$tree/orfs/$ver/build/make.log" ] || tail -n 30 "$tree/orfs/$ver/build/make.log"
		echo "dkms-build: dkms build failed for $k" >&2
		exit 1
	fi
	for m in regcache knet orfs mxbd; do
		f=$(ls "$tree/orfs/$ver/$k/"*/module/"$m".ko* 2>/dev/null | head -n 1 || true)
		[ -n "$f" ] || { echo "dkms-build: DKMS built no $m for $k" >&2; exit 1; }
		mkdir -p "$top/kmod/$k/$m"
		case $f in
		*.xz) xz -dc "$f" > "$top/kmod/$k/$m/$m.ko" ;;
		*.zst) zstd -qdc "$f" > "$top/kmod/$k/$m/$m.ko" ;;
		*) cp "$f" "$top/kmod/$k/$m/$m.ko" ;;
		esac
	done
done
echo "dkms-build: ${#kvers[@]} kernel(s), modules in $top/kmod"
