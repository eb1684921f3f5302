#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check-tcp.sh (make check-tcp): the transport's in-guest tests
# (knet, block, mxbd, mxbd-recovery, orfs; IWARP_TESTS and TCP_TESTS in
# scripts/lib-kernel.sh) over knet's TCP transport, on every installed
# kernel (CHECK_KERNELS="6.1 6.12" narrows it, CHECK_TESTS names the
# scripts). The servers listen on TCP beside RDMA, the modules default to
# TCP (tests/guest/lib.sh); a test that needs RDMA itself says so and is
# not in the list. Ends with "N passed, N failed" as make check. make
# check runs tests/guest/tcp.sh on both kernels; this lane is the whole
# transport suite again, too long for make check's 45 minutes.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=scripts/lib-kernel.sh
. scripts/lib-kernel.sh
# shellcheck source=tests/harness/lib-results.sh
. tests/harness/lib-results.sh

pass=0 fail=0 skip=0
log=build/check-tcp
mkdir -p "$log"
if ! make --no-print-directory -j"$(nproc)" modules-all STRICT=1 > "$log/build.log" 2>&1 ||
   ! make --no-print-directory -j"$(nproc)" userspace >> "$log/build.log" 2>&1; then
	tail -n 30 "$log/build.log"
	echo "FAIL build (log: $log/build.log)"
	echo; echo "0 passed, 1 failed"
	exit 1
fi
read -r -a tests <<< "${CHECK_TESTS:-$TCP_TESTS}"
kernels=()
for k in ${CHECK_KERNELS:-6.1 6.12}; do
	v=$(resolve_kernel "$k") && kernels+=("$v")
done
export GUEST_TRANSPORT=tcp
for v in "${kernels[@]}"; do
	guest_run "$v" "$v" rxe "${tests[@]}"
done
echo
echo "$pass passed, $fail failed${skip:+, $skip skipped}" | sed 's/, 0 skipped//'
[ "$fail" -eq 0 ]
