#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check.sh (make check): everything that decides whether a change may
# land, in this order:
#   1. build: modules for every installed kernel with W=1 -Werror, userspace
#   2. unit tests (CUnit), again under ASan and UBSan, the harness's own
#      tests of its verdicts, a bounded fuzzing run
#   3. static checks: checkpatch, kernel-doc, shellcheck, man, sparse on 6.1
#      and 6.12
#   4. the Debian packages installed in a scratch root (scripts/pkg-test.sh)
#   5. the harness end to end, its cleanup and freeze watchdog (two short boots of the
#      newest kernel), then in-guest tests on 6.1, then on 6.12
#      (tests/guest/*.sh, and on the newest kernel, the one `make demo`
#      boots, the demo tests/demo/demo.sh)
#      over soft-RoCE (rxe); the tests that load none of our modules
#      (USERSPACE_TESTS) and those of the server's conduct (NEWEST_TESTS),
#      on the newest kernel alone; on 6.12 the tests of the transport (knet,
#      block, mxbd, orfs) run over soft-iWARP (siw) instead, so that the
#      RDMA code meets both protocols in one run and the whole stays under
#      45 minutes in CI (make check-iwarp runs them over siw on every
#      kernel)
#   6. the packages purged, leaving nothing
# and a closing line "N passed, N failed" (", N skipped" when any skipped,
# each with its reason above). Exits non-zero on any failure.
#
# CHECK_QUICK=1 (make check-quick) stops after 3 and skips the fuzzing:
# every check that needs no guest, in a few minutes.
# CHECK_ALL=1 (make check-all) runs every guest test on every kernel.
# CHECK_KERNELS="6.1 6.12" and CHECK_TESTS="tests/guest/x.sh ..." narrow it;
# CHECK_IWARP_KERNELS names the kernels whose transport tests run over siw
# (default 6.12; empty: none, "6.1 6.12": both).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=scripts/lib-kernel.sh
. scripts/lib-kernel.sh

pass=0 fail=0 skip=0
log=build/check
# Builds use every CPU (kbuild and our Makefile are -j safe).
jobs=-j$(nproc)
mkdir -p "$log"

ok() { echo "PASS $*"; pass=$((pass + 1)); }
ko() { echo "FAIL $*"; fail=$((fail + 1)); }

# run_item NAME LOGFILE CMD...: one check, its output kept in LOGFILE
run_item() {
	local name=$1 out=$2
	shift 2
	if "$@" > "$out" 2>&1; then
		ok "$name"
	else
		ko "$name (log: $out)"
		tail -n 30 "$out" | sed 's/^/    | /'
	fi
}

finish() {
	local line="$pass passed, $fail failed"
	[ "$skip" -gt 0 ] && line+=", $skip skipped"
	echo
	echo "$line"
	[ "$fail" -eq 0 ]
	exit $?
}

kernels=()
for k in ${CHECK_KERNELS:-6.1 6.12}; do
	if v=$(resolve_kernel "$k"); then
		kernels+=("$v")
	else
		ko "kernel $k: not installed (run 'make deps')"
	fi
done

echo "== build"
build_ok=1
for v in "${kernels[@]}"; do
	run_item "build modules $v (W=1, -Werror)" "$log/build-$v.log" \
		make --no-print-directory "$jobs" modules KVER="$v" STRICT=1 || true
	[ -f "build/kmod/$v/knet/knet.ko" ] || build_ok=0
done
run_item "build userspace (-Wall -Wextra -Werror)" "$log/build-user.log" \
	make --no-print-directory "$jobs" userspace
[ -x build/bin/unit-tests ] || build_ok=0

echo "== unit tests"
if [ -x build/bin/unit-tests ]; then
	build/bin/unit-tests > "$log/unit.log" 2>&1
	urc=$?
	sed -n 's/^  Test: //p' "$log/unit.log" | sed 's/^/    /'
	summary=$(grep -E '^unit: [0-9]+ passed, [0-9]+ failed$' "$log/unit.log" | tail -n 1)
	if [ -z "$summary" ]; then
		ko "unit tests: no summary (exit $urc, log: $log/unit.log)"
	else
		up=$(echo "$summary" | awk '{print $2}')
		uf=$(echo "$summary" | awk '{print $4}')
		pass=$((pass + up))
		fail=$((fail + uf))
		echo "unit tests: $up passed, $uf failed"
		if [ "$uf" -ne 0 ] || [ "$urc" -ne 0 ]; then
			grep -A4 'FAILED' "$log/unit.log" | sed 's/^/    | /'
			[ "$uf" -eq 0 ] && ko "unit tests: exit $urc"
		fi
	fi
fi
run_item "unit tests under ASan and UBSan" "$log/unit-asan.log" \
	bash -c 'make --no-print-directory build/bin/unit-tests-asan && build/bin/unit-tests-asan'
run_item "harness self-test" "$log/harness.log" tests/harness/test-verdicts.sh
# Crashes, sanitizer reports and broken invariants stop the fuzzer non-zero.
[ "${CHECK_QUICK:-0}" = 1 ] ||
	run_item "fuzz server decoding for ${FUZZ_SECONDS:-30} s (libFuzzer, ASan, UBSan)" \
		"$log/fuzz.log" make --no-print-directory fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-30}"

echo "== static checks"
run_item "checkpatch, kernel-doc, shellcheck, man" "$log/lint.log" scripts/lint.sh
for v in "${kernels[@]}"; do
	# C=2 runs sparse on every file even when its object is up to date.
	if make --no-print-directory "$jobs" modules KVER="$v" C=2 > "$log/sparse-$v.log" 2>&1 &&
	   ! grep -E '(warning|error):' "$log/sparse-$v.log" > "$log/sparse-$v.bad"; then
		ok "sparse $v"
	else
		ko "sparse $v (log: $log/sparse-$v.log)"
		head -n 20 "$log/sparse-$v.bad" | sed 's/^/    | /'
	fi
done

# make check-quick: what needs no guest, in a few minutes.
[ "${CHECK_QUICK:-0}" = 1 ] && finish
if [ "$build_ok" -ne 1 ]; then
	ko "in-guest tests: not run, the build failed"
	finish
fi

# The demo runs too (unless CHECK_TESTS names the scripts), so that what
# `make demo` shows cannot go stale.
mapfile -t tests < <(guest_tests)

# The Debian packages installed in a scratch root, DKMS building the
# modules for every kernel, for tests/guest/packages.sh; purged at the end.
packages=0
if [[ " ${tests[*]} " == *" tests/guest/packages.sh "* ]]; then
	run_item "the Debian packages install, DKMS builds for every kernel" "$log/pkg-install.log" \
		scripts/pkg-test.sh install && packages=1
fi
# It shows what the tests check; one kernel, the one it boots, is enough.
demo_kernel=
[ -n "${CHECK_TESTS:-}" ] || demo_kernel=$(resolve_kernel "") || demo_kernel=
read -r -a iwarp_tests <<< "$IWARP_TESTS"
# The tests that load none of our modules, and those of the server's
# conduct, run on the newest kernel alone (but with CHECK_ALL or CHECK_TESTS).
one_kernel=()
[ -n "${CHECK_TESTS:-}" ] || [ "${CHECK_ALL:-0}" = 1 ] ||
	read -r -a one_kernel <<< "$USERSPACE_TESTS $NEWEST_TESTS"
newest=$(printf '%s\n' "${kernels[@]}" | sort -V | tail -n 1)
iwarp_kernels=()
for k in ${CHECK_IWARP_KERNELS-6.12}; do
	v=$(resolve_kernel "$k") && iwarp_kernels+=("$v")
done

# shellcheck source=tests/harness/lib-results.sh
. tests/harness/lib-results.sh

# The harness end to end: its cleanup between scripts, its freeze watchdog (two short boots).
[ -n "${CHECK_TESTS:-}" ] ||
	run_item "harness: what a script leaves is cleared; a frozen guest is stopped" \
		"$log/harness-freeze.log" tests/harness/test-freeze.sh "$newest"

for v in "${kernels[@]}"; do
	on_siw=()
	if [[ " ${iwarp_kernels[*]} " == *" $v "* ]]; then
		# A siw.ko for the kernel, from its linux-source package.
		if ! scripts/build-siw.sh "$v" > "$log/siw-$v.log" 2>&1; then
			ko "build siw for $v (log: $log/siw-$v.log)"
			continue
		fi
		for t in "${tests[@]}"; do
			[[ " ${iwarp_tests[*]} " == *" $t "* ]] && on_siw+=("$t")
		done
	fi
	on_rxe=()
	for t in "${tests[@]}"; do
		[[ " ${on_siw[*]} " == *" $t "* ]] && continue
		[ "$v" != "$newest" ] && [[ " ${one_kernel[*]} " == *" $t "* ]] && continue
		on_rxe+=("$t")
	done
	[ "$v" != "$demo_kernel" ] || on_rxe+=(tests/demo/demo.sh)
	guest_run "$v" "$v" rxe "${on_rxe[@]}"
	guest_run "$v" "$v" siw "${on_siw[@]}"
done
[ "$packages" = 0 ] || run_item "the Debian packages purge and leave nothing" \
	"$log/pkg-purge.log" scripts/pkg-test.sh purge
finish
