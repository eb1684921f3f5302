#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/build-siw.sh KVER [KDIR]: build soft-iWARP (siw.ko) for an installed
# Debian kernel that lacks it (CONFIG_RDMA_SIW is off in Debian's 6.1 and
# 6.12). The driver's sources come from the matching linux-source-X.Y
# package (make deps installs it), extracted at build time into
# build/siw/KVER/ and built there against the kernel's headers; nothing of
# them is ever part of the project. Prints the module's path. Does nothing
# when the module is newer than the source package and this script.
set -euo pipefail

die() { echo "build-siw: $*" >&2; exit 2; }

kver=${1:?usage: scripts/build-siw.sh KVER [KDIR]}
kdir=${2:-/lib/modules/$kver/build}
proj=$(cd "$(dirname "$0")/.." && pwd)
[ -e "$kdir/Makefile" ] || die "no kernel headers at $kdir"

# The kernel's upstream version (6.1.192) names its source package (6.1).
kfull=$(make -s -C "$kdir" kernelversion) || die "cannot read the kernel version of $kdir"
series=${kfull%.*}
tarball=/usr/src/linux-source-$series.tar.xz
[ -r "$tarball" ] || die "$tarball is missing (apt-get install linux-source-$series, or make deps)"

out=$proj/build/siw/$kver
ko=$out/siw.ko
if [ -s "$ko" ] && [ "$ko" -nt "$tarball" ] && [ "$ko" -nt "$0" ]; then
	echo "$ko"
	exit 0
fi

rm -rf "$out"
mkdir -p "$out/src"
tar -xJf "$tarball" -C "$out/src" --strip-components=1 \
	"linux-source-$series/Makefile" "linux-source-$series/drivers/infiniband/sw/siw" ||
	die "cannot extract siw from $tarball"

# Driver and kernel must be one release: siw uses ib_core's internals.
src_ver=$(awk -F' = ' '$1 == "VERSION" { v = $2 } $1 == "PATCHLEVEL" { p = $2 }
	$1 == "SUBLEVEL" { s = $2 } END { print v "." p "." s }' "$out/src/Makefile")
[ "$src_ver" = "$kfull" ] ||
	die "$tarball is Linux $src_ver but the kernel is $kfull: install the matching linux-source-$series"

siw=$out/src/drivers/infiniband/sw/siw
make -s -C "$kdir" M="$siw" CONFIG_RDMA_SIW=m modules > "$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; die "building siw for $kver failed (log: $out/build.log)"; }
cp "$siw/siw.ko" "$ko"
echo "$ko"
