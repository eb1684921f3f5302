#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check-debug.sh (make check-debug): the in-guest tests on the debug
# kernel (make debug-kernel: KASAN, lockdep, DEBUG_OBJECTS, kmemleak,
# DEBUG_LIST, DEBUG_SG): every guest test over soft-RoCE, then those whose
# "# lanes:" line has siw lanes (the transport's: knet, block, mxbd,
# orfs) over soft-iWARP. Any KASAN,
# lockdep, DEBUG_OBJECTS or kmemleak report fails the script that ran
# (tests/harness/lib-results.sh). Ends with "N passed, N failed" as make check.
#
# CHECK_TESTS="tests/guest/x.sh ..." narrows it to those scripts, and
# CHECK_RDMA=rxe or CHECK_RDMA=siw to one transport; VM_TIMEOUT_SCALE
# (default 4) stretches every script's time limit, as the debug kernel is
# slower.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=scripts/lib-kernel.sh
. scripts/lib-kernel.sh
# shellcheck source=scripts/lib-lanes.sh
. scripts/lib-lanes.sh
# shellcheck source=tests/harness/lib-results.sh
. tests/harness/lib-results.sh

pass=0 fail=0 skip=0
log=build/check-debug
mkdir -p "$log"

dir=$(scripts/debug-kernel.sh) || { echo "FAIL debug kernel: not built"; echo; echo "0 passed, 1 failed"; exit 1; }
kver=$(cat "$dir/release")
echo "== debug kernel $kver ($dir)"
if ! make --no-print-directory -j"$(nproc)" modules KDIR="$dir/build" STRICT=1 > "$log/build.log" 2>&1 ||
   ! make --no-print-directory -j"$(nproc)" userspace >> "$log/build.log" 2>&1; then
	tail -n 30 "$log/build.log"
	echo "FAIL build for $kver (log: $log/build.log)"
	echo; echo "0 passed, 1 failed"
	exit 1
fi
echo "PASS build modules $kver (W=1, -Werror)"
pass=1

# The packages' DKMS builds for Debian's kernels (packages.sh loads those
# modules); the debug kernel is ours, so that test has none to load here.
mapfile -t tests < <(guest_tests | grep -vx tests/guest/packages.sh)
case ${CHECK_RDMA:-both} in
rxe | siw | both) ;;
*) echo "CHECK_RDMA must be rxe or siw, not '$CHECK_RDMA'" >&2; exit 2 ;;
esac
iwarp=()
for t in "${tests[@]}"; do
	! lanes_of "$t" all | grep -q ' siw$' || iwarp+=("$t")
done

export VM_TIMEOUT_SCALE=${VM_TIMEOUT_SCALE:-4}
[ "${CHECK_RDMA:-both}" = siw ] || guest_run debug "$kver" rxe "${tests[@]}"
[ "${CHECK_RDMA:-both}" = rxe ] || guest_run debug "$kver" siw "${iwarp[@]}"

line="$pass passed, $fail failed"
[ "$skip" -gt 0 ] && line+=", $skip skipped"
echo
echo "$line"
[ "$fail" -eq 0 ]
