# SPDX-License-Identifier: GPL-2.0-only
# Helpers shared by the Makefile and tests/harness/vm to find installed kernels.
# A kernel is usable when its image and its build headers are installed.

# list_kernels: every usable kernel version, oldest first
list_kernels() {
	local d v
	for d in /lib/modules/*/build; do
		[ -e "$d/Makefile" ] || continue
		v=$(basename "$(dirname "$d")")
		[ -e "/boot/vmlinuz-$v" ] && echo "$v"
	done | sort -V
}

# resolve_kernel SPEC: the newest usable kernel whose version is SPEC or
# starts with SPEC followed by "." or "-" (so 6.1 never matches 6.12).
# An empty SPEC means the newest of all.
resolve_kernel() {
	local spec=$1 v found=""
	for v in $(list_kernels); do
		case "$v" in
		"$spec" | "$spec".* | "$spec"-*) found=$v ;;
		*) [ -z "$spec" ] && found=$v ;;
		esac
	done
	[ -n "$found" ] || return 1
	echo "$found"
}

# debug_kernel_dir: the directory of the debug kernel `make debug-kernel`
# built last (scripts/debug-kernel.sh), if there is one
debug_kernel_dir() {
	local d=${ORFS_KERNEL_CACHE:-/var/cache/orfs-kernel}/current
	[ -e "$d/ok" ] || return 1
	readlink -f "$d"
}

# guest_tests: the scripts to run, one a line: CHECK_TESTS's, or every
# guest test (not tests/guest/lib.sh)
guest_tests() {
	local t
	if [ -n "${CHECK_TESTS:-}" ]; then
		printf '%s\n' $CHECK_TESTS
		return
	fi
	for t in tests/guest/*.sh; do
		[ "$t" = tests/guest/lib.sh ] || echo "$t"
	done
}

# The guest tests of the transport, which the iWARP lanes run over siw.
# shellcheck disable=SC2034 # read by the scripts that source this
IWARP_TESTS="tests/guest/knet.sh tests/guest/block.sh tests/guest/mxbd.sh tests/guest/orfs-mount.sh tests/guest/orfs-posix.sh tests/guest/orfs-cache.sh tests/guest/orfs-io.sh tests/guest/orfs-recovery.sh tests/guest/orfs-lies.sh"
# The tests of the transport that also run over knet's TCP transport (make
# check-tcp): IWARP_TESTS, MXBD's recovery, and the authentication (the
# userspace clients go over TCP too in such a run).
# shellcheck disable=SC2034 # read by the scripts that source this
TCP_TESTS="$IWARP_TESTS tests/guest/mxbd-recovery.sh tests/guest/auth.sh"
# The guest tests that load none of our modules: the userspace server
# driven by the userspace clients over the bed's RDMA device, or TCP. What they
# test does not depend on the guest's kernel, so make check runs them on
# the newest kernel only (a run narrowed by CHECK_TESTS runs them on
# every kernel it names).
# shellcheck disable=SC2034 # read by the scripts that source this
USERSPACE_TESTS="tests/guest/files.sh tests/guest/server.sh tests/guest/server-config.sh tests/guest/tcp-conduct.sh"
# The guest tests of the server's conduct and the clients' answers to it:
# servers that lie (orfs-lies), crash (crash), restart under I/O
# (mxbd-recovery), authenticate (auth) or enforce exports and bounds
# (security), and IPv6 addresses (ipv6); and those of paths that no
# kernel builds apart: a server and its mounts on two RDMA devices
# (devices) and the control tool (mxbdctl). They load our modules, but the
# other scripts run the same kernel code on every kernel, each path built
# differently for one among it (ORFS's page cache, locks, ACLs and splice
# in orfs-*, MXBD's disk and queue limits in mxbd, regcache's shrinker,
# knet's iterators in knet and orfs-io, its TCP sends in tcp). make check
# runs these on the newest kernel only, to stay under 45 minutes in CI
# (CI's hosts differ in speed by as much as twice); make check-all
# (CHECK_ALL=1), and a run narrowed by CHECK_TESTS, on every kernel.
# shellcheck disable=SC2034 # read by the scripts that source this
NEWEST_TESTS="tests/guest/auth.sh tests/guest/crash.sh tests/guest/devices.sh tests/guest/ipv6.sh tests/guest/mxbd-recovery.sh tests/guest/mxbdctl.sh tests/guest/orfs-lies.sh tests/guest/security.sh"
