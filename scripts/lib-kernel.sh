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
# guest test (not tests/guest/lib.sh); on which kernels and transports
# each runs, its "# lanes:" line says (scripts/lib-lanes.sh)
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
