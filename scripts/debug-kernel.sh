#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/debug-kernel.sh (make debug-kernel): build, once per machine, the
# 6.12 kernel of the debug lane from Debian's linux-source-6.12: Debian's
# configuration, slimmed to the modules the test guest loads
# (scripts/debug-kernel/modules.list, as make localmodconfig does), with
# scripts/debug-kernel/debug.config merged over it (KASAN, lockdep,
# DEBUG_OBJECTS, kmemleak, DEBUG_LIST, DEBUG_SG, rxe and siw).
#
# Everything goes to $ORFS_KERNEL_CACHE (default /var/cache/orfs-kernel),
# in <version>-<hash of the inputs>/: the sources (extracted, never part of
# the project), the build (build/, what our modules build against),
# the modules (modroot/), vmlinuz and release. "current" points at the
# last one built. A second run with the same inputs does nothing.
# Prints the directory.
set -euo pipefail

proj=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib-kernel.sh
. "$proj/scripts/lib-kernel.sh"
die() { echo "debug-kernel: $*" >&2; exit 2; }

series=6.12
tarball=/usr/src/linux-source-$series.tar.xz
[ -r "$tarball" ] || die "$tarball is missing (make deps installs linux-source-$series)"
stock=$(resolve_kernel "$series") || die "no Debian $series kernel installed (make deps)"
base=/boot/config-$stock
[ -r "$base" ] || die "$base is missing"
frag=$proj/scripts/debug-kernel/debug.config
list=$proj/scripts/debug-kernel/modules.list
src_ver=$(dpkg-query -W -f='${Version}' "linux-source-$series")

root=${ORFS_KERNEL_CACHE:-/var/cache/orfs-kernel}
hash=$(cat "$base" "$frag" "$list" "$0" <(echo "$src_ver") | sha256sum | cut -c1-12)
dir=$root/$(echo "$src_ver" | tr -c 'A-Za-z0-9.+\n-' _)-$hash
if [ -e "$dir/ok" ]; then
	ln -sfn "$dir" "$root/current"
	echo "$dir"
	exit 0
fi

mkdir -p "$dir"
log=$dir/build.log
: > "$log"
echo "debug-kernel: building in $dir (log: $log); about 40 minutes on two cores" >&2
start=$(date +%s)

if [ ! -e "$dir/src/.extracted" ]; then
	rm -rf "$dir/src"
	mkdir -p "$dir/src"
	tar -xJf "$tarball" -C "$dir/src" --strip-components=1 || die "cannot extract $tarball"
	: > "$dir/src/.extracted"
fi

k() { make -C "$dir/src" O="$dir/build" "$@" >> "$log" 2>&1; }
rm -rf "$dir/build"
mkdir -p "$dir/build"
cp "$base" "$dir/build/.config"
k olddefconfig || die "olddefconfig failed (log: $log)"

# localmodconfig reads lsmod's output: a header, then one module a line.
{
	echo "Module Size Used by"
	grep -v '^#' "$list" | tr ' ' '\n' | sed '/^$/d; s/$/ 0 0/'
} > "$dir/lsmod"
# It asks about symbols new to it: the defaults (yes ends on SIGPIPE).
(yes '' || :) | make -C "$dir/src" O="$dir/build" LSMOD="$dir/lsmod" localmodconfig >> "$log" 2>&1 ||
	die "localmodconfig failed (log: $log)"
(cd "$dir/build" && "$dir/src/scripts/kconfig/merge_config.sh" -m -O "$dir/build" .config "$frag") \
	>> "$log" 2>&1 || die "merging $frag failed (log: $log)"
k olddefconfig || die "olddefconfig failed (log: $log)"

# What the lane exists for must have survived the dependencies.
for opt in KASAN KASAN_GENERIC PROVE_LOCKING DEBUG_LOCKDEP DEBUG_ATOMIC_SLEEP \
	DEBUG_OBJECTS_WORK DEBUG_OBJECTS_TIMERS DEBUG_OBJECTS_RCU_HEAD DEBUG_KMEMLEAK \
	DEBUG_LIST DEBUG_SG 9P_FS NET_9P_VIRTIO VIRTIO_PCI; do
	grep -qx "CONFIG_$opt=y" "$dir/build/.config" || die "CONFIG_$opt is not y in the merged configuration"
done
for opt in RDMA_RXE RDMA_SIW INFINIBAND; do
	grep -qx "CONFIG_$opt=m" "$dir/build/.config" || die "CONFIG_$opt is not m in the merged configuration"
done

k -j"$(nproc)" bzImage modules || die "the build failed (log: $log)"
rm -rf "$dir/modroot"
k INSTALL_MOD_PATH="$dir/modroot" INSTALL_MOD_STRIP=1 DEPMOD=/sbin/depmod modules_install ||
	die "modules_install failed (log: $log)"
cp "$dir/build/arch/x86/boot/bzImage" "$dir/vmlinuz"
cat "$dir/build/include/config/kernel.release" > "$dir/release"
: > "$dir/ok"
ln -sfn "$dir" "$root/current"
echo "debug-kernel: $(cat "$dir/release") built in $(( $(date +%s) - start )) s" >&2
echo "$dir"
