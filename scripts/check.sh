#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check.sh (make check): everything that decides whether a change may
# land, in this order:
#   1. build: modules for every installed kernel with W=1 -Werror and sparse
#      (its warnings errors), one build each; userspace
#   2. unit tests (CUnit), again under ASan and UBSan, the harness's own
#      tests of its verdicts, a bounded fuzzing run
#   3. static checks: checkpatch, kernel-doc, shellcheck, man, the test
#      matrix's rules (make lint)
#   4. the Debian packages installed in a scratch root (scripts/pkg-test.sh)
#   5. the harness end to end, its cleanup and freeze watchdog (two short
#      boots of the newest kernel), then the in-guest tests: each
#      tests/guest/*.sh on the kernels and transports its "# lanes:" line
#      gives for make check (scripts/lib-lanes.sh), one boot for each kernel
#      and RDMA device (rxe, whose boot runs the scripts of the tcp lanes
#      too, then siw); on the newest kernel the demo, tests/demo/demo.sh
#   6. the packages purged, leaving nothing
# and a table of every step's wall time, longest first (also in
# build/check/times.tsv), the line "check: N s (budget 1500 s)" (over the
# budget is said, never failed: hosts differ), and a closing line
# "N passed, N failed" (", N skipped" when any skipped, each with its
# reason above). Exits non-zero on any failure.
#
# CHECK_QUICK=1 (make check-quick) stops after 3 and skips the fuzzing:
# every check that needs no guest, in a minute.
# CHECK_ALL=1 (make check-all) runs the lanes' all= lists: every script on
# every kernel and transport it can use.
# CHECK_KERNELS="6.1 6.12", CHECK_TRANSPORTS="rxe siw tcp" and
# CHECK_TESTS="tests/guest/x.sh ..." narrow the lanes (make check-tcp and
# make check-iwarp are CHECK_ALL=1 narrowed to one transport).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=scripts/lib-kernel.sh
. scripts/lib-kernel.sh
# shellcheck source=scripts/lib-lanes.sh
. scripts/lib-lanes.sh

pass=0 fail=0 skip=0
log=build/check
# Builds use every CPU (kbuild and our Makefile are -j safe).
jobs=-j$(nproc)
mkdir -p "$log"
budget=1500
t_start=$(date +%s%N)
: > "$log/times.tsv.new"

ok() { echo "PASS $*"; pass=$((pass + 1)); }
ko() { echo "FAIL $*"; fail=$((fail + 1)); }

# timed MS WHAT: one line of the times table
timed() { printf '%d.%d\t%s\n' $(($1 / 1000)) $(($1 % 1000 / 100)) "$2" >> "$log/times.tsv.new"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# run_item NAME LOGFILE CMD...: one check, its output kept in LOGFILE
run_item() {
	local name=$1 out=$2 t0 rc=0
	shift 2
	t0=$(now_ms)
	"$@" > "$out" 2>&1 || rc=$?
	timed $(($(now_ms) - t0)) "$name"
	if [ "$rc" -eq 0 ]; then
		ok "$name"
	else
		ko "$name (log: $out)"
		tail -n 30 "$out" | sed 's/^/    | /'
	fi
	return "$rc"
}

finish() {
	local line="$pass passed, $fail failed" total
	[ "$skip" -gt 0 ] && line+=", $skip skipped"
	total=$((($(date +%s%N) - t_start) / 1000000000))
	sort -t "$(printf '\t')" -k1,1 -g -r "$log/times.tsv.new" > "$log/times.tsv"
	rm -f "$log/times.tsv.new"
	echo
	echo "== times (s, longest first; $log/times.tsv)"
	sed 's/^/    /' "$log/times.tsv"
	if [ "${CHECK_QUICK:-0}" = 1 ] || [ "${CHECK_ALL:-0}" = 1 ] || [ -n "${CHECK_TESTS:-}${CHECK_KERNELS:-}${CHECK_TRANSPORTS:-}" ]; then
		echo "check: $total s"
	elif [ "$total" -le "$budget" ]; then
		echo "check: $total s (budget $budget s)"
	else
		echo "check: $total s (budget $budget s): over the budget by $((total - budget)) s"
	fi
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
	run_item "build modules $v (W=1, -Werror, sparse)" "$log/build-$v.log" \
		make --no-print-directory "$jobs" modules KVER="$v" STRICT=1 || true
	[ -f "build/kmod/$v/knet/knet.ko" ] || build_ok=0
done
run_item "build userspace (-Wall -Wextra -Werror)" "$log/build-user.log" \
	make --no-print-directory "$jobs" userspace || true
[ -x build/bin/unit-tests ] || build_ok=0

echo "== unit tests"
if [ -x build/bin/unit-tests ]; then
	t0=$(now_ms)
	build/bin/unit-tests > "$log/unit.log" 2>&1
	urc=$?
	timed $(($(now_ms) - t0)) "unit tests"
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
	bash -c 'make --no-print-directory build/bin/unit-tests-asan && build/bin/unit-tests-asan' || true
# Crashes, sanitizer reports and broken invariants stop the fuzzer non-zero.
# It runs on one CPU while the harness's self-test and the static checks
# (one CPU each, mostly) run beside it.
fuzz_name="fuzz server decoding for ${FUZZ_SECONDS:-30} s (libFuzzer, ASan, UBSan)"
fuzz_pid=
if [ "${CHECK_QUICK:-0}" != 1 ]; then
	run_item "$fuzz_name" "$log/fuzz.log" \
		make --no-print-directory fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-30}" > "$log/fuzz.verdict" &
	fuzz_pid=$!
fi
run_item "harness self-test" "$log/harness.log" tests/harness/test-verdicts.sh || true

echo "== static checks"
run_item "checkpatch, kernel-doc, shellcheck, man, the test matrix" "$log/lint.log" scripts/lint.sh || true
if [ -n "$fuzz_pid" ]; then
	wait "$fuzz_pid"
	cat "$log/fuzz.verdict"
	grep -q "^PASS $fuzz_name" "$log/fuzz.verdict" && pass=$((pass + 1)) || fail=$((fail + 1))
fi

# make check-quick: what needs no guest, in a minute.
[ "${CHECK_QUICK:-0}" = 1 ] && finish
if [ "$build_ok" -ne 1 ]; then
	ko "in-guest tests: not run, the build failed"
	finish
fi

mapfile -t tests < <(guest_tests)

# The boots: one for each kernel and RDMA device, each script in those its
# lanes name (the tcp lane in the rxe boot, over knet's TCP transport).
kind=check
[ "${CHECK_ALL:-0}" = 1 ] && kind=all
declare -A boot=()
for t in "${tests[@]}"; do
	if ! lanes=$(lanes_of "$t" "$kind" 2>&1); then
		ko "lanes of $t: $lanes"
		continue
	fi
	while read -r k tr; do
		[ -z "${CHECK_TRANSPORTS:-}" ] || [[ " $CHECK_TRANSPORTS " == *" $tr "* ]] || continue
		v=$(resolve_kernel "$k") && [[ " ${kernels[*]} " == *" $v "* ]] || continue
		case $tr in
		siw) boot["$v siw"]+=" $t" ;;
		tcp) boot["$v rxe"]+=" $t@tcp" ;;
		*) boot["$v rxe"]+=" $t" ;;
		esac
	done <<< "$lanes"
done
newest=$(printf '%s\n' "${kernels[@]}" | sort -V | tail -n 1)
# It shows what the tests check; one kernel, the one it boots, is enough.
[ -n "${CHECK_TESTS:-}" ] || [[ " ${CHECK_TRANSPORTS:-rxe} " != *" rxe "* ]] ||
	[ "$(resolve_kernel "")" != "$newest" ] || boot["$newest rxe"]+=" tests/demo/demo.sh"

# shellcheck source=tests/harness/lib-results.sh
. tests/harness/lib-results.sh

# The Debian packages installed in a scratch root, DKMS building the
# modules for every kernel, when a boot runs tests/guest/packages.sh;
# purged at the end.
packages=0
if [[ "${boot[*]} " == *" tests/guest/packages.sh "* ]]; then
	run_item "the Debian packages install, DKMS builds for every kernel" "$log/pkg-install.log" \
		scripts/pkg-test.sh install && packages=1
fi

# The harness end to end: its cleanup between scripts, its freeze watchdog (two short boots).
[ -n "${CHECK_TESTS:-}${CHECK_TRANSPORTS:-}" ] ||
	run_item "harness: what a script leaves is cleared; a frozen guest is stopped" \
		"$log/harness-freeze.log" tests/harness/test-freeze.sh "$newest" || true

for v in "${kernels[@]}"; do
	for dev in rxe siw; do
		[ -n "${boot["$v $dev"]:-}" ] || continue
		if [ "$dev" = siw ] && ! scripts/build-siw.sh "$v" > "$log/siw-$v.log" 2>&1; then
			# A siw.ko for the kernel, from its linux-source package.
			ko "build siw for $v (log: $log/siw-$v.log)"
			continue
		fi
		read -r -a planned <<< "${boot["$v $dev"]}"
		t0=$(now_ms)
		guest_run "$v" "$v" "$dev" "${planned[@]}"
		boot_ms=$(($(now_ms) - t0))
		res=build/vm/$v/results-$dev
		while read -r _ _ name _; do
			ms=$(cat "$res/$name.ms" 2>/dev/null) || continue
			timed "$ms" "guest $v/$dev: $name"
			boot_ms=$((boot_ms - ms))
		done < "$res/plan"
		timed "$boot_ms" "guest $v/$dev: boots, set-up, verdicts"
	done
done
[ "$packages" = 0 ] || run_item "the Debian packages purge and leave nothing" \
	"$log/pkg-purge.log" scripts/pkg-test.sh purge || true
finish
