#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Tests of the harness's verdicts (tests/harness/lib-results.sh) on made-up guest
# results: a test harness that cannot fail a test is worse than none.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/harness/lib-results.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0

# case NAME RC DMESG [CONSOLE] [QRC]: one script's made-up result
mkcase() {
	local dir=$tmp/$1
	mkdir -p "$dir"
	echo "60 /x/$1.sh" > "$dir/plan"
	[ "$2" = none ] || echo "$2" > "$dir/$1.rc"
	echo 10 > "$dir/$1.ms"
	printf '%s\n' "$3" > "$dir/$1.dmesg"
	printf 'some output\nSKIP: no widget here\n' > "$dir/$1.log"
	printf '%s\n' "${4:-booting}" > "$dir/console.log"
	: > "$dir/boot.dmesg"
	verdicts "$dir" k "${5:-0}" > "$dir/out"
}

# expect NAME PATTERN SUMMARY: the verdict output and counts
expect() {
	n=$((n + 1))
	grep -qE "$2" "$tmp/$1/out" || { cat "$tmp/$1/out"; echo "not ok $n: $1: no '$2'"; exit 1; }
	[ "$(cat "$tmp/$1/summary")" = "$3" ] || { echo "not ok $n: $1: summary $(cat "$tmp/$1/summary"), want $3"; exit 1; }
	echo "ok $n: $1"
}

mkcase clean 0 "[1.0] knet: loaded"
expect clean '^PASS k clean' "1 0 0"
mkcase failed 1 ""
expect failed '^FAIL k failed: exit code 1' "0 1 0"
mkcase timeout 124 ""
expect timeout '^FAIL k timeout: timed out' "0 1 0"
# The failed step is named, the steps before it counted on a pass.
mkcase stepped 1 ""
printf 'ok 1 - first (0 s)\nnot ok 2 - second (3 s)\n1..2\n' > "$tmp/stepped/stepped.log"
verdicts "$tmp/stepped" k 0 > "$tmp/stepped/out"
expect stepped '^FAIL k stepped: exit code 1 \(not ok 2 - second \(3 s\)\)' "0 1 0"
mkcase twosteps 0 ""
printf 'ok 1 - first (0 s)\nok 2 - second (3 s)\n1..2\n' > "$tmp/twosteps/twosteps.log"
verdicts "$tmp/twosteps" k 0 > "$tmp/twosteps/out"
expect twosteps '^PASS k twosteps \(2 steps, 10 ms\)' "1 0 0"
# A plan line may name the result and the transport (vm's SCRIPT@tcp).
mkcase named 0 ""
echo "60 /x/named.sh named@tcp tcp" > "$tmp/named/plan"
echo 0 > "$tmp/named/named@tcp.rc"
: > "$tmp/named/named@tcp.dmesg"
verdicts "$tmp/named" k 0 > "$tmp/named/out"
expect named '^PASS k named@tcp' "1 0 0"
mkcase skipped 77 ""
expect skipped '^SKIP k skipped: no widget here' "0 0 1"
mkcase hung none "" "booting" 137
expect hung '^FAIL k hung: guest hung' "0 1 0"
mkcase died none "" "booting" 1
expect died '^FAIL k died: guest stopped' "0 1 0"
for line in "WARNING: CPU: 1 PID: 9 at mm/x.c:1 f+0x1" "BUG: kernel NULL pointer dereference" \
	"Oops: 0000 [#1] PREEMPT SMP" "list_del corruption. prev->next should be" \
	"WARNING: possible circular locking dependency detected" \
	"INFO: task insmod:149 blocked for more than 30 seconds." \
	"watchdog: BUG: soft lockup - CPU#0 stuck for 22s!" "refcount_t: underflow; use-after-free." \
	"BUG kmalloc-64 (Not tainted): Redzone overwritten" \
	"BUG knet_req (Tainted: G           O      ): Poison overwritten" \
	"BUG: KFENCE: use-after-free read in knet_ep_fail+0x1c/0x200" \
	"BUG: KASAN: slab-use-after-free in knet_ep_fail+0x1c/0x200 [knet]" \
	"INFO: lockdep is turned off." \
	"kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)" \
	"ODEBUG: free active (active state 0) object: 000000 object type: work_struct"; do
	mkcase badlog 0 "[2.0] $line"
	expect badlog '^FAIL k badlog: kernel log has bad lines' "0 1 0"
done
# The debug kernel says at boot that it checks, which is no report.
mkcase debugboot 0 "[8.3] rcu: 	RCU lockdep checking is enabled."
expect debugboot '^PASS k debugboot' "1 0 0"
mkcase console 0 "" "[9.0] BUG: soft lockup - CPU#1 stuck"
expect console '^FAIL k kernel-log' "1 1 0"
mkcase skipbad 77 "[2.0] WARNING: CPU: 0 PID: 1 at x"
expect skipbad '^FAIL k skipbad' "0 1 0"
# A guest that froze (tests/harness/vm's freeze): the script it ran fails
# with the mark's reason, whatever else is there; the bad lines of the
# frozen boot's console count as the last boot's do.
dir=$tmp/frozen
mkdir -p "$dir"
printf '60 /x/frozen.sh\n60 /x/after.sh\n' > "$dir/plan"
echo "the guest froze while it ran (no heartbeat for 181s)" > "$dir/frozen.frozen"
printf 'step 2\n' > "$dir/frozen.log"
echo 0 > "$dir/after.rc"
echo 10 > "$dir/after.ms"
: > "$dir/after.dmesg"
echo booting > "$dir/console.log"
echo "[9.0] INFO: task dd:99 blocked for more than 30 seconds." > "$dir/console-freeze1.log"
verdicts "$dir" k 0 > "$dir/out"
expect frozen '^FAIL k frozen: the guest froze while it ran' "1 2 0"
expect frozen '^PASS k after' "1 2 0"
expect frozen '^FAIL k kernel-log' "1 2 0"
# A boot that crashed, or was stopped as late, before the guest's init:
# booted once more by tests/harness/vm; anything else is not.
early() {
	n=$((n + 1))
	local dir=$tmp/early$n want=$1 qrc=$2 console=$3 initran=$4 late=${5:-no} got=no
	mkdir -p "$dir"
	printf '%s\n' "$console" > "$dir/console.log"
	[ "$initran" = no ] || : > "$dir/boot.dmesg"
	[ "$late" = no ] || : > "$dir/init-late"
	boot_failed_early "$dir" "$qrc" && got=yes
	[ "$got" = "$want" ] || { echo "not ok $n: retry $got for '$console' (qrc $qrc, init $initran)"; exit 1; }
	echo "ok $n: boot retry $want: $console, qrc $qrc, init ran $initran"
}
early yes 0 "[1.9] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI" no
early yes 0 "[1.9] Kernel panic - not syncing: Fatal exception" no
early no 0 "[1.9] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI" yes
early no 137 "[1.9] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI" no
early no 0 "[1.9] booting quietly" no
early yes 137 "[23.2] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:" no late
early no 137 "[23.2] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:" no
echo "harness: $n checks passed"
