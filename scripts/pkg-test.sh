#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/pkg-test.sh install|purge: the Debian packages as an admin gets
# them, in a scratch root: this machine's root under an overlay whose
# upper layer (build/pkgroot/up) takes every change, so the host itself is
# never touched.
#
#   install  make deb; apt-get install ./*.deb in the scratch root, which
#            builds the modules through DKMS for every kernel with headers;
#            check that DKMS installed the four modules for each, and built
#            them again when a kernel is installed anew (DKMS's kernel
#            hook). tests/guest/packages.sh then boots each kernel over
#            the upper layer and uses only what the packages installed.
#   purge    apt-get purge the three packages in the same scratch root;
#            check that no file of theirs, no DKMS tree and no module is
#            left, and that nothing but the package system's own records
#            differs from the host; then remove the scratch root.
#
# Exits non-zero on the first failure, saying what.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib-kernel.sh
. scripts/lib-kernel.sh

PKGS=(orfs-dkms orfs-server orfs-client)
MODS=(regcache knet orfs mxbd)
top=$PWD/build/pkgroot
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)

die() { echo "pkg-test: $*" >&2; exit 1; }

# pkg_state PKG: its status in the scratch root (e.g. "installed",
# "config-files"), "not-installed" if dpkg does not know it
pkg_state() {
	local st
	# shellcheck disable=SC2016 # a dpkg-query format, not the shell's
	st=$(in_root dpkg-query -W -f '${Status}' "$1" 2> /dev/null) || st=""
	st=${st##* }
	echo "${st:-not-installed}"
}

# in_root CMD...: run CMD chrooted in the scratch root, mounted for it
# alone in a mount namespace of its own (gone when CMD ends). Only the
# root file system is in the overlay, with /tmp and /run of its own
# (tmpfs, as on a booted system); build/deb (wherever the project is) is
# bound at /tmp/debs.
in_root() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare -m --propagation private bash -euc '
		top=$1 debs=$2; shift 2
		mount -t overlay overlay \
			-o "lowerdir=/,upperdir=$top/up,workdir=$top/work" "$top/mnt"
		for d in proc sys dev; do mount --rbind "/$d" "$top/mnt/$d"; done
		mount -t tmpfs tmpfs "$top/mnt/tmp"
		mount -t tmpfs tmpfs "$top/mnt/run"
		if [ -d "$debs" ]; then
			mkdir "$top/mnt/tmp/debs"
			mount --bind "$debs" "$top/mnt/tmp/debs"
		fi
		exec chroot "$top/mnt" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"' in_root "$top" "$PWD/build/deb" "$@"
}

# The kernels DKMS builds for: each with its headers.
mapfile -t kvers < <(list_kernels)
[ ${#kvers[@]} -gt 0 ] || die "no kernel with headers is installed (run 'make deps')"

# check_modules KVER: DKMS installed the four modules for KVER, for it,
# and modprobe finds them there before anything else
check_modules() {
	local k=$1 m f
	for m in "${MODS[@]}"; do
		f=$(in_root modinfo -k "$k" -n "$m") || die "modprobe cannot find $m for $k"
		case $f in
		/lib/modules/"$k"/updates/dkms/"$m".ko*) ;;
		*) die "$m for $k resolves to $f, not DKMS's" ;;
		esac
		[ "$(in_root modinfo -k "$k" -F vermagic "$m" | cut -d' ' -f1)" = "$k" ] ||
			die "$m in DKMS's tree is not built for $k"
	done
	in_root dkms status -m orfs -v "$ver" -k "$k" 2> /dev/null | grep -q ': installed' ||
		die "dkms status does not list orfs/$ver as installed for $k"
}

do_install() {
	command -v unshare > /dev/null || die "unshare (util-linux) is missing"
	mkdir -p build
	make --no-print-directory deb > build/deb.log 2>&1 || { tail -n 30 build/deb.log; die "make deb failed"; }
	if [ -d "$top/mnt" ]; then umount -R "$top/mnt" 2> /dev/null || true; fi
	rm -rf "$top"
	mkdir -p "$top/up" "$top/work" "$top/mnt"
	in_root true || die "cannot mount an overlay of / on $top (overlayfs, mount namespaces)"
	for p in "${PKGS[@]}"; do
		if [ "$(pkg_state "$p")" != not-installed ]; then
			die "$p is installed on this host already: the test would not see its own install"
		fi
	done

	echo "pkg-test: apt-get install ./build/deb/*.deb in a scratch root"
	local debs=() d
	for p in "${PKGS[@]}"; do
		d=$(cd build/deb && ls "${p}"_*.deb) || die "make deb made no $p"
		debs+=("/tmp/debs/$d")
	done
	in_root apt-get install -y --no-install-recommends "${debs[@]}" \
		> "$top/install.log" 2>&1 || { tail -n 40 "$top/install.log"; die "apt-get install failed"; }
	for p in "${PKGS[@]}"; do
		[ "$(pkg_state "$p")" = installed ] || die "$p is not installed: $(pkg_state "$p")"
		in_root dpkg-query -L "$p" >> "$top/files"
	done

	for k in "${kvers[@]}"; do
		echo "pkg-test: DKMS built and installed the modules for $k"
		check_modules "$k"
	done
	# The installed commands and pages, where the packages put them.
	for f in /usr/sbin/orfs-server /sbin/mount.orfs /usr/sbin/mxbdctl /usr/bin/orfsstat; do
		in_root test -x "$f" || die "no $f"
	done
	for p in orfs-server.8 orfs-server.conf.5 orfs.5 mount.orfs.8 mxbdctl.8 orfsstat.1; do
		in_root man -w "${p%.*}" > /dev/null 2>&1 || die "man cannot find ${p%.*}"
	done
	in_root grep -q '^ExecStart=/usr/sbin/orfs-server ' /lib/systemd/system/orfs-server.service ||
		die "the installed orfs-server unit does not start /usr/sbin/orfs-server"
	in_root grep -q '^ExecStart=/usr/sbin/mxbdctl up$' /lib/systemd/system/mxbd-volumes.service ||
		die "the installed mxbd-volumes unit does not run /usr/sbin/mxbdctl"
	in_root test -f /lib/udev/rules.d/60-mxbd.rules || die "no udev rule in /lib/udev/rules.d"
	# As systemd would load them, their commands and pages there: a line it
	# ignores is a warning, with a zero exit, so any output fails.
	if ! in_root systemd-analyze verify /lib/systemd/system/orfs-server.service \
		/lib/systemd/system/mxbd-volumes.service > "$top/units.log" 2>&1 ||
	   [ -s "$top/units.log" ]; then
		cat "$top/units.log"
		die "systemd-analyze verify finds fault with the installed units"
	fi

	# A kernel installed anew: its package's hook has DKMS build for it.
	k=${kvers[0]}
	echo "pkg-test: DKMS builds again for $k when the kernel is installed anew"
	in_root dkms remove -m orfs -v "$ver" -k "$k" > /dev/null ||
		die "cannot remove orfs/$ver's build for $k"
	if in_root modinfo -k "$k" -n orfs > /dev/null 2>&1; then
		die "orfs for $k is still there after dkms removed it"
	fi
	in_root /etc/kernel/postinst.d/dkms "$k" > "$top/kernel-hook.log" 2>&1 ||
		{ tail -n 20 "$top/kernel-hook.log"; die "the kernel hook failed"; }
	check_modules "$k"
	echo "pkg-test: installed; the guests use $top/up"
}

do_purge() {
	[ -d "$top/up" ] || die "nothing installed in $top (run '$0 install' first)"
	echo "pkg-test: apt-get purge ${PKGS[*]}"
	in_root apt-get purge -y "${PKGS[@]}" > "$top/purge.log" 2>&1 ||
		{ tail -n 40 "$top/purge.log"; die "apt-get purge failed"; }
	local p k f left
	for p in "${PKGS[@]}"; do
		[ "$(pkg_state "$p")" = not-installed ] ||
			die "$p is $(pkg_state "$p") after the purge"
	done
	# No file of theirs (directories others share may stay).
	# shellcheck disable=SC2016 # expanded by the inner shell
	left=$(in_root bash -c 'while read -r f; do
		[ -z "$f" ] || [ -d "$f" ] || [ ! -e "$f" ] || echo "$f"; done' < "$top/files")
	[ -z "$left" ] || die "files of the packages left after the purge: $left"
	in_root test ! -e "/usr/src/orfs-$ver" || die "/usr/src/orfs-$ver is left"
	in_root test ! -e /var/lib/dkms/orfs || die "DKMS still has a tree for orfs"
	in_root test ! -e /etc/orfs || die "/etc/orfs is left"
	in_root test ! -e /etc/mxbd || die "/etc/mxbd is left"
	for k in "${kvers[@]}"; do
		for m in "${MODS[@]}"; do
			if in_root modinfo -k "$k" -n "$m" > /dev/null 2>&1; then
				die "modprobe still finds $m for $k"
			fi
		done
	done
	# Nothing else differs from the host but the package system's records
	# and the module indexes, which are the host's again; and no directory
	# the host did not have is left.
	left=$({
		find "$top/up" ! -type d -printf '/%P\n' | grep -vE \
			'^/var/(lib/(dpkg|apt|systemd/deb-systemd-helper-[a-z]+)|cache|log)/|^/var/lib/dkms/mok\.(key|pub)$|^/usr/lib/modules/[^/]+/modules\.[a-z.]+$|^/etc/ld\.so\.cache$'
		find "$top/up" -mindepth 1 -type d -printf '/%P\n' | while read -r f; do
			[ -d "$f" ] || echo "$f/"
		done
	} | tr '\n' ' ')
	[ -z "$left" ] || die "left in the scratch root after the purge: $left"
	for k in "${kvers[@]}"; do
		f=/usr/lib/modules/$k/modules.dep
		[ ! -e "$top/up$f" ] || cmp -s "$top/up$f" "$f" ||
			die "$f differs from the host's: $(diff "$f" "$top/up$f" | head -n 5)"
	done
	rm -rf "$top"
	echo "pkg-test: purged; nothing of the packages is left"
}

case ${1:-} in
install) do_install ;;
purge) do_purge ;;
*) echo "usage: $0 install|purge" >&2; exit 2 ;;
esac
