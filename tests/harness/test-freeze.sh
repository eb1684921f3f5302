#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# tests/harness/test-freeze.sh [KERNEL]: the harness end to end, its
# cleanup between scripts and its freeze watchdog, with a limit of 15 s.
# A guest runs tests/harness/probes/leaves.sh, which passes but leaves a
# process, a mount, a loop device, a device-mapper target and a module:
# the guest's init must clear them all and fail it, and cleaned.sh after
# it must find none. Then idle.sh,
# which waits quietly for twice that and must pass, then freeze.sh: while
# it runs, the host stops the guest's CPUs through QMP, which is what a
# frozen guest looks like from outside (QEMU idle, no heartbeat).
# tests/harness/vm must then save the CPUs' registers, fail freeze.sh as
# frozen, and run after.sh in a new boot, all well before the boot's limit.
set -euo pipefail
cd "$(dirname "$0")/../.."

res=build/vm/freeze-test
out=build/vm/freeze-test.out
rm -rf "$res"
mkdir -p build/vm
fail() { echo "not ok: $*"; [ ! -f "$out" ] || sed 's/^/    | /' "$out"; exit 1; }

VM_FREEZE_LIMIT=15 tests/harness/vm run ${1:+--kernel "$1"} --results "$res" \
	tests/harness/probes/leaves.sh tests/harness/probes/cleaned.sh \
	tests/harness/probes/idle.sh tests/harness/probes/freeze.sh tests/harness/probes/after.sh > "$out" 2>&1 &
vm=$!
for _ in $(seq 300); do
	[ -e "$res/freeze-probe.running" ] && break
	kill -0 "$vm" 2> /dev/null || break
	sleep 1
done
[ -e "$res/freeze-probe.running" ] || fail "the freeze probe never ran"
tests/harness/qmp "$(cat "$res/qmp-socket")" stop > /dev/null || fail "QMP would not stop the guest"
start=$(date +%s)
wait "$vm" || fail "tests/harness/vm exited $?"
took=$(( $(date +%s) - start ))

grep -qE '^FAIL [^ ]+ leaves' "$out" || fail "a script that left things behind passed"
for what in "process [0-9]+ \(sleep 600" "mount /tmp/leaves" "device-mapper targets" \
	"loop devices" "modules regcache"; do
	grep -qE "left behind: .*$what" "$res/leaves.log" || fail "not named as left behind: $what"
done
grep -qE '^PASS [^ ]+ cleaned' "$out" || fail "what a script left was still there after it"
echo "ok: what a script left behind was named, cleared, and failed it"
grep -qE '^PASS [^ ]+ idle' "$out" || fail "a quiet guest was not let be"
echo "ok: a guest idle for twice the limit, its heartbeat on, passed"
grep -qE '^FAIL [^ ]+ freeze: the guest froze while it ran' "$out" || fail "freeze.sh was not failed as frozen"
echo "ok: the frozen script failed as frozen, ${took}s after the guest stopped"
grep -qE '^PASS [^ ]+ after' "$out" || fail "after.sh did not pass in a new boot"
echo "ok: the script after it ran in a new boot"
grep -q 'RIP=' "$res/freeze1.txt" || fail "no registers in $res/freeze1.txt"
echo "ok: the frozen CPUs' registers were saved"
# The watchdog's limit is 15 s; the boot's limit would have been minutes.
[ "$took" -lt 120 ] || fail "the frozen guest was stopped only after ${took}s"
echo "harness: freeze watchdog checks passed"
